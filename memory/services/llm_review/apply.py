"""The reviewer's decisions, applied through the services an operator's decision uses.

A pair: `replaces` and `duplicate` → `conflict_resolve(action="supersede")` (the older is superseded by
the newer, chain and history kept), `coexists` → `keep_both`, `unsure` → the conflict stays open for
the operator, with the verdict recorded. A statement of the gate's uncertain band: `drop` →
`memory_invalidate` (status invalidated, history kept), `task_only` → task scope in its conversation
(expiring like extracted task memories; invalidated when it has no conversation), `keep` → marked
reviewed (its kind corrected when the model gave another), `unsure` → left as the gate kept it.

Every decision re-reads the rows under their locks and is skipped when a memory changed since the
batch was formed (the model judged an older text; the next run sends the new one). Every decision
is audited with the reviewer as actor (`llm-review:<model>`, actor kind `system`). The verdict is
kept in `MemoryConflict.signals["llm_review"]` and `Memory.metadata["gate"]["llm_review"]`: words
from a fixed vocabulary, the model name and a time, never text.
"""
from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memory.choices import MemoryKind, MemoryScope, MemoryStatus
from memory.enqueue import sync_after_commit
from memory.models import Memory, MemoryConflict
from memory.services.conflicts import ConflictStateError, conflict_resolve
from memory.services.llm_review.client import PROMPT_VERSION
from memory.services.llm_review.items import REVIEW_KEY, GateItem, PairItem, gate_of, settled
from memory.services.memories import memory_invalidate
from tenancy.db import retry_on_contention
from tenancy.services import audit_record

__all__ = ["conflict_apply", "gate_apply", "item_unanswered"]

logger = logging.getLogger(__name__)

RESOLUTION = {"replaces": "supersede", "duplicate": "supersede", "coexists": "keep_both"}
# Memory.metadata["gate"]["reviewed"] once the reviewer settled the memory and it stays active.
REVIEWED = {"keep": "llm", "task_only": "llm-task-only", "unsure": "llm-unsure", "no_answer": "llm-no-answer"}


def _review(verdict: str, actor: str, **extra) -> dict:
    return {"verdict": verdict, "by": actor, "prompt": PROMPT_VERSION, "at": timezone.now().isoformat(), **extra}


def _unchanged(memories: list[Memory]) -> bool:
    """Both still active at the version the model was shown (read under the caller's lock)."""
    current = dict(Memory.objects.select_for_update().filter(id__in=[m.id for m in memories], status=MemoryStatus.ACTIVE)
                   .values_list("id", "version"))
    return all(current.get(m.id) == m.version for m in memories)


@retry_on_contention
def conflict_apply(item: PairItem, decision: str, *, actor: str) -> str:
    """One pair's decision; returns what happened (for the run's counts)."""
    try:
        with transaction.atomic():
            conflict = MemoryConflict.objects.select_for_update().select_related("org").get(id=item.conflict.id)
            if conflict.status != "open" or settled((conflict.signals or {}).get(REVIEW_KEY)):
                return "skipped"
            if not _unchanged([item.older, item.newer]):
                return "stale"
            conflict.signals = {**(conflict.signals or {}), REVIEW_KEY: _review(decision, actor)}
            conflict.save(update_fields=["signals"])
            audit_record(org=conflict.org, actor=actor, actor_kind="system", action="conflict.llm_review",
                         target_type="memory_conflict", target_id=str(conflict.id),
                         detail={"verdict": decision, "older": conflict.older_id, "newer": conflict.newer_id})
            if decision in RESOLUTION:
                conflict_resolve(org=conflict.org, conflict_id=conflict.id, action=RESOLUTION[decision],
                                 operator=actor, actor_kind="system")
    except ConflictStateError:
        return "stale"  # a memory of the pair changed under us: everything above rolled back
    return decision


