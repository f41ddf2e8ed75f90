"""Create, update, invalidate memories: the tiers of the write path (DESIGN §5).

Order of cost: forget rules → exact dedup (normalised hash) → semantic dedup (cosine ≥ duplicate
threshold: skip and touch) → supersede (same subject: slot key or entity) → ADD. Decisions for one
user are serialised by locking that user's MemoryWriteLock row, so two workers extracting the same
fact at once never both ADD; the unique index on active_hash is the backstop.
"""
import logging
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from common.text import content_hash
from conversations.selectors import message_external_refs
from memory.choices import FAR_READS, SINGLE_VALUED_KINDS, SUBJECT_KINDS, MemoryAssertion, MemoryKind, MemoryStatus
from memory.enqueue import generation_bump_after_commit, sync_after_commit
from memory.models import EntityLink, Memory, MemoryEmbedding, MemorySource, MemoryVersion, MemoryWriteLock
from memory.services.dedup_window import NearMemory, similar_active, whole
from memory.services.forget_rules import forget_rule_matches, forget_rule_verdict
from memory.services.subject_tier import (
    conflicts_record,
    conflicts_record_judged,
    distinct_statements,
    replaced_and_flagged,
    subject_decisions,
)
from memory.thresholds import thresholds_for
from memory.vectors import active_embedder, to_bytes
from tenancy.db import retry_on_contention
from tenancy.models import Org
from tenancy.services import audit_record

logger = logging.getLogger(__name__)

SAME_SLOT_DUPLICATE = 0.97  # within one slot only a near-verbatim restatement is a duplicate


@dataclass
class SourceRef:
    message_id: int | None = None
    conversation_id: int | None = None
    external_ref: str | None = None


@dataclass
class MemoryInput:
    org: Org
    user_id: str
    kind: str
    content: str
    assertion: str = MemoryAssertion.USER_STATED
    slot_key: str | None = None
    scope: str = "user"
    conversation_id: int | None = None
    importance: float = 0.5
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    occurred_at: datetime | None = None
    created_at: datetime | None = None  # the simulated/business time the memory became known
    entity_ids: list[int] = field(default_factory=list)
    sources: list[SourceRef] = field(default_factory=list)
    created_by: str = "api"
    actor: str = ""
    change: str | None = None  # correction | migration | update: replaces the same slot's older value
    supersedes: list[int] = field(default_factory=list)  # memory ids an LLM said this replaces
    subject: str | None = None  # the attribute the statement is about, when the extractor names it
    replaces_only: bool = False  # stored only when it supersedes or may conflict with a standing memory
    metadata: dict = field(default_factory=dict)  # the client's key/value metadata, kept as given
    said: str | None = None  # the user's words when the content rewrote them: what the learned judge reads


@dataclass
class WriteOutcome:
    action: str  # added | duplicate | superseded | blocked | unanchored (replaces_only, nothing on its subject)
    memory: Memory | None
    superseded: list[int] = field(default_factory=list)
    similarity: float | None = None
    conflicts: list[int] = field(default_factory=list)  # older memories kept beside it as possible conflicts


def _lock_user(org: Org, user_id: str) -> None:
    # One query once the user's lock row exists (every write after the first).
    if MemoryWriteLock.objects.select_for_update().filter(org=org, user_id=user_id).exists():
        return
    # First write of this user: create the row (a concurrent first write may win; either is fine).
    MemoryWriteLock.objects.bulk_create([MemoryWriteLock(org=org, user_id=user_id)], ignore_conflicts=True)
    MemoryWriteLock.objects.select_for_update().get(org=org, user_id=user_id)


def _add_sources(memory: Memory | NearMemory, version: MemoryVersion, sources: list[SourceRef]) -> None:
    MemorySource.objects.bulk_create([
        MemorySource(memory_id=memory.id, version=version, message_id=s.message_id, conversation_id=s.conversation_id,
                     external_ref=s.external_ref) for s in sources
    ])


