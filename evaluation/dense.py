"""`memory_eval --baseline dense`: the same memories ranked by raw cosine of the configured embedder.

No keyword retrieval, no recency/importance/frequency priors, no fusion: only the scope a recall
always has (org, user, active, known and valid at the probe's time, readable sources, requested
kinds) and the same de-duplication as the service (identical text, or one item per single source
turn), so a comparison measures ranking and nothing else. The cosine is the one the service judges
stored vectors with (`memory.vectors.similarity`): the multilingual half whenever Chinese is on
either side, the English mix otherwise. Exhaustive (every memory of the user), so the baseline is
not limited by the index's candidate list.
"""
from collections import defaultdict

import numpy as np
from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from common.text import is_cjk
from conversations.selectors import readable_conversation_ids
from memory.models import Memory, MemoryEmbedding, MemorySource
from memory.recall.candidates import RECALLED_KINDS
from memory.vectors import active_embedder, from_bytes, similarity
from tenancy.models import Org


def dense_recall(*, org: Org, user_id: str, query: str, k: int, at: str | None,
                 conversation_id: int | None = None) -> list[dict]:
    """Top-k items (the recall API's item shape: id, kind, content, sources) by raw cosine."""
    when = parse_datetime(at) if at else None
    now = when or timezone.now()
    embedder = active_embedder()
    memories = Memory.objects.filter(org=org, user_id=user_id, status="active",
                                     kind__in=RECALLED_KINDS + ["episode"])
    memories = memories.filter(Q(valid_to__isnull=True) | Q(valid_to__gt=now))
    memories = memories.filter(Q(scope="user") | Q(conversation_id=conversation_id))
    if when is not None:
        memories = memories.filter(created_at__lte=when).filter(Q(valid_from__isnull=True) | Q(valid_from__lte=when))
    rows = {m.id: m for m in memories}
    vectors = dict(MemoryEmbedding.objects.filter(memory_id__in=rows, model_id=embedder.model_id)
                   .values_list("memory_id", "vector"))
    sources: dict[int, list[dict]] = defaultdict(list)
    for memory_id, message_id, conv_id, ref in MemorySource.objects.filter(memory_id__in=rows).values_list(
            "memory_id", "message_id", "conversation_id", "external_ref"):
        sources[memory_id].append({"message_id": message_id, "conversation_id": conv_id, "ref": ref})
    conversations = {s["conversation_id"] for srcs in sources.values() for s in srcs if s["conversation_id"]}
    readable = readable_conversation_ids(org=org, user_id=user_id, among=conversations)
    ids = [i for i in rows if i in vectors
           and not {s["conversation_id"] for s in sources[i] if s["conversation_id"]} - readable]
    if not ids:
        return []
    stored = np.vstack([from_bytes(vectors[i]) for i in ids])
    unit = embedder.encode_one(query)
    query_cjk = is_cjk(query)
    share = settings.RECALL_WEIGHTS["multilingual_share_en"]
    mixed = similarity(embedder, unit, stored, cjk=False, first_weight=share)
    multilingual = similarity(embedder, unit, stored, cjk=True)
    scores = [float(multilingual[n] if query_cjk or is_cjk(rows[i].content) else mixed[n])
              for n, i in enumerate(ids)]
    items, seen_hashes, seen_sources = [], set(), set()
    for score, memory_id in sorted(zip(scores, ids), key=lambda pair: (-pair[0], -pair[1])):
        memory = rows[memory_id]
        source_key = frozenset(s["message_id"] for s in sources[memory_id] if s["message_id"])
        if memory.content_hash in seen_hashes or (len(source_key) == 1 and source_key in seen_sources):
            continue
        seen_hashes.add(memory.content_hash)
        if len(source_key) == 1:
            seen_sources.add(source_key)
        items.append({"id": memory_id, "kind": memory.kind, "content": memory.content, "score": round(score, 4),
                      "assertion": getattr(memory, "assertion", None), "sources": sources[memory_id]})
        if len(items) >= k:
            break
    return items
