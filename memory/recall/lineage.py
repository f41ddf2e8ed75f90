"""What an episode's message became (DESIGN §6, "an episode follows what its message became").

An episode is a past message shown as what was said then. Its meaning lives in the memories
extracted from that message (MemorySource links episode → message → derived memories), so its
state is read from them, never from its wording:

- live:      a derived memory is active at user scope: that memory is the current statement and
             outranks the episode it came from;
- stale:     the derived memories were superseded (or invalidated, expired): the episode ranks
             below the current memory of that subject (the head of each supersede chain);
- task:      the message was a task-scoped instruction: the episode stays in its own conversation;
- forgotten: a derived memory was forgotten: the episode restates forgotten content and is never
             recalled (forget execution removes it; this is the read-time guard);
- none:      nothing was extracted (plain history).

An assistant turn that directly answers a user turn and has no memory of its own (the
acknowledgement "好的，记下了：…") inherits the state of the user turn it answers.

Small talk ("谢谢，最近老忘", "好的", "不错，坚持下去") is not history worth recalling: a Chinese turn
from which nothing was extracted, that names no entity and has no content word by part of speech
(no noun, name, verbal noun, numeral or Latin/digit token; `common.text.is_small_talk`,
judged once by the projection and stored with the terms) is dropped from recall
(memory/recall/pipeline.py). English turns are not judged (jieba tags every Latin word
alike); they stay plain history.
"""
from collections import defaultdict
from dataclasses import dataclass, field

from django.db import connection

from common.plain_reads import plain_rows
from conversations.selectors import answered_turns
from memory.choices import MemoryKind, MemoryScope, MemoryStatus
from memory.models import Memory, MemorySource

MAX_CHAIN = 20  # supersede chains are short; the bound only guards against a cycle in bad data


@dataclass
class Lineage:
    state: str  # live | stale | task | forgotten | none
    refs: set[int] = field(default_factory=set)  # live: the active derived memories; stale: the chain heads
    conversation_id: int | None = None  # task: the conversation the instruction belongs to


NONE = Lineage("none")


def _state(derived: list[tuple]) -> Lineage:
    """derived: (id, status, scope, conversation_id, superseded_by_id) of one message's memories."""
    if not derived:
        return NONE
    live = {m[0] for m in derived if m[1] == MemoryStatus.ACTIVE and m[2] == MemoryScope.USER}
    if live:
        return Lineage("live", live)
    if any(m[1] == MemoryStatus.FORGOTTEN for m in derived):
        return Lineage("forgotten")
    task = [m for m in derived if m[2] == MemoryScope.TASK]
    if task:
        return Lineage("task", conversation_id=task[0][3])
    return Lineage("stale", {m[4] for m in derived if m[4]})  # heads resolved by the caller


def _resolve_heads(org_id: int, lineages: list[Lineage]) -> None:
    """Replace each stale lineage's superseding ids by the active memories at the end of the chains
    (superseded_by followed level by level: one query per level for all lineages)."""
    status: dict[int, str] = {}
    nxt: dict[int, int | None] = {}
    frontier = {ref for lineage in lineages for ref in lineage.refs}
    for _ in range(MAX_CHAIN):
        frontier -= set(status)
        if not frontier:
            break
        for memory_id, state, next_id in plain_rows(Memory, ("id", "status", "superseded_by"), frontier, key="id",
                                                    org=org_id):
            status[memory_id], nxt[memory_id] = state, next_id
        frontier = {n for n in nxt.values() if n}
    for lineage in lineages:
        heads = set()
        for ref in lineage.refs:
            node, steps = ref, 0
            while node is not None and status.get(node) not in (None, MemoryStatus.ACTIVE) and steps < MAX_CHAIN:
                node, steps = nxt.get(node), steps + 1
            if node is not None and status.get(node) == MemoryStatus.ACTIVE:
                heads.add(node)
        lineage.refs = heads


def _derived_rows(message_ids: set[int]) -> list[tuple]:
    """(message id, memory id, status, scope, conversation id, superseded by) of the non-episode
    memories derived from these messages: `MemorySource` joined to `Memory`, as one plain statement."""
    if not message_ids:
        return []
    qn, source, memory = connection.ops.quote_name, MemorySource._meta, Memory._meta
    s, m = qn(source.db_table), qn(memory.db_table)
    col = lambda opts, name: qn(opts.get_field(name).column)  # noqa: E731
    ids = sorted(int(i) for i in message_ids)
    sql = (f"SELECT DISTINCT {s}.{col(source, 'message')}, {s}.{col(source, 'memory')}, {m}.{col(memory, 'status')}, "
           f"{m}.{col(memory, 'scope')}, {m}.{col(memory, 'conversation')}, {m}.{col(memory, 'superseded_by')} "
           f"FROM {s} INNER JOIN {m} ON {s}.{col(source, 'memory')} = {m}.{col(memory, 'id')} "
           f"WHERE {s}.{col(source, 'message')} IN ({', '.join(['%s'] * len(ids))}) AND NOT ({m}.{col(memory, 'kind')} = %s)")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*ids, MemoryKind.EPISODE.value])
        return cursor.fetchall()


def message_lineage(org_id: int, message_ids: set[int]) -> dict[int, Lineage]:
    """The lineage of each message (assistant acknowledgements inheriting their user turn's)."""
    if not message_ids:
        return {}
    # An assistant acknowledgement inherits the lineage of the user turn it answers.
    rows, answered = answered_turns(org_id=org_id, message_ids=message_ids)
    derived: dict[int, list[tuple]] = defaultdict(list)
    wanted = set(message_ids) | set(answered.values())
    for message_id, *memory in _derived_rows(wanted):
        derived[message_id].append(tuple(memory))
    out: dict[int, Lineage] = {}
    for mid, _conv, _seq, _role in rows:
        lineage = _state(derived.get(mid, []))
        if lineage.state == "none" and mid in answered:
            lineage = _state(derived.get(answered[mid], []))
        out[mid] = lineage
    _resolve_heads(org_id, [lineage for lineage in out.values() if lineage.state == "stale"])
    return out


def episode_lineage(org_id: int, episode_ids: set[int], sources: dict[int, list[dict]] | None = None) -> dict[int, Lineage]:
    """The lineage of each episode, through its source message. `sources` (memory id → source
    dicts with message_id), when the caller already loaded them, saves a query."""
    if not episode_ids:
        return {}
    if sources is None:
        sources = defaultdict(list)
        for memory_id, message_id in MemorySource.objects.filter(memory_id__in=episode_ids).values_list(
                "memory_id", "message_id"):
            sources[memory_id].append({"message_id": message_id})
    message_of = {e: next((s["message_id"] for s in sources.get(e, []) if s.get("message_id")), None) for e in episode_ids}
    by_message = message_lineage(org_id, {m for m in message_of.values() if m})
    return {e: by_message.get(m, NONE) if m else NONE for e, m in message_of.items()}