def _link_entities(memory: Memory | NearMemory, entity_ids: list[int]) -> None:
    EntityLink.objects.bulk_create([EntityLink(memory_id=memory.id, entity_id=e) for e in set(entity_ids)], ignore_conflicts=True)


def _store_embedding(memory: Memory, vector: np.ndarray, model_id: str, *, new: bool = False) -> None:
    if new:  # a row created in this transaction has no embedding yet: skip the lookup
        MemoryEmbedding.objects.create(memory=memory, model_id=model_id, version=memory.version, vector=to_bytes(vector))
        return
    MemoryEmbedding.objects.update_or_create(memory=memory, model_id=model_id,
                                             defaults={"version": memory.version, "vector": to_bytes(vector)})


def _touch_duplicate(existing: Memory | NearMemory, inp: MemoryInput) -> None:
    """A restatement confirms the memory: count it and keep where it was said again. A message that
    is already a source (a redelivered extraction task) confirms nothing new and changes nothing."""
    known = set(MemorySource.objects.filter(memory_id=existing.id).values_list("message_id", "external_ref"))
    new_sources = [s for s in inp.sources if (s.message_id, s.external_ref) not in known]
    if inp.sources and not new_sources:
        return
    Memory.objects.filter(id=existing.id).update(access_count=F("access_count") + 1)
    if new_sources:
        version = MemoryVersion.objects.filter(memory_id=existing.id).order_by("-n").first()
        _add_sources(existing, version, new_sources)
    _link_entities(existing, inp.entity_ids)
    if new_sources or inp.entity_ids:
        # Recall's snapshot of the user holds each memory's sources and links (they decide who may see it).
        generation_bump_after_commit(inp.org.id, inp.user_id)


def _semantic_duplicate(inp: MemoryInput, similar: list[tuple[NearMemory, float]], threshold: float):
    """The most similar memory if it says the same thing. Within one slot the embedding cannot
    tell values apart (佳木斯 vs 齐齐哈尔 score 0.9), so a same-slot memory counts as a duplicate
    only when nearly identical and the candidate does not announce a change; otherwise the
    supersede tier decides."""
    for memory, sim in similar:
        if sim < threshold:
            return None
        if memory.kind != inp.kind:
            continue
        if inp.kind in SUBJECT_KINDS and distinct_statements(memory.content, inp.content):
            continue  # another thing or another value: the subject tier decides
        same_slot = inp.slot_key and memory.slot_key == inp.slot_key and inp.kind in SINGLE_VALUED_KINDS
        if same_slot and (inp.change or sim < SAME_SLOT_DUPLICATE):
            continue
        return memory, sim
    return None


def audit_restated(inp: MemoryInput, memory: Memory, after_rule: tuple) -> None:
    # Said again after it was forgotten: stored, and the rule it would have matched is on record.
    audit_record(org=inp.org, actor=inp.actor or inp.created_by, actor_kind="system",
                 action="memory.restated_after_forget", target_type="memory", target_id=str(memory.id),
                 detail={"forget_rule": after_rule[0], "forget_request": after_rule[2], "kind": memory.kind})
    logger.info("memory restated after forget id=%s rule=%s", memory.id, after_rule[0])


def _supersede(memory: Memory, targets: list[Memory]) -> list[int]:
    """Mark the targets superseded by the new memory (inside memory_write's transaction); their ids."""
    superseded = []
    for old in targets:
        Memory.objects.filter(id=old.id).update(status=MemoryStatus.SUPERSEDED, superseded_by=memory, active_hash=None,
                                                version=F("version") + 1, updated_at=timezone.now())
        superseded.append(old.id)
    return superseded


