"""The write path's dedup window: the active memories a new one is compared with (same user, kind
and scope; the same slot key always), read as light rows and scored by cosine."""
import functools
from dataclasses import dataclass

import numpy as np
from django.conf import settings

from common.text import is_cjk
from memory.choices import SUBJECT_KINDS, MemoryScope, MemoryStatus
from memory.models import Memory, MemoryEmbedding
from memory.vectors import active_embedder, from_bytes, similarity
from tenancy.models import Org


@dataclass(frozen=True)
class NearMemory:
    """A memory of the dedup window: what the tiers read of it. A window of up to 500 model instances
    (JSON metadata, dates) cost more to build than to score; whoever needs the row reads it whole."""

    id: int
    kind: str
    content: str
    slot_key: str | None


def whole(memory: Memory | NearMemory) -> Memory:
    return memory if isinstance(memory, Memory) else Memory.objects.get(id=memory.id)


@functools.lru_cache(maxsize=8192)  # the same window's contents are scored again on every write
def _is_cjk(content: str) -> bool:
    return is_cjk(content)


def similar_active(org: Org, user_id: str, content: str, vector: np.ndarray, model_id: str, *, kind: str, scope: str,
                   conversation_id: int | None, slot_key: str | None) -> list[tuple[NearMemory, float]]:
    """Active memories of the same user, kind and scope, scored by cosine: every one with the same
    slot key plus the most recent SEMANTIC_DEDUP_WINDOW others (bounded work per write)."""
    # A standing statement is compared with every standing memory: "提醒我的时候用短信" (fact) and
    # "以后都用微信提醒我" (preference) are about one subject.
    kinds = sorted(SUBJECT_KINDS) if kind in SUBJECT_KINDS and scope == MemoryScope.USER else [kind]
    base = Memory.objects.filter(org=org, user_id=user_id, kind__in=kinds, scope=scope, status=MemoryStatus.ACTIVE)
    if scope == MemoryScope.TASK:
        base = base.filter(conversation_id=conversation_id)
    fields = ("id", "kind", "content", "slot_key")
    rows = {r[0]: NearMemory(*r) for r in base.order_by("-id").values_list(*fields)[: settings.SEMANTIC_DEDUP_WINDOW]}
    if slot_key:
        rows.update((r[0], NearMemory(*r)) for r in base.filter(slot_key=slot_key).exclude(id__in=list(rows))
                    .values_list(*fields))
    if not rows:
        return []
    pairs = list(MemoryEmbedding.objects.filter(memory_id__in=rows, model_id=model_id).values_list("memory_id", "vector"))
    if not pairs:
        return []
    stored = np.vstack([from_bytes(blob) for _, blob in pairs])
    query_cjk = is_cjk(content)
    cjk = np.array([query_cjk or _is_cjk(rows[memory_id].content) for memory_id, _ in pairs])
    embedder = active_embedder()
    sims = np.where(cjk, similarity(embedder, vector, stored, cjk=True), similarity(embedder, vector, stored, cjk=False))
    scored = [(rows[memory_id], float(sim)) for (memory_id, _), sim in zip(pairs, sims)]
    scored.sort(key=lambda pair: -pair[1])
    return scored
