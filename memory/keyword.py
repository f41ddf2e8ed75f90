"""Keyword search over a user's active memories: BM25 (rank-bm25) on jieba tokens for Chinese and
lowercase words for English. One index per (org, user), built on demand from MySQL and kept in
process until that user's memory generation changes (any write bumps it, in the shared cache)."""
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from django.conf import settings
from rank_bm25 import BM25Okapi

from conversations.textutil import tokenize
from memory.cache import user_generation
from memory.keyword_zh import bigrams
from memory.models import Memory

MAX_INDEXES = 256  # users kept in process (LRU)


class _LuceneBM25(BM25Okapi):
    """BM25 with Lucene's idf, log(1 + (N - n + 0.5) / (n + 0.5)): never negative, so a term that
    appears in most of a small corpus (a new user's few memories) still scores above zero."""

    def _calc_idf(self, nd):
        for word, freq in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))


@dataclass
class _UserIndex:
    generation: int
    ids: np.ndarray
    bm25: _LuceneBM25 | None


_indexes: "OrderedDict[tuple[int, str], _UserIndex]" = OrderedDict()
_lock = threading.Lock()


@lru_cache(maxsize=1)
def _english_stemmer():
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _stem(token: str) -> str:
    """Snowball (Porter 2) for English words, so "dogs" meets "dog" and "caring" meets "care" (a
    hand-written suffix cut made "notes" "not" and "caring" "car"). Other tokens (Chinese words,
    codes with digits) stay as they are."""
    if token.isascii() and token.isalpha():
        return _english_stemmer().stemWord(token)
    return token


def terms(text: str) -> list[str]:
    words = [_stem(t) for t in tokenize(text)]
    return words + bigrams(text) if settings.KEYWORD_ZH_BIGRAMS else words


def _build(org_id: int, user_id: str, generation: int) -> _UserIndex:
    rows = list(Memory.objects.filter(org_id=org_id, user_id=user_id, status="active")
                .values_list("id", "content", "slot_key"))
    if not rows:
        return _UserIndex(generation, np.array([], dtype=np.int64), None)
    # The slot key names the subject ("fact:用户.住址"), so "我的住址" finds "我家住在…文三路".
    corpus = [(terms(content) + terms((slot or "").split(":", 1)[-1].replace(".", " "))) or ["∅"]
              for _, content, slot in rows]
    bm25 = _LuceneBM25(corpus, k1=settings.KEYWORD_BM25_K1, b=settings.KEYWORD_BM25_B)
    return _UserIndex(generation, np.array([r[0] for r in rows], dtype=np.int64), bm25)


def _index_for(org_id: int, user_id: str) -> _UserIndex:
    generation = user_generation(org_id, user_id)
    key = (org_id, user_id)
    with _lock:
        cached = _indexes.get(key)
        if cached is not None and cached.generation == generation:
            _indexes.move_to_end(key)
            return cached
    index = _build(org_id, user_id, generation)
    with _lock:
        _indexes[key] = index
        _indexes.move_to_end(key)
        while len(_indexes) > MAX_INDEXES:
            _indexes.popitem(last=False)
    return index


def keyword_scores(*, org_id: int, user_id: str, query: str) -> dict[int, float]:
    """Raw BM25 score of every active memory of the user that shares a term with the query."""
    index = _index_for(org_id, user_id)
    query_terms = terms(query)
    if index.bm25 is None or not query_terms:
        return {}
    scores = index.bm25.get_scores(query_terms)
    positive = np.nonzero(scores > 0)[0]
    return {int(index.ids[i]): float(scores[i]) for i in positive}




def clear() -> None:
    with _lock:
        _indexes.clear()