def _sync_and_audit(inp: MemoryInput, memory: Memory, superseded: list[int]) -> None:
    """Project the new memory and the ones it superseded after COMMIT, and audit each supersede."""
    versions = dict(Memory.objects.filter(id__in=superseded).values_list("id", "version"))
    sync_after_commit([(memory.id, memory.version)] + list(versions.items()), inp.org.id, inp.user_id)
    for old_id in superseded:
        audit_record(org=inp.org, actor=inp.actor or inp.created_by, actor_kind="system" if inp.created_by == "extractor" else "api",
                     action="memory.supersede", target_type="memory", target_id=str(old_id),
                     detail={"superseded_by": memory.id})


@retry_on_contention
def memory_write(inp: MemoryInput, *, dedup: bool = True, vector: np.ndarray | None = None) -> WriteOutcome:
    """The write path for one candidate (extracted or explicit). `vector`: the content's embedding
    under the live model when the caller already encoded it in a batch."""
    if len(inp.content) > settings.MAX_MEMORY_CHARS:
        inp.content = inp.content[: settings.MAX_MEMORY_CHARS]
    digest = content_hash(inp.content)
    embedder = active_embedder()
    if vector is None:
        vector = embedder.encode_one(inp.content)  # slow call, made before taking the lock
    limits = thresholds_for(embedder.model_id)
    with transaction.atomic():
        _lock_user(inp.org, inp.user_id)
        blocked, after_rule = forget_rule_verdict(
            inp.sources, forget_rule_matches(inp.org, inp.user_id, inp.content, digest, vector, embedder.model_id))
        if blocked:
            logger.info("memory write blocked by forget rule org=%s", inp.org.id)
            return WriteOutcome("blocked", None)
        if dedup and inp.kind != MemoryKind.EPISODE:
            existing = Memory.objects.filter(org=inp.org, user_id=inp.user_id, kind=inp.kind, active_hash=digest).first()
            if existing is not None:
                _touch_duplicate(existing, inp)
                return WriteOutcome("duplicate", existing, similarity=1.0)
        similar = (similar_active(inp.org, inp.user_id, inp.content, vector, embedder.model_id, kind=inp.kind,
                                  scope=inp.scope, conversation_id=inp.conversation_id, slot_key=inp.slot_key)
                   if dedup and inp.kind != MemoryKind.EPISODE else [])
        duplicate = _semantic_duplicate(inp, similar, limits.duplicate)
        if duplicate is not None:
            _touch_duplicate(duplicate[0], inp)
            return WriteOutcome("duplicate", whole(duplicate[0]), similarity=duplicate[1])
        decisions = subject_decisions(inp, similar, limits) if dedup else {}
        # Either standing kind: one statement may read as a preference in one wording and a fact in another.
        same_subject = [(m, decisions[m.id]) for m, _ in similar if m.id in decisions
                        and decisions[m.id].action == "duplicate" and (m.kind == inp.kind or {m.kind, inp.kind} <= SUBJECT_KINDS)]
        if same_subject and not inp.change:
            memory, decision = same_subject[0]
            _touch_duplicate(memory, inp)
            return WriteOutcome("duplicate", whole(memory), similarity=decision.score)
        targets, event_flags, far = (replaced_and_flagged(inp, similar, decisions, limits.supersede, vector=vector,
                                                          model_id=embedder.model_id) if dedup else ([], [], {}))
        if inp.replaces_only and not targets and not any(d.action == "conflict" for d in decisions.values()):
            return WriteOutcome("unanchored", None)
        if far:
            inp = replace(inp, metadata={**(inp.metadata or {}), FAR_READS: far})
        reason = "CORRECT" if inp.change == "correction" else ("SUPERSEDE" if targets else "ADD")
        try:
            with transaction.atomic():
                memory = _create_row(inp, digest, reason)
        except IntegrityError:
            existing = Memory.objects.filter(org=inp.org, user_id=inp.user_id, kind=inp.kind, active_hash=digest).first()
            if existing is None:
                raise
            _touch_duplicate(existing, inp)
            return WriteOutcome("duplicate", existing, similarity=1.0)
        _store_embedding(memory, vector, embedder.model_id, new=True)
        if after_rule is not None:
            audit_restated(inp, memory, after_rule)
        superseded = _supersede(memory, targets)
        conflicts = conflicts_record(memory, similar, decisions, set(superseded)) + \
            conflicts_record_judged(memory, event_flags)
        _sync_and_audit(inp, memory, superseded)
    logger.info("memory written id=%s v=%s reason=%s superseded=%s conflicts=%s", memory.id, memory.version, reason,
                superseded, conflicts)
    return WriteOutcome("superseded" if superseded else "added", memory, superseded=superseded, conflicts=conflicts)


