"""Several messages extracted at once (a ``/messages/batch``, a sweep, a re-extraction).

The decisions are those of extracting the messages one by one, in order: each message's extraction
still sees what the earlier ones wrote (the extractor reads the user's memories, the write path
dedups and supersedes against them). What changes is the cost:

- one encoder call per model for the batch: the episodes' texts plus the candidates' texts. The
  candidates are only known once each message is extracted, so a local extractor (the rules) runs
  once ahead over the batch against the memories as they stand, to learn which texts will be
  written; a text the real pass writes that the look-ahead missed is encoded on its own, as before.
  A remote extractor is not run twice: its candidates are encoded one by one;
- episodes are written in bulk after the candidates (``episodes_write``): nothing reads episodes
  while deciding a candidate, so their order relative to the candidates changes no decision;
- the extracted marks are one UPDATE, and the projections of everything the batch wrote one task
  (``memories_sync``: one read, one upsert) queued after the last write commits.
"""
import logging

import numpy as np
from django.conf import settings
from django.utils import timezone

from conversations.models import Message
from memory.models import Memory
from memory.enqueue import projections_deferred
from memory.vectors import active_embedder

logger = logging.getLogger(__name__)


class Batch:
    """What ``message_extract`` defers or looks up when it runs inside a batch."""

    def __init__(self, vectors: dict[str, np.ndarray], with_episode: set[int]):
        self.vectors = vectors
        self.with_episode = with_episode
        self.episodes = []
        self.marked: list[int] = []

    def vector_for(self, content: str) -> np.ndarray | None:
        return self.vectors.get(content[: settings.MAX_MEMORY_CHARS])

    def episode_missing(self, message: Message) -> bool:
        return message.id not in self.with_episode

    def add_episode(self, inp) -> None:
        self.episodes.append(inp)

    def mark_extracted(self, message_id: int) -> None:
        self.marked.append(message_id)


def _look_ahead_texts(todo: list[Message], extractor) -> list[str]:
    """The candidate texts a local extractor produces for each message against the memories as they
    stand before the batch (a later message may see more; what it then writes is encoded alone)."""
    from memory.extraction import ExtractionInput
    from memory.services.extraction import _existing_for, _recent_turns

    existing: dict[tuple[int, str], list] = {}
    texts = []
    for message in todo:
        key = (message.org_id, message.user_id)
        if key not in existing:
            existing[key] = _existing_for(message)[0]
        result = extractor.extract(ExtractionInput(role=message.role, content=message.content,
                                                   occurred_at=message.occurred_at, existing=existing[key],
                                                   recent=_recent_turns(message)))
        if not result.do_not_remember:
            texts += [c.content for c in result.candidates if c.operation != "NOOP"]
    return texts


def messages_extract_batch(messages: list[Message], todo: list[Message], *, reextract: bool) -> dict:
    from memory.extraction import get_extractor
    from memory.services.episodes_bulk import episodes_write
    from memory.services.extraction import message_extract

    extractor = get_extractor()
    texts = [m.content for m in todo]
    if not extractor.remote:
        texts += _look_ahead_texts(todo, extractor)
    keys = list(dict.fromkeys(t[: settings.MAX_MEMORY_CHARS] for t in texts))
    encoded = active_embedder().encode(keys)
    with_episode = set(Memory.objects.filter(kind="episode", sources__message_id__in=[m.id for m in todo])
                       .exclude(status="forgotten").values_list("sources__message_id", flat=True))
    batch = Batch(dict(zip(keys, encoded)), with_episode)
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
            Message.objects.filter(id__in=batch.marked).update(extracted_at=timezone.now())
    logger.info("extracted batch messages=%s encoded=%s episodes=%s outcomes=%s", len(todo), len(keys),
                len(batch.episodes), totals)
    return totals
