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

from conversations.models import Message
from memory.services.extraction_inputs import existing_for, recent_turns

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


def look_ahead_texts(todo: list[Message], extractor) -> list[str]:
    """The candidate texts a local extractor produces for each message against the memories as they
    stand before the batch (a later message may see more; what it then writes is encoded alone)."""
    from memory.extraction import ExtractionInput

    existing: dict[tuple[int, str], list] = {}
    texts = []
    for message in todo:
        key = (message.org_id, message.user_id)
        if key not in existing:
            existing[key] = existing_for(message)[0]
        result = extractor.extract(ExtractionInput(role=message.role, content=message.content,
                                                   occurred_at=message.occurred_at, existing=existing[key],
                                                   recent=recent_turns(message)))
        if not result.do_not_remember:
            texts += [c.content for c in result.candidates if c.operation != "NOOP"]
    return texts
