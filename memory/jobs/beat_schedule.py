"""The periodic jobs of the memory app, kept as django-celery-beat rows (CELERY_BEAT_SCHEDULER is
the database scheduler, so operators can see and pause them in the admin)."""
from dataclasses import dataclass

from django.db import transaction

__all__ = ["BEAT_JOBS", "ensure_beat_schedule"]


@dataclass(frozen=True)
class BeatJob:
    name: str
    task: str
    every_minutes: int


BEAT_JOBS: tuple[BeatJob, ...] = (
    BeatJob("memory: reconcile projections", "memory.tasks.projections_reconcile_task", 5),
    BeatJob("memory: resume extraction and forget requests", "memory.tasks.extraction_resume_task", 2),
    BeatJob("memory: expire dated and task-scoped memories", "memory.tasks.memories_expire_task", 10),
    BeatJob("memory: evict above per-user capacity", "memory.tasks.memories_evict_task", 60),
    # The console dashboard's time series; the task is named, not imported (console is above memory).
    BeatJob("console: sample metrics for the dashboard", "console.tasks.metrics_sample_task", 1),
    BeatJob("tenancy: purge expired idempotency keys", "tenancy.tasks.idempotency_records_purge_task", 60),
)


def ensure_beat_schedule() -> list[str]:
    """Create or update the rows; safe to call on every deploy. An operator's ``enabled`` choice
    survives an update; task, interval and expiry are reset to the values above."""
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    names = []
    with transaction.atomic():
        for job in BEAT_JOBS:
            interval = IntervalSchedule.objects.filter(every=job.every_minutes, period=IntervalSchedule.MINUTES).first()
            if interval is None:
                interval = IntervalSchedule.objects.create(every=job.every_minutes, period=IntervalSchedule.MINUTES)
            # A run still queued when the next one is due is dropped: the next run does the same work.
            PeriodicTask.objects.update_or_create(
                name=job.name,
                defaults={"task": job.task, "interval": interval, "expire_seconds": job.every_minutes * 60},
                create_defaults={"task": job.task, "interval": interval, "expire_seconds": job.every_minutes * 60,
                                 "enabled": True},
            )
            names.append(job.name)
    return names
