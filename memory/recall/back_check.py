"""Recall's back-check (DESIGN §6, step 3): drop every candidate this user may not see now. The rows,
sources and links come from the user's snapshot (MySQL as of the user's memory generation); whether
each source conversation is readable and each linked entity allowed is read on every call; the rows
served are read once more by key and must still be active (`memories_of`)."""
from django.utils import timezone

from common.plain_reads import plain_instances
from conversations.selectors import readable_conversation_ids
from entities.policy import allowed_entity_ids
from memory.choices import MemoryStatus
from memory.models import Memory
from memory.recall.candidates import requested_kinds
from memory.recall.query import RecallQuery, RecallResult
from memory.recall.snapshot import Candidate, UserSnapshot
from memory.recall.snapshot_cache import user_snapshot


def back_check(q: RecallQuery, ids: set[int], result: RecallResult,
               snapshot: UserSnapshot | None = None) -> tuple[dict[int, Candidate], dict, dict]:
    """Drop what this user may not see now. Rows, sources and links come from the user's snapshot
    (memory/recall/snapshot.py: MySQL as of the user's memory generation, so an id it does not hold
    is not active); whether each source conversation is readable and each linked entity allowed is
    read now, on every call, so a revocation applies at once."""
    snapshot = snapshot if snapshot is not None else user_snapshot(q.org.id, q.user_id)
    rows = snapshot.candidates(ids)
    dropped: dict[int, str] = {i: "not active in the database (stale projection)" for i in ids - set(rows)}
    kinds = requested_kinds(q)
    sources, links = snapshot.sources_links(list(rows))
    conversation_ids = {s["conversation_id"] for srcs in sources.values() for s in srcs if s["conversation_id"]}
    readable = readable_conversation_ids(org=q.org, user_id=q.user_id, among=conversation_ids, owners=snapshot.owners)
    entity_ids = {e for ents in links.values() for e in ents}
    allowed = allowed_entity_ids(org_id=q.org.id, user_id=q.user_id, entity_ids=entity_ids) if entity_ids else set()
    at = q.at
    now = at or timezone.now()
    kept = {}
    for memory_id, memory in rows.items():
        src_conversations = {s["conversation_id"] for s in sources[memory_id] if s["conversation_id"]}
        reason = None
        if memory.kind not in kinds:
            reason = "kind not requested"
        elif memory.scope == "task" and memory.conversation_id != q.conversation_id:
            reason = "task-scoped to another conversation"
        elif at is not None and memory.created_at and memory.created_at > at:
            reason = "not yet known at the reference time"
        elif at is not None and memory.valid_from and memory.valid_from > at:
            reason = "not yet valid at the reference time"
        elif memory.valid_to and memory.valid_to <= now:
            reason = "expired at the reference time"
        elif src_conversations - readable:
            # Every source, not any (D5): a merged memory carries the text of each conversation it
            # came from, so one revoked source hides it.
            reason = "a source conversation is unreadable for this user"
        elif any(e not in allowed for e in links[memory_id]):
            reason = "linked entity not accessible"
        elif q.entity_ids and not set(links[memory_id]) & set(q.entity_ids):
            reason = "not linked to the requested entity"
        elif memory.kind == "episode" and {s["message_id"] for s in sources[memory_id]} & q.exclude_message_ids:
            reason = "already in the recent window"
        if reason:
            dropped[memory_id] = reason
        else:
            kept[memory_id] = memory
    if q.explain:
        result.stages.append({"stage": "back_check", "kept": sorted(kept), "dropped": dropped})
    return kept, sources, links


def memories_of(ids: list[int]) -> dict[int, Memory]:
    """The full rows of the chosen candidates, still active (one read): the snapshot the ranking used is
    as of the user's generation, and what is served is checked against MySQL once more."""
    # By primary key only, status checked here: with the status in the WHERE clause SQLite's planner
    # took the status index and scanned every active row (~18 ms at 100k). A plain statement: the ORM
    # compiling the query cost more than the read.
    return {m.id: m for m in plain_instances(Memory, ids) if m.status == MemoryStatus.ACTIVE}
