"""Several messages extracted at once (a ``/messages/batch``, a sweep, a re-extraction).

The decisions are those of extracting the messages one by one, in order: each message's extraction
still sees what the earlier ones wrote (the extractor reads the user's memories, the write path
dedups and supersedes against them). What changes is the cost:

- two encoder calls per model for the batch: first the episodes' texts and the sentences the gate
  reads (memory/learn/gate.py), then the candidates' texts not among them. The
  candidates are only known once each message is extracted, so a local extractor (the rules) runs
  once ahead over the batch against the memories as they stand, to learn which texts will be
  written; a text the real pass writes that the look-ahead missed is encoded on its own, as before.
  A remote extractor is not run twice: its candidates are encoded one by one;
- the look-ahead's reading of a message is the real pass's reading whenever the extractor's input
  is the same (same memories shown, same recent turns: nothing the user's earlier messages in the
  batch wrote changed the memories shown), so the rules read each such message once;
- the value-masked forms subject matching compares (memory/subjects) of the look-ahead's standing
  candidates join the same encoder call, seeded into the matcher's cache;
- what extraction reads per message is read once for the batch: the recent turns of each
  conversation (one query), the entity mentions (one query), the memories shown to the extractor
  (once per user, kept in step with the batch's own writes: a new memory leads the list, a supersede
  reads it again);
- episodes are written in bulk after the candidates (``episodes_write``): nothing reads episodes
  while deciding a candidate, so their order relative to the candidates changes no decision;
- the extracted marks are one UPDATE, and the projections of everything the batch wrote one task
  (``memories_sync``: one read, one upsert) queued after the last write commits.
"""
import logging
from collections import defaultdict

import numpy as np
from django.conf import settings

from conversations.models import Message
from conversations.selectors import mentioned_entity_ids, turns_before
from memory.selectors.backlog import EXTRACTABLE_ROLES
from memory.services.extraction_inputs import EXISTING_SHOWN, RECENT_TURNS, existing_for, recent_turns
from memory.services.gate_vectors import GateVectors

logger = logging.getLogger(__name__)


class Batch:
    """What ``message_extract`` defers or looks up when it runs inside a batch."""

    def __init__(self, messages: list[Message]):
        self.vectors: dict[str, np.ndarray] = {}
        # The gate reads from the same vectors (memory/services/gate_vectors.py).
        self.gate_vectors = GateVectors(self.vectors)
        self.with_episode: set[int] = set()
        self.episodes = []
        self.marked: list[int] = []
        self.masked: list[str] = []  # value-masked forms of the look-ahead's standing candidates
        self._looked: dict[int, tuple[object, object]] = {}  # message id -> (extractor input, result)
        self._existing: dict[tuple[int, str], tuple[list, dict[int, int]]] = {}
        self._recent = _recent_by_message(messages)
        ids = [m.id for m in messages]
        # In the mentions' order, as the one-message read gives them.
        self._mentions: dict[int, list[int]] = defaultdict(list, mentioned_entity_ids(message_ids=ids))

    def vector_for(self, content: str) -> np.ndarray | None:
        return self.vectors.get(content[: settings.MAX_MEMORY_CHARS])

    def episode_missing(self, message: Message) -> bool:
        return message.id not in self.with_episode

    def add_episode(self, inp) -> None:
        self.episodes.append(inp)

    def mark_extracted(self, message_id: int) -> None:
        self.marked.append(message_id)

    # ------------------------------------------------------------------ reads, once per batch
    def existing_for(self, message: Message) -> tuple[list, dict[int, int]]:
        key = (message.org_id, message.user_id)
        if key not in self._existing:
            self._existing[key] = existing_for(message)
        return self._existing[key]

    def recent_turns(self, message: Message) -> list[tuple[str, str]]:
        if message.id in self._recent:
            return list(self._recent[message.id])
        return recent_turns(message)

    def entity_ids(self, message: Message) -> list[int]:
        return list(self._mentions.get(message.id, ()))

    def written(self, message: Message, outcome) -> None:
        """A candidate of this message's user was written: keep the memories shown next in step. A new
        memory the extractor is shown (active, the user's, not an episode) is the newest, so it leads
        the list; a supersede removes some, so the list is read again."""
        key = (message.org_id, message.user_id)
        if outcome.action == "superseded" or key not in self._existing:
            self._existing.pop(key, None)
            return
        memory = outcome.memory
        if outcome.action != "added" or memory.scope != "user" or memory.kind == "episode" or memory.status != "active":
            return
        from memory.extraction import ExistingMemory

        shown, short_to_id = self._existing[key]
        ids = [memory.id] + [short_to_id[e.short_id] for e in shown]
        rows = [(memory.kind, memory.content, memory.slot_key)] + [(e.kind, e.content, e.slot_key) for e in shown]
        rows, ids = rows[:EXISTING_SHOWN], ids[:EXISTING_SHOWN]
        self._existing[key] = ([ExistingMemory(short_id=i, kind=kind, content=content, slot_key=slot_key)
                                for i, (kind, content, slot_key) in enumerate(rows, start=1)],
                               {i: memory_id for i, memory_id in enumerate(ids, start=1)})

    # ------------------------------------------------------------------ the extractor
    def extract(self, message: Message, inp, extractor):
        looked = self._looked.get(message.id)
        if looked is not None and looked[0] == inp:
            return looked[1]  # same input, same reading (the rules are a pure function of it)
        return extractor.extract(inp)

    def look_ahead(self, todo: list[Message], extractor) -> list[str]:
        """The texts a local extractor's candidates will embed, read against the memories as they
        stand before the batch (a later message may see more; what it then writes is encoded alone):
        each candidate's content and, for a standing one, its value-masked form."""
        from memory.choices import SUBJECT_KINDS
        from memory.extraction import ExtractionInput
        from memory.subjects.parts import parse

        texts = []
        for message in todo:
            inp = ExtractionInput(role=message.role, content=message.content, occurred_at=message.occurred_at,
                                  existing=self.existing_for(message)[0], recent=self.recent_turns(message),
                                  vectors=self.gate_vectors)
            result = extractor.extract(inp)
            self._looked[message.id] = (inp, result)
            if result.do_not_remember:
                continue
            for c in result.candidates:
                if c.operation == "NOOP":
                    continue
                texts.append(c.content)
                if c.kind in SUBJECT_KINDS and c.scope != "task":
                    self.masked.append(parse(c.content[: settings.MAX_MEMORY_CHARS], c.subject).masked)
        return texts


def _recent_by_message(messages: list[Message]) -> dict[int, tuple[tuple[str, str], ...]]:
    """``recent_turns`` of every message, one query per conversation: the extractable turns before the
    batch's last message of that conversation, as many as the turns in between plus RECENT_TURNS (so
    the ones before its first message are there too). A conversation whose messages lie far apart (a
    sweep) keeps the query per message."""
    by_conversation: dict[int, list[Message]] = defaultdict(list)
    for m in messages:
        if m.role in EXTRACTABLE_ROLES:
            by_conversation[m.conversation_id].append(m)
    out: dict[int, tuple[tuple[str, str], ...]] = {}
    for conversation_id, group in by_conversation.items():
        lo, hi = min(m.seq for m in group), max(m.seq for m in group)
        if hi - lo > 4 * len(group) + 16:
            continue
        rows = turns_before(conversation_id=conversation_id, before_seq=hi, roles=EXTRACTABLE_ROLES,
                            limit=RECENT_TURNS + (hi - lo))
        for m in group:
            before = [(role, content) for seq, role, content in rows if seq < m.seq]
            out[m.id] = tuple(before[-RECENT_TURNS:])
    return out