def _gate_write(memory: Memory, gate: dict, *, actor: str, verdict: str, kind: str | None = None,
                task_until=None) -> None:
    """Write the gate record (and a corrected kind, or task scope) on a locked active memory: a new row
    version for projections, audited, synced after commit."""
    fields = ["metadata", "version", "updated_at"]
    memory.metadata = {**(memory.metadata or {}), "gate": gate}
    if kind and kind != memory.kind:
        # Another active memory of that kind with the same text would break the unique constraint: then
        # the statement already stands in that kind, and this one keeps its own.
        taken = Memory.objects.filter(org_id=memory.org_id, user_id=memory.user_id, kind=kind,
                                      active_hash=memory.active_hash).exclude(id=memory.id).exists()
        if not taken:
            memory.kind = kind
            fields.append("kind")
    if task_until is not None:
        memory.scope = MemoryScope.TASK
        memory.valid_to = min(memory.valid_to, task_until) if memory.valid_to else task_until
        fields += ["scope", "valid_to"]
    memory.version += 1
    memory.full_clean(validate_unique=False, validate_constraints=False)
    memory.save(update_fields=fields)
    audit_record(org=memory.org, actor=actor, actor_kind="system", action="memory.llm_review", target_type="memory",
                 target_id=str(memory.id), detail={"verdict": verdict, "version": memory.version, "fields": fields[3:]})
    sync_after_commit([(memory.id, memory.version)], memory.org_id, memory.user_id)


@retry_on_contention
def gate_apply(item: GateItem, decision: str, kind: str | None, *, actor: str) -> str:
    """One uncertain-band memory's decision; returns what happened."""
    with transaction.atomic():
        memory = Memory.objects.select_for_update().select_related("org").get(id=item.memory.id)
        gate = gate_of(memory)
        if memory.status != MemoryStatus.ACTIVE or gate.get("reviewed"):
            return "skipped"
        if memory.version != item.memory.version:
            return "stale"
        review = _review(decision, actor, kind=kind) if decision == "keep" else _review(decision, actor)
        task_until = None
        if decision == "task_only" and memory.conversation_id:
            task_until = memory.created_at + timedelta(hours=settings.TASK_MEMORY_TTL_HOURS)
        if decision == "drop" or (decision == "task_only" and task_until is None):
            # Through the normal service (status, version, audit, projection); the reason says who and why.
            memory_invalidate(memory_id=memory.id, reason=f"llm_review:{decision}", actor=actor, actor_kind="system")
            return decision
        gate = {**gate, "reviewed": REVIEWED[decision], REVIEW_KEY: review}
        _gate_write(memory, gate, actor=actor, verdict=decision,
                    kind=kind if decision == "keep" and memory.kind != MemoryKind.EPISODE else None,
                    task_until=task_until)
    return decision


@retry_on_contention
def item_unanswered(item: PairItem | GateItem, reason: str, *, actor: str) -> str:
    """The model gave no usable decision for the item: one attempt more; after LLM_REVIEW_MAX_ATTEMPTS
    the reviewer gives up on it (verdict "no_answer") and it stays with the operator."""
    limit = settings.LLM_REVIEW_MAX_ATTEMPTS
    with transaction.atomic():
        if isinstance(item, PairItem):
            conflict = MemoryConflict.objects.select_for_update().get(id=item.conflict.id)
            review = dict((conflict.signals or {}).get(REVIEW_KEY) or {})
            if conflict.status != "open" or settled(review):
                return "skipped"
            review.update(attempts=int(review.get("attempts", 0)) + 1, error=reason)
            if review["attempts"] >= limit:
                review = {**_review("no_answer", actor), "attempts": review["attempts"], "error": reason}
            conflict.signals = {**(conflict.signals or {}), REVIEW_KEY: review}
            conflict.save(update_fields=["signals"])
            return "gave_up" if settled(review) else "unanswered"
        memory = Memory.objects.select_for_update().select_related("org").get(id=item.memory.id)
        gate = gate_of(memory)
        if memory.status != MemoryStatus.ACTIVE or gate.get("reviewed") or memory.version != item.memory.version:
            return "skipped"
        review = dict(gate.get(REVIEW_KEY) or {})
        review.update(attempts=int(review.get("attempts", 0)) + 1, error=reason)
        gate = {**gate, REVIEW_KEY: review}
        if review["attempts"] >= limit:
            gate.update(reviewed=REVIEWED["no_answer"],
                        **{REVIEW_KEY: {**_review("no_answer", actor), "attempts": review["attempts"], "error": reason}})
        _gate_write(memory, gate, actor=actor, verdict="no_answer" if gate.get("reviewed") else "unanswered")
        return "gave_up" if gate.get("reviewed") else "unanswered"
