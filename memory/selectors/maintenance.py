"""What the background work has left: messages committed but not yet extracted.
Read by `/readyz`, `/metrics`, the console and the extraction sweep."""
from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from conversations.models import Message

__all__ = ["EXTRACTABLE_ROLES", "backlog_counts", "extraction_pending", "pending_extraction"]

EXTRACTABLE_ROLES = {"user", "assistant"}  # what extraction reads; tool and system turns are not the user's


def extraction_pending() -> dict:
    """Messages committed but not yet extracted (`extracted_at` NULL, the marker the append writes
    in the message's own transaction) and the age of the oldest, in seconds (None when none)."""
    pending = Message.objects.filter(extracted_at__isnull=True, role__in=EXTRACTABLE_ROLES)
    oldest = pending.order_by("created_at").values_list("created_at", flat=True).first()
    age = round((timezone.now() - oldest).total_seconds(), 1) if oldest else None
    return {"messages": pending.count(), "oldest_pending_seconds": age}


def pending_extraction(*, older_than_seconds: int = 60) -> list[int]:
    """Messages whose extraction never ran (a lost task): the extraction sweep (memory/scheduler.py)
    and beat's extraction_resume queue them again."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    return list(Message.objects.filter(extracted_at__isnull=True, created_at__lt=cutoff, role__in=EXTRACTABLE_ROLES)
                .values_list("id", flat=True)[:1000])


def backlog_counts() -> dict[str, int]:
    """The one backlog read: `/metrics`, `/readyz`'s neighbours and the console's time series
    (console/metrics_history.py) all show these figures."""
    from django.db.models import F

    from memory.models import ForgetRequest, Memory

    cutoff = timezone.now() - timedelta(seconds=60)
    return {
        "lagging": Memory.objects.filter(projected_version__lt=F("version")).count(),
        "unextracted": Message.objects.filter(extracted_at__isnull=True, created_at__lt=cutoff,
                                              role__in=EXTRACTABLE_ROLES).count(),
        "forget_pending": ForgetRequest.objects.filter(status="pending").count(),
        "forget_approved": ForgetRequest.objects.filter(status="approved").count(),
    }
