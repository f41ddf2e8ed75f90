"""Keyword terms and BM25 over a user's memories: jieba words for Chinese, Snowball-stemmed lowercase
words for English (rank-bm25's Okapi formula with Lucene's idf).

Terms are a projection: the projection sync stores each memory's terms as 64-bit hashes
(`MemoryTerms.hashes`) beside its vectors, with three verdicts read from the same text (mostly
Chinese, small talk, the transcript speaker), so building a user's index is one read and a few array
operations, never a segmentation of every text (jieba is ~0.1 ms a memory). `TermIndex` holds the
postings in compressed sparse form: a query costs one binary search and one vectorised update per
query term. The per-user index itself lives in the user's snapshot (`memory/recall/snapshot.py`),
with the user's rows."""
import hashlib
import math
import re
from functools import lru_cache

import numpy as np
from django.conf import settings

from common.text import is_cjk, is_small_talk, split_speaker, tokenize
from memory.models import MemoryTerms

# Bumped whenever terms() or term_hash() changes what they return: stored terms of another analyser
# are not used (the snapshot segments those memories on the spot).
ANALYSER_VERSION = 2
EMPTY_TERM = "∅"  # a memory whose text has no term still has one, so every document has a length


# --------------------------------------------------------------------------- Chinese bigrams
# Character bigrams of Chinese text, as extra keyword terms beside jieba's words.
# jieba segments one phrase differently in a long question and a short memory ("上回保养" vs "保养了"),
# and an out-of-vocabulary name splits into single characters; overlapping bigrams still match
# (the usual CJK fallback of full-text engines, e.g. Lucene's CJKBigramFilter). Prefixed so they
# never collide with a word term.
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}")


def bigrams(text: str) -> list[str]:
    out = []
    for run in _CJK_RUN.findall(text):
        out.extend("\u2082" + run[i:i + 2] for i in range(len(run) - 1))
    return out


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
    return (terms(content) + terms((slot_key or "").split(":", 1)[-1].replace(".", " "))) or [EMPTY_TERM]


@lru_cache(maxsize=131072)
def term_hash(term: str) -> int:
    """A stable 63-bit id of a term (Python's own str hash changes with every process). Two terms
    of one user's snapshot sharing an id is a chance of about n² / 2⁶⁴: nil."""
    return int.from_bytes(hashlib.blake2b(term.encode(), digest_size=8).digest(), "little") >> 1


def term_hashes(words: list[str]) -> np.ndarray:
    return np.fromiter((term_hash(w) for w in words), dtype=np.int64, count=len(words))


def text_features(content: str, slot_key: str | None) -> tuple[np.ndarray, bool, bool, str]:
    """What the read path needs of a memory's text, read once: its term hashes, whether it is
    mostly Chinese (which half of a composite vector scores it), whether it is small talk, and the
    transcript speaker who said it ("Caroline: …"), or ""."""
    return (term_hashes(memory_terms(content, slot_key)), is_cjk(content), is_small_talk(content),
            (split_speaker(content)[0] or "")[:100])


def terms_rows(memories) -> list[MemoryTerms]:
    """The MemoryTerms rows of these memory instances (written by the projections)."""
    name = analyser()
    rows = []
    for m in memories:
        hashes, cjk, small_talk, speaker = text_features(m.content, m.slot_key)
        rows.append(MemoryTerms(memory_id=m.id, org_id=m.org_id, user_id=m.user_id, version=m.version, tokenizer=name,
                                hashes=hashes.astype("<i8").tobytes(),
                                cjk=cjk, small_talk=small_talk, speaker=speaker))
    return rows


def stored_hashes(blob: bytes | memoryview) -> np.ndarray:
    return np.frombuffer(bytes(blob), dtype="<i8").astype(np.int64, copy=False)


class TermIndex:
    """BM25 over documents given as arrays of term hashes, as rank-bm25's BM25Okapi scores them
    (same formula, same order of floating-point operations, so the same scores) with Lucene's idf,
    log(1 + (N - n + 0.5) / (n + 0.5)): never negative, so a term in most of a small snapshot (a new
    user's few memories) still scores above zero.

    Postings in compressed sparse form: `terms` (sorted unique hashes), `offsets` into `docs` and
    `weight` (each posting's tf part of BM25, which does not depend on the query)."""

    def __init__(self, documents: list[np.ndarray], k1: float, b: float) -> None:
        lengths = np.fromiter((len(d) for d in documents), dtype=np.int64, count=len(documents))
        flat = np.concatenate(documents) if documents else np.zeros(0, dtype=np.int64)
        self._build(flat, lengths, k1, b)

    @classmethod
    def from_flat(cls, flat: np.ndarray, lengths: np.ndarray, k1: float, b: float) -> "TermIndex":
        """The same index from every document's hashes end to end (`flat`) and each one's length: what
        a snapshot read from stored blobs has without making an array per document."""
        index = cls.__new__(cls)
        index._build(flat, lengths, k1, b)
        return index

    def _build(self, flat: np.ndarray, lengths: np.ndarray, k1: float, b: float) -> None:
        self.size = len(lengths)
        doc_of = np.repeat(np.arange(self.size, dtype=np.int64), lengths)
        order = np.lexsort((doc_of, flat))  # by term, then document
        term, doc = flat[order], doc_of[order]
        first_of_pair = np.ones(len(term), dtype=bool)
        first_of_pair[1:] = (term[1:] != term[:-1]) | (doc[1:] != doc[:-1])
        starts = np.flatnonzero(first_of_pair)
        pair_term, self.docs = term[starts], doc[starts]
        tf = np.diff(np.append(starts, len(term))).astype(np.float64)
        first_of_term = np.ones(len(pair_term), dtype=bool)
        first_of_term[1:] = pair_term[1:] != pair_term[:-1]
        term_starts = np.flatnonzero(first_of_term)
        self.terms = pair_term[term_starts]
        self.offsets = np.append(term_starts, len(pair_term))
        df = np.diff(self.offsets)
        n = self.size
        # math.log per distinct document frequency (a few dozen), not per term: the library's exact
        # floating-point result, at a fraction of the calls.
        distinct, which = np.unique(df, return_inverse=True)
        self.idf = np.array([math.log(1 + (n - f + 0.5) / (f + 0.5)) for f in distinct.tolist()],
                            dtype=np.float64)[which] if len(df) else np.zeros(0)
        avgdl = float(lengths.sum()) / n if n else 1.0
        doc_len = lengths[self.docs].astype(np.float64)
        self.weight = tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avgdl))

    def mass(self, query: np.ndarray) -> float:
        """The score a document of average length holding each query term once would get: the sum
        of the idf of the query's terms this index knows (a repeated term counts each time, as in
        `scores`). A memory's score over this is the share of the query's evidence it matches."""
        if not len(self.terms) or not len(query):
            return 0.0
        at = np.searchsorted(self.terms, query)
        at[at >= len(self.terms)] = 0
        known = self.terms[at] == query
        return float(self.idf[at[known]].sum())

    def scores(self, query: np.ndarray) -> np.ndarray:
        """The BM25 score of every document (zeros where no query term occurs); a term repeated in
        the query counts each time, as in the library."""
        score = np.zeros(self.size)
        if not len(self.terms) or not len(query):
            return score
        at = np.searchsorted(self.terms, query)
        at[at >= len(self.terms)] = 0
        for position, term in zip(at.tolist(), query.tolist()):
            if self.terms[position] != term:
                continue
            start, end = self.offsets[position], self.offsets[position + 1]
            score[self.docs[start:end]] += self.idf[position] * self.weight[start:end]
        return score
