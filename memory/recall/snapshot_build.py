"""Building a user's recall snapshot (memory/recall/snapshot.py), one function per storage engine.

A snapshot built off the request path (`rows=True`: `warm`, `refresh_soon`) reads every row at once;
one built by the recall that finds none (`rows=False`) reads only ids and terms, and the candidates'
rows by key as recall looks at them (decisions D14). On SQLite such a build reads each of its two
lists as one concatenated row (`_build_concatenated`): it runs beside the query's encode, and a read
row by row gave the GIL to the encoder thread at every row. MySQL's driver releases nothing per row:
its build reads row by row (`_build_row_by_row`), which is also SQLite's fallback."""
import numpy as np
from django.conf import settings
from django.db import connection

from common.plain_reads import plain_rows
from memory.choices import MemoryStatus
from memory.models import Memory
from memory.recall.keyword import TermIndex, analyser, stored_hashes, text_features
from memory.recall.snapshot import UserSnapshot
from memory.recall.snapshot_sql import (
    CANDIDATE_COLUMNS,
    concatenated_statements,
    ids_statement,
    rows_statement,
    terms_statement,
)


def build(org_id: int, user_id: str, generation, rows: bool = True) -> UserSnapshot:
    """The user's snapshot; `rows=False` leaves the candidate rows to be read when asked for."""
    builder = _build_sqlite if connection.vendor == "sqlite" else _build_mysql
    return builder(org_id, user_id, generation, rows)


def _build_sqlite(org_id: int, user_id: str, generation, rows: bool) -> UserSnapshot:
    if not rows:
        snapshot = _build_concatenated(org_id, user_id, generation)
        if snapshot is not None:
            return snapshot
    return _build_row_by_row(org_id, user_id, generation, rows)


def _build_mysql(org_id: int, user_id: str, generation, rows: bool) -> UserSnapshot:
    return _build_row_by_row(org_id, user_id, generation, rows)


def _ints(text: str | None, count: int) -> np.ndarray | None:
    """A comma-separated list of `count` integers; None if it is not that."""
    values = np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, dtype=np.int64)
    return values if len(values) == count else None


def _build_concatenated(org_id: int, user_id: str, generation) -> UserSnapshot | None:
    """`build(rows=False)` from the two statements of `concatenated_statements`: the same snapshot
    (ids in the same order, the same hashes and index), or None when some active memory has no current
    stored terms (the projection lags a write), which `build` handles by reading its text."""
    name = analyser()
    ids_sql, terms_sql = concatenated_statements()
    with connection.cursor() as cursor:
        cursor.execute(ids_sql, [org_id, user_id, MemoryStatus.ACTIVE.value])
        (count, id_list, version_list, created_list), = cursor.fetchall()
        cursor.execute(terms_sql, [org_id, user_id, name])
        (held, term_ids, term_versions, term_lengths, hexed, cjk, small_talk, speakers), = cursor.fetchall()
    ids, versions = _ints(id_list, count), _ints(version_list, count)
    term_ids, term_versions = _ints(term_ids, held), _ints(term_versions, held)
    term_lengths, cjk, small_talk = _ints(term_lengths, held), _ints(cjk, held), _ints(small_talk, held)
    speakers = speakers.split(",") if held else []
    if any(a is None for a in (ids, versions, term_ids, term_versions, term_lengths, cjk, small_talk)) \
            or len(speakers) != held or (count and not held):
        return None
    if not count:
        return UserSnapshot(generation=generation, ids=ids, raw={}, features={}, flat=np.zeros(0, dtype=np.int64),
                          starts=np.zeros(1, dtype=np.int64), index=None)
    # Newest first, as the row-by-row statement orders them (ORDER BY created_at DESC, id DESC), so BM25
    # ties keep their order: the stored texts as bytes compare as SQLite compares them (BINARY).
    order = np.lexsort((ids, np.array(created_list.encode().split(b"|"))))[::-1]
    ids, versions = ids[order], versions[order]
    by_id = np.argsort(term_ids, kind="stable")
    found = np.searchsorted(term_ids, ids, sorter=by_id)
    place = by_id[np.minimum(found, held - 1)]
    if not ((term_ids[place] == ids) & (term_versions[place] == versions)).all():
        return None
    stored = stored_hashes(bytes.fromhex(hexed)) if hexed else np.zeros(0, dtype=np.int64)
    widths = term_lengths // 8
    offsets = np.concatenate(([0], np.cumsum(widths)))
    lengths = widths[place]
    starts = np.concatenate(([0], np.cumsum(lengths)))
    # Each memory's run of hashes, moved from the terms' order to the memories' order.
    flat = stored[np.repeat(offsets[place] - starts[:-1], lengths) + np.arange(starts[-1])]
    index = TermIndex.from_flat(flat, lengths, k1=settings.KEYWORD_BM25_K1, b=settings.KEYWORD_BM25_B)
    snapshot = UserSnapshot(generation=generation, ids=ids, raw={}, features={}, flat=flat, starts=starts, index=index)
    snapshot._packed_features = (cjk[place], small_talk[place], speakers, place)
    return snapshot


def _build_row_by_row(org_id: int, user_id: str, generation, rows: bool) -> UserSnapshot:
    with connection.cursor() as cursor:
        cursor.execute(rows_statement() if rows else ids_statement(), [org_id, user_id, MemoryStatus.ACTIVE.value])
        found = cursor.fetchall()
        cursor.execute(terms_statement(), [org_id, user_id])
        stored = {row[0]: row for row in cursor.fetchall()}  # _terms_statement's columns
    n = len(CANDIDATE_COLUMNS)
    version = n if rows else 1
    name = analyser()
    get = stored.get
    terms_of = [get(r[0]) for r in found]
    # Texts only of the memories whose stored terms are missing or outdated (the projection lags a write).
    missing = {r[0]: p for p, (r, t) in enumerate(zip(found, terms_of))
               if t is None or t[1] != r[version] or t[2] != name}
    if missing:
        for memory_id, content, slot in plain_rows(Memory, ("id", "content", "slot_key"), list(missing), key="id"):
            words, cjk, small_talk, speaker = text_features(content, slot)
            terms_of[missing[memory_id]] = (memory_id, None, None, words.astype("<i8").tobytes(), cjk, small_talk, speaker)
    raw = {r[0]: r[:n] for r in found} if rows else {}
    features = {t[0]: (bool(t[4]), bool(t[5]), t[6] or None) for t in terms_of}
    blobs = [t[3] for t in terms_of]
    ids = np.fromiter((r[0] for r in found), dtype=np.int64, count=len(found))
    # One array of every memory's hashes read from the joined blobs: an array per memory cost as much as
    # the read itself at a few thousand memories (a cold user's first recall waits for this build).
    flat = stored_hashes(b"".join(blobs))
    lengths = np.fromiter((len(b) // 8 for b in blobs), dtype=np.int64, count=len(blobs))
    starts = np.concatenate(([0], np.cumsum(lengths)))
    index = TermIndex.from_flat(flat, lengths, k1=settings.KEYWORD_BM25_K1,
                                b=settings.KEYWORD_BM25_B) if found else None
    return UserSnapshot(generation=generation, ids=ids, raw=raw, features=features, flat=flat, starts=starts, index=index)
