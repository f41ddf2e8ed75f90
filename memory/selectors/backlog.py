"""What the background work has left: messages committed but not yet extracted.
Read by `/readyz`, `/metrics`, the console and the extraction sweep."""
from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from conversations.selectors import messages_unextracted
from memory.choices import ForgetRequestStatus

__all__ = ["EXTRACTABLE_ROLES", "backlog_counts", "extraction_pending", "pending_extraction", "pending_projection"]

EXTRACTABLE_ROLES = {"user", "assistant"}  # what extraction reads; tool and system turns are not the user's


def extraction_pending() -> dict:
    """Messages committed but not yet extracted (`extracted_at` NULL, the marker the append writes
    in the message's own transaction) and the age of the oldest, in seconds (None when none)."""
    pending = messages_unextracted(roles=EXTRACTABLE_ROLES)
    oldest = pending.order_by("created_at").values_list("created_at", flat=True).first()
    age = round((timezone.now() - oldest).total_seconds(), 1) if oldest else None
    return {"messages": pending.count(), "oldest_pending_seconds": age}


def pending_extraction(*, older_than_seconds: int = 60) -> list[int]:
    """Messages whose extraction never ran (a lost task): the extraction sweep (memory/jobs/scheduler_thread.py)
    and beat's extraction_resume queue them again."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    return list(messages_unextracted(roles=EXTRACTABLE_ROLES, created_before=cutoff).values_list("id", flat=True)[:1000])


def pending_projection(*, older_than_seconds: int = 30, limit: int = 2000) -> tuple[list[tuple[int, int]], list[int]]:
    """Rows whose projection never landed (a publish that failed, a task lost with the broker's queue,
    a process killed between commit and publish): ``projected_version < version`` is the durable
    marker, written in the row's own transaction with every new version. Returns (active rows as
    (id, version), ids of rows no longer active whose points must go), those last written more than
    ``older_than_seconds`` ago; younger ones are left to their own task. Read by the projection
    sweep (memory/jobs/scheduler_thread.py)."""
    from django.db.models import F

    from memory.choices import MemoryStatus
    from memory.models import Memory

    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    rows = (Memory.objects.filter(projected_version__lt=F("version"), updated_at__lt=cutoff).order_by("id")
            .values_list("id", "version", "status")[:limit])
    active = [(memory_id, version) for memory_id, version, status in rows if status == MemoryStatus.ACTIVE]
    gone = [memory_id for memory_id, _, status in rows if status != MemoryStatus.ACTIVE]
    return active, gone


def backlog_counts() -> dict[str, int]:
    """The one backlog read: `/metrics`, `/readyz`'s neighbours and the console's time series
    (console/metrics_history.py) all show these figures."""
    from django.db.models import F

    from memory.models import ForgetRequest, Memory

    cutoff = timezone.now() - timedelta(seconds=60)
    return {
        "lagging": Memory.objects.filter(projected_version__lt=F("version")).count(),
        "unextracted": messages_unextracted(roles=EXTRACTABLE_ROLES, created_before=cutoff).count(),
        "forget_pending": ForgetRequest.objects.filter(status=ForgetRequestStatus.PENDING).count(),
        "forget_approved": ForgetRequest.objects.filter(status=ForgetRequestStatus.APPROVED).count(),
    }
