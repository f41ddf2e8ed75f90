"""Possible conflicts between two active standing memories: recorded by the write path when subject
matching is uncertain, resolved by an operator (console or REST)."""
from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memory.choices import ConflictStatus, MemoryStatus
from memory.enqueue import sync_after_commit
from memory.models import Memory, MemoryConflict
from tenancy.db import retry_on_contention
from tenancy.models import Org
from tenancy.services import audit_record

logger = logging.getLogger(__name__)

RESOLUTIONS = ("supersede", "keep_both")


class ConflictStateError(Exception):
    """The conflict is no longer open, or one of its memories is no longer active."""


def conflict_record(*, older: Memory, newer: Memory, score: float, signals: dict | None = None) -> MemoryConflict:
    """Idempotent: the same pair is recorded once. Call inside the write transaction."""
    conflict, _ = MemoryConflict.objects.get_or_create(
        older=older, newer=newer,
        defaults={"org_id": newer.org_id, "user_id": newer.user_id, "score": float(score), "signals": signals or {}},
    )
    return conflict


@retry_on_contention
def conflict_resolve(*, org: Org, conflict_id: int, action: str, operator: str,
                     actor_kind: str = "operator") -> MemoryConflict:
    """`supersede`: the older memory is superseded by the newer (chain and history kept);
    `keep_both`: both stay active and the pair leaves the queue. Audited either way."""
    if action not in RESOLUTIONS:
        raise ValueError(f"action must be one of {', '.join(RESOLUTIONS)}")
    with transaction.atomic():
        conflict = MemoryConflict.objects.select_for_update().get(id=conflict_id, org=org)
        if conflict.status != ConflictStatus.OPEN:
            raise ConflictStateError(f"conflict {conflict.id} is {conflict.status}")
        now = timezone.now()
        if action == "supersede":
            older = Memory.objects.select_for_update().get(id=conflict.older_id)
            newer = Memory.objects.select_for_update().get(id=conflict.newer_id)
            if older.status != MemoryStatus.ACTIVE or newer.status != MemoryStatus.ACTIVE:
                conflict.status, conflict.resolved_at, conflict.resolved_by = ConflictStatus.CLOSED, now, operator[:200]
                conflict.save(update_fields=["status", "resolved_at", "resolved_by"])
                raise ConflictStateError(f"conflict {conflict.id}: a memory of the pair is no longer active")
            Memory.objects.filter(id=older.id).update(status=MemoryStatus.SUPERSEDED, superseded_by=newer, active_hash=None,
                                                      version=F("version") + 1, updated_at=now)
            older.refresh_from_db(fields=["version"])
            sync_after_commit([(older.id, older.version)], org.id, older.user_id)
            audit_record(org=org, actor=operator, actor_kind=actor_kind, action="memory.supersede",
                         target_type="memory", target_id=str(older.id),
                         detail={"superseded_by": newer.id, "conflict": conflict.id, "version": older.version})
        conflict.status = ConflictStatus.SUPERSEDED if action == "supersede" else ConflictStatus.KEPT_BOTH
        conflict.resolved_at, conflict.resolved_by = now, operator[:200]
        conflict.save(update_fields=["status", "resolved_at", "resolved_by"])
        audit_record(org=org, actor=operator, actor_kind=actor_kind, action=f"conflict.{action}",
                     target_type="memory_conflict", target_id=str(conflict.id),
                     detail={"older": conflict.older_id, "newer": conflict.newer_id})
    logger.info("conflict resolved id=%s action=%s", conflict.id, action)
    return conflict
