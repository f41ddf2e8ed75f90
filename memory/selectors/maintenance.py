"""What the background work is doing: pending extraction and the last run of each maintenance job.
Read by `/readyz`, `/metrics` and the console."""
from __future__ import annotations

from django.utils import timezone

from conversations.models import Message

__all__ = ["extraction_pending", "maintenance_status"]


def extraction_pending() -> dict:
    """Messages committed but not yet extracted (`extracted_at` NULL, the marker the append writes
    in the message's own transaction) and the age of the oldest, in seconds (None when none)."""
    from memory.services.extraction import EXTRACTABLE_ROLES

    pending = Message.objects.filter(extracted_at__isnull=True, role__in=EXTRACTABLE_ROLES)
    oldest = pending.order_by("created_at").values_list("created_at", flat=True).first()
    age = round((timezone.now() - oldest).total_seconds(), 1) if oldest else None
    return {"messages": pending.count(), "oldest_pending_seconds": age}


def maintenance_status() -> dict:
    """Where maintenance runs (this process's scheduler thread, or beat) and each job's last run."""
    from memory.maintenance_runs import maintenance_runs
    from memory.scheduler import scheduler_status

    return {"scheduler": scheduler_status(), "jobs": maintenance_runs()}
