"""Resume of lost queued work (DESIGN §5): extraction never run, forget requests approved but never
executed, projections that never landed. MySQL holds the durable markers, so every run can be
repeated at any time; the projection runs over the whole store are `memory/projections/`.

Topology: the embedded shard is owned by one process, and only that process may run the projection
jobs (the reconcile beat task must be routed to it; a management command run beside a server that
holds the shard fails with "vector index unavailable"). See docs/architecture.md, Topologies.
"""
from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from memory.choices import ForgetRequestStatus
from memory.enqueue import (
    FORGET_REQUEST_EXECUTE,
    MEMORIES_SYNC,
    MEMORY_POINTS_DELETE,
    MESSAGES_EXTRACT,
    enqueue,
    tasks_eager,
)
from memory.models import ForgetRequest

__all__ = ["extraction_resume", "projections_resume", "resume_age_seconds"]

logger = logging.getLogger(__name__)

RESUME_CHUNK = 50
# While the default queue holds a backlog, a message this old lost its task: younger ones are usually
# still waiting in the queue, and re-queueing them only lengthens it (the broker also redelivers
# unacknowledged tasks after its visibility timeout). With an empty queue (or eager tasks) nothing
# can be waiting, so EXTRACTION_RESUME_AFTER_SECONDS applies (docs/reliability.md, Pending extraction).
RESUME_AFTER_SECONDS = 600


def resume_age_seconds() -> int:
    """How old pending work must be before it is queued again (see RESUME_AFTER_SECONDS)."""
    from django.conf import settings

    from memory.selectors import queue_depths

    short = settings.EXTRACTION_RESUME_AFTER_SECONDS
    if tasks_eager():
        return short
    try:
        backlog = queue_depths().get(settings.CELERY_TASK_DEFAULT_QUEUE, 0)
    except Exception:  # broker unreachable: nothing can be queued anyway; the enqueue reports it
        backlog = 0
    return max(short, RESUME_AFTER_SECONDS) if backlog else short


def extraction_resume(*, older_than_seconds: int | None = None, skip: set[int] | None = None) -> int:
    """Queue again what a lost task left undone: extraction of messages never extracted, and forget
    requests approved but never executed. Both tasks are idempotent, so a duplicate is harmless.

    Default age: ``resume_age_seconds()``. ``skip``: message ids the caller queued moments ago. With
    eager tasks the extraction runs here: a chunk that fails is logged and left pending, and the
    next chunks still run (one bad message must not stall everyone's recovery)."""
    from memory.selectors.backlog import pending_extraction

    if older_than_seconds is None:
        older_than_seconds = resume_age_seconds()
    messages = requests = 0
    message_ids = [i for i in pending_extraction(older_than_seconds=older_than_seconds) if i not in (skip or ())]
    for start in range(0, len(message_ids), RESUME_CHUNK):
        chunk = message_ids[start : start + RESUME_CHUNK]
        try:
            messages += len(chunk) if enqueue(MESSAGES_EXTRACT, chunk) else 0
        except Exception:
            logger.exception("extraction resume: chunk of %d failed, left pending (first id %s)", len(chunk), chunk[0])
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    approved = (ForgetRequest.objects.filter(status=ForgetRequestStatus.APPROVED)
                .filter(Q(decided_at__lt=cutoff) | Q(decided_at__isnull=True))
                .order_by("id").values_list("id", flat=True)[:1000])
    for request_id in approved:
        try:
            requests += enqueue(FORGET_REQUEST_EXECUTE, request_id)
        except Exception:
            logger.exception("extraction resume: forget request %s failed, left approved", request_id)
    if messages or requests:
        logger.info("extraction resume: queued messages=%d forget_requests=%d", messages, requests)
    return messages + requests


PROJECTION_CHUNK = 200


def projections_resume(*, older_than_seconds: int | None = None,
                       memo: dict[tuple[int, int], float] | None = None) -> dict[str, int]:
    """Queue again the projections a lost task left undone (issue 42): every row with
    ``projected_version < version`` written more than ``older_than_seconds`` ago
    (PROJECTION_RESUME_AFTER_SECONDS by default). Active rows go to ``memories_sync`` in chunks, with
    ``lagging_only`` (a row whose own task got there first is skipped, not upserted again); rows no
    longer active to ``memory_points_delete`` (their points leave every collection). Both are
    idempotent, so a row still waiting in the queue costs one cheap duplicate. With eager tasks they
    run here. A chunk the broker does not take stays lagging for the next sweep.

    ``memo`` ((id, version) -> when queued; (id, 0) for a row no longer active): what the caller
    queued recently is skipped, and what this call queues is added."""
    from django.conf import settings

    from memory.selectors.backlog import pending_projection

    if older_than_seconds is None:
        older_than_seconds = settings.PROJECTION_RESUME_AFTER_SECONDS
    memo = {} if memo is None else memo
    active, gone = pending_projection(older_than_seconds=older_than_seconds)
    work = [(MEMORIES_SYNC, [pair for pair in active if pair not in memo]),
            (MEMORY_POINTS_DELETE, [(memory_id, 0) for memory_id in gone if (memory_id, 0) not in memo])]
    counts = {"synced": 0, "deleted": 0, "not_queued": 0}
    for name, keys in work:
        for start in range(0, len(keys), PROJECTION_CHUNK):
            chunk = keys[start : start + PROJECTION_CHUNK]
            if name == MEMORIES_SYNC:
                queued = _enqueue_logged(name, [list(pair) for pair in chunk], True)
            else:
                queued = _enqueue_logged(name, [memory_id for memory_id, _ in chunk])
            counts[("synced" if name == MEMORIES_SYNC else "deleted") if queued else "not_queued"] += len(chunk)
            if queued:
                memo.update(dict.fromkeys(chunk, time.monotonic()))
    if any(counts.values()):
        logger.info("projection resume: %s", counts)
    return counts


def _enqueue_logged(name: str, *args) -> bool:
    try:
        return enqueue(name, *args)
    except Exception:  # with eager tasks a bug in one chunk must not stop the others' recovery
        logger.exception("projection resume: a chunk of %s failed, left lagging", name)
        return False
