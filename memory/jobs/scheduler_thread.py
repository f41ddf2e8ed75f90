"""The maintenance scheduler that runs inside the web process (docs/architecture.md, What runs where).

The embedded default (`make run`) has no beat and no worker: without this thread nothing would ever
resume a lost extraction, expire task memories, evict above capacity, reconcile projections or
re-embed after a model change. With a broker, beat runs those jobs, but recovery of pending
extraction and projections must not depend on beat (nor wait 10 minutes): the thread then runs the
extraction and projection sweeps only (``MAINTENANCE_SCHEDULER``: all | sweep | off).

Exactly one process per node runs it: the thread starts only in the process that takes an exclusive
lock on ``VAR_DIR/maintenance-scheduler.lock`` (the shard-owning web process; a second gunicorn, a
management command or a test run beside it does not). Jobs run one after another on this thread,
each on its own database connection, and record their last run (memory/jobs/run_records.py).
"""
from __future__ import annotations

import atexit
import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

logger = logging.getLogger(__name__)

__all__ = ["scheduler_status", "start_scheduler", "stop_scheduler"]

STOP_TIMEOUT_SECONDS = 20.0
REQUEUE_AFTER_SECONDS = 60.0  # the sweep does not queue the same message again sooner (broker mode)


@dataclass
class Job:
    name: str
    every_seconds: float
    run: Callable[[], object]
    next_at: float = 0.0


_stop = threading.Event()
_thread: threading.Thread | None = None
_lock_file = None
_started_at = 0.0
_queued: dict[int, float] = {}  # message id -> monotonic time the sweep queued it


def _extraction_sweep() -> int:
    from memory.enqueue import tasks_eager
    from memory.jobs.lost_work_resume import extraction_resume, resume_age_seconds

    now = time.monotonic()
    if tasks_eager():
        # Extraction runs in this process: a message older than this process cannot be in flight here,
        # so what a crash or restart left pending is finished at once.
        age = min(resume_age_seconds(), max(0, int(now - _started_at)))
        return extraction_resume(older_than_seconds=age)
    for message_id, at in list(_queued.items()):
        if now - at > REQUEUE_AFTER_SECONDS:
            del _queued[message_id]
    from memory.selectors.backlog import pending_extraction

    age = resume_age_seconds()
    candidates = [i for i in pending_extraction(older_than_seconds=age) if i not in _queued]
    queued = extraction_resume(older_than_seconds=age, skip=set(_queued))
    for message_id in candidates:
        _queued[message_id] = now
    return queued


_projections_queued: dict[tuple[int, int], float] = {}  # (memory id, version) -> when the sweep queued it


def _projection_sweep() -> dict:
    """Projections heal without beat (issue 42): what lost its task is queued again once the broker
    answers (run in place with eager tasks). The same (row, version) is not queued again sooner than
    REQUEUE_AFTER_SECONDS, so a backlog in the vector queue is not multiplied."""
    from memory.jobs.lost_work_resume import projections_resume

    now = time.monotonic()
    for key, at in list(_projections_queued.items()):
        if now - at > REQUEUE_AFTER_SECONDS:
            del _projections_queued[key]
    return projections_resume(memo=_projections_queued)


def _reconcile() -> dict:
    from memory.projections.reconcile import projections_reconcile_once

    return projections_reconcile_once(fix=True)


def _expire() -> int:
    from memory.services.lifecycle import memories_expire

    return memories_expire()


def _evict() -> int:
    from memory.services.lifecycle import memories_evict

    return memories_evict()


def _reembed() -> dict:
    """Changing EMBEDDING_MODEL schedules a re-embed: the live collection is rebuilt for it here."""
    from django.conf import settings

    from memory.embeddings import get_embedder
    from memory.models import VectorCollection

    live = VectorCollection.live()
    if live is None or get_embedder(settings.EMBEDDING_MODEL).model_id == live.model_id:
        return {"skipped": "live model is EMBEDDING_MODEL"}
    from memory.projections.reembed import reembed

    return reembed(model=settings.EMBEDDING_MODEL)


def _analyze() -> bool:
    from common.sqlite_stats import sqlite_analyze

    return sqlite_analyze()


def _purge_idempotency() -> int:
    from tenancy.idempotency import idempotency_records_purge

    return idempotency_records_purge()