def _create_row(inp: MemoryInput, digest: str, reason: str) -> Memory:
    memory = new_memory_row(inp, digest)
    memory.save()
    version = MemoryVersion.objects.create(memory=memory, n=1, content=inp.content, content_hash=digest,
                                           created_by=inp.created_by, actor=inp.actor[:200], reason=reason)
    _add_sources(memory, version, inp.sources)
    _link_entities(memory, inp.entity_ids)
    return memory


def new_memory_row(inp: MemoryInput, digest: str) -> Memory:
    """The unsaved, validated row of a new memory (the single write and the bulk episode write share it)."""
    created_at = inp.created_at or timezone.now()
    memory = Memory(
        org=inp.org, user_id=inp.user_id, scope=inp.scope, conversation_id=inp.conversation_id, kind=inp.kind,
        assertion=inp.assertion, slot_key=inp.slot_key or None, status=MemoryStatus.ACTIVE, content=inp.content,
        content_hash=digest, active_hash=None if inp.kind == MemoryKind.EPISODE else digest, importance=inp.importance,
        valid_from=inp.valid_from, valid_to=inp.valid_to, occurred_at=inp.occurred_at, created_at=created_at,
        created_by=inp.created_by, version=1, metadata=inp.metadata or {},
    )
    # org and conversation come from authentication and a checked conversation: skip their FK lookups.
    memory.full_clean(exclude=["org", "conversation"], validate_unique=False, validate_constraints=False)
    return memory


@retry_on_contention
def memory_restated(inp: MemoryInput) -> Memory | None:
    """The extractor saw a restatement of a stored memory (NOOP): write nothing, but keep where it
    was said again, so provenance and frequency follow the user's words."""
    if not inp.slot_key:
        return None
    with transaction.atomic():
        _lock_user(inp.org, inp.user_id)
        existing = Memory.objects.filter(org=inp.org, user_id=inp.user_id, kind=inp.kind, slot_key=inp.slot_key,
                                         status=MemoryStatus.ACTIVE).order_by("-id").first()
        if existing is not None:
            _touch_duplicate(existing, inp)
    return existing


def sources_with_message_refs(sources: list[SourceRef]) -> list[SourceRef]:
    """A source named by message id carries that message's external ref, as a memory extracted from
    the message does: callers ask for sources by the ref they gave the message (`ref` in every
    response that lists sources). A ref given with the source is kept: the caller named it."""
    missing = {s.message_id for s in sources if s.message_id and not s.external_ref}
    if not missing:
        return sources
    refs = message_external_refs(message_ids=missing)
    return [replace(s, external_ref=refs.get(s.message_id)) if s.message_id in missing else s for s in sources]


def memory_create(inp: MemoryInput) -> WriteOutcome:
    """An explicit write (REST, console): its sources may be given by message id alone."""
    inp.sources = sources_with_message_refs(inp.sources)
    return memory_write(inp, dedup=True)


