"""From stored messages to memories: episodes plus extracted candidates, idempotent per message."""
import logging
import uuid
from datetime import timedelta

from django.conf import settings

from conversations.models import Message
from conversations.selectors import mentioned_entity_ids, message_ids_of, messages_by_id
from conversations.services import message_mark_do_not_remember, message_mark_extracted, messages_mark_extracted
from memory.choices import MemoryAssertion, MemoryKind, MemoryScope, MemoryStatus
from memory.enqueue import MESSAGES_EXTRACT, enqueue, projections_deferred
from memory.models import Memory
from memory.selectors.backlog import EXTRACTABLE_ROLES
from memory.services.extraction_inputs import existing_for, recent_turns
from memory.services.gate_vectors import GateVectors
from memory.services.memories import MemoryInput, SourceRef, memory_invalidate, memory_restated, memory_write
from memory.vectors import active_embedder

logger = logging.getLogger(__name__)

def _client_metadata(message: Message) -> dict:
    """Metadata the client attached to the add that brought this message (the Mem0 surface), so
    what extraction derives from it carries it too."""
    from memory.models import Mem0AddEvent

    ref = message.external_ref or ""
    if not ref.startswith("mem0:"):
        return {}
    try:
        event_id = uuid.UUID(ref[len("mem0:"):])
    except ValueError:
        return {}
    return (Mem0AddEvent.objects.filter(event_id=event_id, org_id=message.org_id, user_id=message.user_id)
            .values_list("metadata", flat=True).first()) or {}


def _episode_exists(message: Message) -> Memory | None:
    return Memory.objects.filter(kind=MemoryKind.EPISODE, sources__message_id=message.id).exclude(
        status__in=[MemoryStatus.FORGOTTEN]).first()


def _episode_input(message: Message, *, entity_ids: list[int], source: SourceRef, metadata: dict) -> MemoryInput:
    """The message itself as an episode: a dated quote with its source ref."""
    return MemoryInput(
        org=message.org, user_id=message.user_id, kind=MemoryKind.EPISODE,
        assertion=MemoryAssertion.USER_STATED if message.role == "user" else MemoryAssertion.MODEL_SUGGESTION,
        content=message.content, scope=MemoryScope.USER, conversation_id=message.conversation_id, importance=0.3,
        occurred_at=message.occurred_at, created_at=message.occurred_at, entity_ids=entity_ids, sources=[source],
        created_by="extractor", actor=f"extractor:{message.role}", metadata=metadata,
    )


def _candidate_input(message: Message, candidate, *, entity_ids: list[int], source: SourceRef, metadata: dict,
                     produced_by: str, short_to_id: dict) -> MemoryInput:
    """What memory_write gets for one extracted candidate; a task-scoped one without an end lives
    TASK_MEMORY_TTL_HOURS from its message."""
    task_scope = candidate.scope == MemoryScope.TASK
    if candidate.gate:
        # The gate's keep probability and model (D25): what a later review of the uncertain band reads.
        metadata = {**metadata, "gate": candidate.gate}
    valid_to = candidate.valid_to
    if task_scope and valid_to is None:
        valid_to = message.occurred_at + timedelta(hours=settings.TASK_MEMORY_TTL_HOURS)
    return MemoryInput(
        org=message.org, user_id=message.user_id, kind=candidate.kind, content=candidate.content,
        assertion=candidate.assertion, slot_key=candidate.slot_key, scope=MemoryScope.TASK if task_scope else MemoryScope.USER,
        conversation_id=message.conversation_id, importance=candidate.importance,
        valid_from=candidate.valid_from, valid_to=valid_to,
        occurred_at=candidate.occurred_at or (message.occurred_at if candidate.kind == MemoryKind.EVENT else None),
        created_at=message.occurred_at, entity_ids=entity_ids, sources=[source], created_by="extractor",
        actor=produced_by, change=candidate.change,
        supersedes=[short_to_id[s] for s in candidate.supersedes if s in short_to_id], metadata=metadata,
        subject=candidate.subject, replaces_only=getattr(candidate, "replaces_only", False),
        said=getattr(candidate, "said", None),
    )


