"""Keyword search over a user's active memories: BM25 (rank-bm25) on jieba tokens for Chinese and
lowercase words for English. One index per (org, user), built on demand from MySQL and kept in
process until that user's memory generation changes (any write bumps it, in the shared cache).

A build reads each memory's terms as the projection stored them (`MemoryTerms`) and segments only
the memories whose stored terms are missing or of another version or analyser, so a user's first
query in a process, or the first after a write, costs one read instead of segmenting every text."""
import math
import threading
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from cachetools import LRUCache
from django.conf import settings
from rank_bm25 import BM25Okapi

from conversations.textutil import tokenize
from memory.cache import user_generation
from memory.keyword_zh import bigrams
from memory.models import Memory, MemoryTerms

MAX_INDEXES = 256  # users kept in process (LRU)
# Bumped whenever terms() changes what it returns: stored terms of another analyser are not used.
ANALYSER_VERSION = 1
_SEP = "\x1f"


class _LuceneBM25(BM25Okapi):
    """BM25 with Lucene's idf, log(1 + (N - n + 0.5) / (n + 0.5)): never negative, so a term that
    appears in most of a small corpus (a new user's few memories) still scores above zero."""

    def _calc_idf(self, nd):
        for word, freq in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))

    def _initialize(self, corpus):
        """The library's corpus statistics in one pass that also makes postings (term -> documents
        holding it, with frequencies): rank-bm25 scores a term by visiting every document, which made
        a 20-term query cost 20 passes over the user's corpus. Per-document frequency dicts are not
        kept (only the library's own scoring loops read them, and get_scores is replaced)."""
        nd: dict[str, int] = {}  # word -> number of documents with word
        postings: dict[str, tuple[list[int], list[int]]] = {}
        num_doc = 0
        for i, document in enumerate(corpus):
            self.doc_len.append(len(document))
            num_doc += len(document)
            for word, freq in Counter(document).items():  # first-occurrence order, as the library's dict
                entry = postings.get(word)
                if entry is None:
                    entry = postings[word] = ([], [])
                    nd[word] = 0
                entry[0].append(i)
                entry[1].append(freq)
                nd[word] += 1
            self.corpus_size += 1
        self.avgdl = num_doc / self.corpus_size
        self._postings = postings  # lists; a term's arrays are made when a query first uses it
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._doc_len = np.array(self.doc_len, dtype=np.float64)
        return nd

    def _posting(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        arrays = self._arrays.get(term)
        if arrays is None:
            lists = self._postings.get(term)
            if lists is None:
                return None
            arrays = self._arrays[term] = (np.array(lists[0], dtype=np.int64), np.array(lists[1], dtype=np.float64))
        return arrays

    def get_scores(self, query):
        """The library's formula term by term, over the documents that hold the term only (the others
        add exactly zero), so the scores are the library's."""
        score = np.zeros(self.corpus_size)
        for q in query:
            posting = self._posting(q)
            if posting is None:
                continue
            docs, q_freq = posting
            doc_len = self._doc_len[docs]
            score[docs] += (self.idf.get(q) or 0) * (q_freq * (self.k1 + 1) /
                                                     (q_freq + self.k1 * (1 - self.b + self.b * doc_len / self.avgdl)))
        return score


@dataclass
class _UserIndex:
    generation: int
    ids: np.ndarray
    bm25: _LuceneBM25 | None


_indexes: LRUCache = LRUCache(maxsize=MAX_INDEXES)
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


def analyser() -> str:
    """Names what terms() does now; stored terms from another analyser are segmented again."""
    return f"v{ANALYSER_VERSION}:bigrams={int(bool(settings.KEYWORD_ZH_BIGRAMS))}"


def memory_terms(content: str, slot_key: str | None) -> list[str]:
    """A memory's indexed terms: its text's, and its slot key's, which names the subject
    ("fact:用户.住址"), so "我的住址" finds "我家住在…文三路"."""
    return (terms(content) + terms((slot_key or "").split(":", 1)[-1].replace(".", " "))) or ["∅"]


def pack(words: list[str]) -> str:
    return _SEP.join(w.replace(_SEP, "") for w in words)


def terms_rows(memories) -> list[MemoryTerms]:
    """The MemoryTerms rows of these memory instances (written by the projections)."""
    name = analyser()
    return [MemoryTerms(memory_id=m.id, version=m.version, tokenizer=name, terms=pack(memory_terms(m.content, m.slot_key)))
            for m in memories]


def _build(org_id: int, user_id: str, generation: int) -> _UserIndex:
    rows = list(Memory.objects.filter(org_id=org_id, user_id=user_id, status="active").values_list(
        "id", "version", "terms__version", "terms__tokenizer", "terms__terms"))
    if not rows:
        return _UserIndex(generation, np.array([], dtype=np.int64), None)
    name = analyser()
    usable = {memory_id for memory_id, version, stored_version, tokenizer, stored in rows
              if stored and stored_version == version and tokenizer == name}
    # Texts only of the memories whose stored terms are missing or outdated (the projection lags a write).
    missing = [r[0] for r in rows if r[0] not in usable]
    texts = {memory_id: (content, slot) for memory_id, content, slot in
             Memory.objects.filter(id__in=missing).values_list("id", "content", "slot_key")} if missing else {}
    corpus = [stored.split(_SEP) if memory_id in usable else memory_terms(*texts.get(memory_id, ("", None)))
              for memory_id, _, _, _, stored in rows]
    bm25 = _LuceneBM25(corpus, k1=settings.KEYWORD_BM25_K1, b=settings.KEYWORD_BM25_B)
    return _UserIndex(generation, np.array([r[0] for r in rows], dtype=np.int64), bm25)


def _index_for(org_id: int, user_id: str) -> _UserIndex:
    generation = user_generation(org_id, user_id)
    key = (org_id, user_id)
    with _lock:
        cached = _indexes.get(key)  # a read counts as a use
        if cached is not None and cached.generation == generation:
            return cached
    index = _build(org_id, user_id, generation)
    with _lock:
        _indexes[key] = index
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