@retry_on_contention
def memory_update(*, memory_id: int, content: str, actor: str, created_by: str = "api", reason: str = "UPDATE",
                  sources: list[SourceRef] | None = None, importance: float | None = None,
                  valid_from: datetime | None = None, valid_to: datetime | None = None,
                  metadata: dict | None = None) -> Memory:
    """Adds a version; earlier versions are never rewritten."""
    embedder = active_embedder()
    vector = embedder.encode_one(content)
    digest = content_hash(content)
    with transaction.atomic():
        memory = Memory.objects.select_for_update().get(id=memory_id)  # serialise concurrent edits
        if memory.status != MemoryStatus.ACTIVE:
            raise ValueError("only active memories can be updated")
        n = memory.versions.count() + 1
        memory.content, memory.content_hash = content, digest
        memory.active_hash = None if memory.kind == MemoryKind.EPISODE else digest
        memory.version += 1
        fields = ["content", "content_hash", "active_hash", "version", "updated_at"]
        for name, value in (("importance", importance), ("valid_from", valid_from), ("valid_to", valid_to),
                            ("metadata", metadata)):
            if value is not None:
                setattr(memory, name, value)
                fields.append(name)
        memory.full_clean(validate_unique=False, validate_constraints=False)
        memory.save(update_fields=fields)
        version = MemoryVersion.objects.create(memory=memory, n=n, content=content, content_hash=digest,
                                               created_by=created_by, actor=actor[:200], reason=reason)
        _add_sources(memory, version, sources or [])
        _store_embedding(memory, vector, embedder.model_id)
        audit_record(org=memory.org, actor=actor, actor_kind="operator" if created_by == "operator" else "api",
                     action="memory.update", target_type="memory", target_id=str(memory.id), detail={"version": memory.version})
        sync_after_commit([(memory.id, memory.version)], memory.org_id, memory.user_id)
    return memory


@retry_on_contention
def memory_annotate(*, memory_id: int, actor: str, metadata: dict | None = None, valid_to: datetime | None = None,
                    clear_valid_to: bool = False, importance: float | None = None,
                    valid_from: datetime | None = None) -> Memory:
    """Change what is said about a memory, not what it says: metadata, importance and validity. No new
    content version; the row version still moves so projections pick up the change."""
    with transaction.atomic():
        memory = Memory.objects.select_for_update().get(id=memory_id)
        if memory.status != MemoryStatus.ACTIVE:
            raise ValueError("only active memories can be updated")
        fields = ["version", "updated_at"]
        for name, value in (("metadata", metadata), ("importance", importance), ("valid_from", valid_from)):
            if value is not None:
                setattr(memory, name, value)
                fields.append(name)
        if valid_to is not None or clear_valid_to:
            memory.valid_to = valid_to
            fields.append("valid_to")
        memory.version += 1
        memory.full_clean(validate_unique=False, validate_constraints=False)
        memory.save(update_fields=fields)
        audit_record(org=memory.org, actor=actor, actor_kind="api", action="memory.annotate", target_type="memory",
                     target_id=str(memory.id), detail={"version": memory.version, "fields": fields[2:]})
        sync_after_commit([(memory.id, memory.version)], memory.org_id, memory.user_id)
    return memory


@retry_on_contention
def memory_invalidate(*, memory_id: int, reason: str, actor: str, actor_kind: str = "api",
                      status: str = MemoryStatus.INVALIDATED) -> Memory:
    with transaction.atomic():
        memory = Memory.objects.select_for_update().get(id=memory_id)
        if memory.status == status:
            return memory  # idempotent
        memory.status, memory.active_hash = status, None
        memory.invalidated_at, memory.invalid_reason = timezone.now(), reason[:50]
        memory.version += 1
        memory.save(update_fields=["status", "active_hash", "invalidated_at", "invalid_reason", "version", "updated_at"])
        audit_record(org=memory.org, actor=actor, actor_kind=actor_kind, action=f"memory.{status}",
                     target_type="memory", target_id=str(memory.id), detail={"reason": reason[:50], "version": memory.version})
        sync_after_commit([(memory.id, memory.version)], memory.org_id, memory.user_id)
    return memory