def message_extract(message: Message, *, reextract: bool = False, episode_vector=None, batch=None) -> dict:
    """Extract one message. Returns counts by outcome (for logs and maintenance reports).

    `batch` (memory/services/extraction_batch.py, several messages at once): vectors encoded ahead
    for the texts this message may write, and sinks for the episode and the extracted mark, which
    the batch writes in bulk once every message of it is done. The decisions are the same."""
    from memory.extraction import ExtractionInput, get_extractor

    counts: dict[str, int] = {}
    mark = batch.mark_extracted if batch is not None else (lambda message_id: message_mark_extracted(message_id=message_id))
    if message.role not in EXTRACTABLE_ROLES or message.redacted or not message.content.strip():
        mark(message.id)
        return counts
    if message.extracted_at and not reextract:
        return counts  # redelivered task: already done
    existing, short_to_id = batch.existing_for(message) if batch is not None else existing_for(message)
    vectors = batch.gate_vectors if batch is not None else GateVectors()
    inp = ExtractionInput(role=message.role, content=message.content, occurred_at=message.occurred_at, existing=existing,
                          recent=batch.recent_turns(message) if batch is not None else recent_turns(message),
                          vectors=vectors)
    result = batch.extract(message, inp, get_extractor()) if batch is not None else get_extractor().extract(inp)
    if result.do_not_remember:
        message_mark_do_not_remember(message_id=message.id)
        episode = _episode_exists(message)
        if episode is not None:
            memory_invalidate(memory_id=episode.id, reason="do_not_remember", actor="extractor", actor_kind="system")
        mark(message.id)
        counts["do_not_remember"] = 1
        return counts
    entity_ids = (batch.entity_ids(message) if batch is not None
                  else mentioned_entity_ids(message_ids=[message.id]).get(message.id, []))
    source = SourceRef(message_id=message.id, conversation_id=message.conversation_id, external_ref=message.external_ref)
    metadata = _client_metadata(message)
    if (batch.episode_missing(message) if batch is not None else _episode_exists(message) is None):
        episode = _episode_input(message, entity_ids=entity_ids, source=source, metadata=metadata)
        if batch is not None:
            # No later decision reads episodes (dedup, supersede and the extractor's existing
            # memories all exclude them), so writing them after the batch's candidates changes nothing.
            batch.add_episode(episode)
        else:
            outcome = memory_write(episode, vector=episode_vector if episode_vector is not None
                                   else vectors.stored(message.content))
            counts[f"episode_{outcome.action}"] = 1
    for candidate in result.candidates:
        inp = _candidate_input(message, candidate, entity_ids=entity_ids, source=source, metadata=metadata,
                               produced_by=result.produced_by, short_to_id=short_to_id)
        if candidate.operation == "NOOP":
            action = "restated" if memory_restated(inp) is not None else "noop"
        else:
            outcome = memory_write(inp, vector=vectors.stored(inp.content))
            action = outcome.action
            if batch is not None:
                batch.written(message, outcome)
        counts[action] = counts.get(action, 0) + 1
    mark(message.id)
    logger.info("extracted message=%s by=%s outcomes=%s", message.id, result.produced_by, counts)
    return counts


def messages_extract(*, message_ids: list[int], reextract: bool = False) -> dict:
    messages = messages_by_id(message_ids=message_ids)
    todo = [m for m in messages if m.role in EXTRACTABLE_ROLES and not m.redacted and m.content.strip()
            and (reextract or not m.extracted_at)]
    if len(todo) > 1:
        # Several messages (a /messages/batch, a sweep, a re-extraction): two encoder calls per model
        # and bulk writes, same decisions (memory/services/extraction_batch.py).
        return _messages_extract_batch(messages, todo, reextract=reextract)
    totals: dict[str, int] = {}
    for message in messages:
        for key, value in message_extract(message, reextract=reextract).items():
            totals[key] = totals.get(key, 0) + value
    return totals


def conversation_reextract(*, conversation_id: int) -> dict:
    """Maintenance: queue extraction again over every message (forget rules still apply; extraction
    is idempotent, so a message extracted twice leaves one set of memories)."""
    ids = message_ids_of(conversation_id=conversation_id)
    return {"conversation_id": conversation_id, "messages": len(ids), "queued": enqueue(MESSAGES_EXTRACT, ids, True)}


def _messages_extract_batch(messages: list[Message], todo: list[Message], *, reextract: bool) -> dict:
    from memory.extraction import get_extractor
    from memory.extraction.rules import gate_texts
    from memory.services.episodes_bulk import episodes_write
    from memory.services.extraction_batch import Batch
    from memory.subjects.judge import masked_seed

    extractor = get_extractor()
    batch = Batch(todo)
    embedder = active_embedder()
    # First the messages and the sentences the gate reads, then what the look-ahead's candidates store.
    first = [m.content for m in todo]
    if not extractor.remote and batch.gate_vectors.serves_gate():
        first += [t for m in todo if m.role == "user" for t in gate_texts(m.content)]
    keys = list(dict.fromkeys(t[: settings.MAX_MEMORY_CHARS] for t in first))
    batch.vectors.update(zip(keys, embedder.encode(keys)))
    texts = batch.look_ahead(todo, extractor) if not extractor.remote else []
    later = [t for t in dict.fromkeys(t[: settings.MAX_MEMORY_CHARS] for t in texts) if t not in batch.vectors]
    masked = [t for t in dict.fromkeys(batch.masked) if t not in batch.vectors and t not in set(later)]
    encoded = embedder.encode(later + masked)
    batch.vectors.update(zip(later, encoded[: len(later)]))
    if batch.masked:
        by_text = {**batch.vectors, **dict(zip(later + masked, encoded))}
        masked_seed(embedder, list(dict.fromkeys(batch.masked)), [by_text[t] for t in dict.fromkeys(batch.masked)])
    batch.with_episode = set(Memory.objects.filter(kind=MemoryKind.EPISODE, sources__message_id__in=[m.id for m in todo])
                             .exclude(status=MemoryStatus.FORGOTTEN).values_list("sources__message_id", flat=True))
    totals: dict[str, int] = {}
    with projections_deferred():  # one projection task for the batch's writes
        for message in messages:
            for key, value in message_extract(message, reextract=reextract, batch=batch).items():
                totals[key] = totals.get(key, 0) + value
        outcomes = episodes_write(batch.episodes, [batch.vector_for(e.content) for e in batch.episodes])
        for outcome in outcomes:
            key = f"episode_{outcome.action}"
            totals[key] = totals.get(key, 0) + 1
        if batch.marked:
            messages_mark_extracted(message_ids=list(batch.marked))
    logger.info("extracted batch messages=%s encoded=%s episodes=%s outcomes=%s", len(todo), len(keys) + len(later),
                len(batch.episodes), totals)
    return totals
