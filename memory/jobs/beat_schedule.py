"""The periodic jobs of the memory app, kept as django-celery-beat rows (CELERY_BEAT_SCHEDULER is
the database scheduler, so operators can see and pause them in the admin)."""
from dataclasses import dataclass

from django.db import transaction

__all__ = ["BEAT_JOBS", "beat_jobs", "ensure_beat_schedule"]


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


LLM_REVIEW_JOB_NAME = "memory: LLM review of conflicts and the gate's uncertain band"


def _llm_review_job() -> BeatJob | None:
    """Only with an LLM configured (D28): without one, no row exists and beat queues nothing. (The
    test of memory.enqueue.llm_review_configured, which this bottom layer may not import.)"""
    from django.conf import settings

    if not (settings.LLM_BASE_URL and settings.LLM_REVIEW_ENABLED):
        return None
    return BeatJob(LLM_REVIEW_JOB_NAME, "memory.tasks.llm_review_task", max(1, int(settings.LLM_REVIEW_EVERY_MINUTES)))


def beat_jobs() -> tuple[BeatJob, ...]:
    """BEAT_JOBS plus the jobs the settings ask for."""
    review = _llm_review_job()
    return BEAT_JOBS + ((review,) if review else ())


def ensure_beat_schedule() -> list[str]:
    """Create or update the rows; safe to call on every deploy. An operator's ``enabled`` choice
    survives an update; task, interval and expiry are reset to the values above."""
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    names = []
    jobs = beat_jobs()
    with transaction.atomic():
        if LLM_REVIEW_JOB_NAME not in {job.name for job in jobs}:
            PeriodicTask.objects.filter(name=LLM_REVIEW_JOB_NAME).delete()  # the LLM was unconfigured
        for job in jobs:
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