def _llm_review() -> dict:
    from memory.services.llm_review import llm_review_run

    return llm_review_run()


def _start_delay() -> float:
    from django.conf import settings

    return float(settings.MAINTENANCE_START_DELAY_SECONDS)


def _jobs(mode: str) -> list[Job]:
    from django.conf import settings

    from memory.enqueue import llm_review_configured

    jobs = [Job("extraction_resume", settings.EXTRACTION_SWEEP_SECONDS, _extraction_sweep),
            Job("projections_resume", settings.PROJECTION_SWEEP_SECONDS, _projection_sweep)]
    if mode == "all":  # the intervals of memory/jobs/beat_schedule.py
        jobs += [Job("projections_reconcile", 300, _reconcile), Job("memories_expire", 600, _expire),
                 Job("memories_evict", 3600, _evict), Job("idempotency_purge", 3600, _purge_idempotency),
                 Job("sqlite_analyze", 300, _analyze)]
        if settings.MAINTENANCE_REEMBED:
            jobs.append(Job("reembed", 600, _reembed))
        if llm_review_configured():  # D28; with a broker, beat runs it
            jobs.append(Job("llm_review", 60 * max(1, settings.LLM_REVIEW_EVERY_MINUTES), _llm_review))
    return jobs


def _loop(jobs: list[Job]) -> None:
    from django.db import close_old_connections, connection

    from memory.jobs.run_records import maintenance_run
    from memory.jobs.startup_warmup import wait_warm

    while not wait_warm(timeout=1.0):  # the jobs need the models; don't load them a second time
        if _stop.is_set():
            return
    where = f"web:{os.getpid()}"
    # The sweep resumes what a crash left pending at once; the scans (a reconcile reads every point and
    # row: ~8 s of CPU at 100k memories, on the process that serves recall) wait until start-up is over.
    delay = _start_delay()
    for job in jobs:
        if job.name not in ("extraction_resume", "projections_resume"):
            job.next_at = time.monotonic() + delay
    while not _stop.is_set():
        now = time.monotonic()
        for job in jobs:
            if job.next_at > now or _stop.is_set():
                continue
            close_old_connections()
            try:
                maintenance_run(job.name, job.run, where=where)
            except Exception:
                logger.exception("maintenance job %s failed", job.name)
                connection.close()  # a broken connection must not poison the next job
            job.next_at = time.monotonic() + job.every_seconds
        _stop.wait(max(0.2, min(job.next_at for job in jobs) - time.monotonic()))
    connection.close()


def _take_process_lock() -> bool:
    global _lock_file
    from django.conf import settings

    handle = open(settings.VAR_DIR / "maintenance-scheduler.lock", "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return False
    _lock_file = handle  # held (open) for the life of the process
    return True


def start_scheduler() -> bool:
    """Start the thread if the setting asks for it and no other process on this node runs it."""
    global _thread, _started_at
    from django.conf import settings

    mode = settings.MAINTENANCE_SCHEDULER
    if mode not in ("all", "sweep") or (_thread is not None and _thread.is_alive()):
        return False
    if not _take_process_lock():
        logger.info("maintenance scheduler: another process on this node runs it")
        return False
    _stop.clear()
    _started_at = time.monotonic()
    _thread = threading.Thread(target=_loop, args=(_jobs(mode),), name="maintenance-scheduler", daemon=True)
    _thread.start()
    atexit.register(stop_scheduler)
    logger.info("maintenance scheduler started (%s) in pid %s", mode, os.getpid())
    return True


def stop_scheduler(timeout: float = STOP_TIMEOUT_SECONDS) -> None:
    global _thread, _lock_file
    _stop.set()
    if _thread is not None:
        _thread.join(timeout)
    _thread = None
    if _lock_file is not None:
        _lock_file.close()
        _lock_file = None


def maintenance_status() -> dict:
    """Where maintenance runs (this process's scheduler thread, or beat) and each job's last run."""
    from memory.jobs.run_records import maintenance_runs

    return {"scheduler": scheduler_status(), "jobs": maintenance_runs()}


def scheduler_status() -> dict:
    from django.conf import settings

    running = _thread is not None and _thread.is_alive()
    return {"mode": settings.MAINTENANCE_SCHEDULER, "in_this_process": running}
