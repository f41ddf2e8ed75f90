"""A user's active memories as recall ranks them: one snapshot per (org, user), read from MySQL once
per memory generation and kept in process (LRU), like the keyword index it holds.

Every write that changes what recall may return for a user (a new memory or version, a status
change, a source or entity link added to a duplicate) bumps that user's generation after it commits
(memory/enqueue.py), so a snapshot is used only while nothing it holds has changed. It holds the
ranking columns of every active memory, the text verdicts the projection stored (memory/keyword.py)
and the keyword index; sources, entity links and conversation owners are read for the candidates
that need them and kept (they change only with a write, which makes a new snapshot). What can
change without a write to the user's memories is read on every call by the back-check: whether a
source conversation is readable now, whether a linked entity is allowed now
(memory/selectors/recall_candidates.py); the rows of the items served are read once more at the end.

A snapshot built off the request path (`warm`, `refresh_soon`) reads every row at once; one built by
the recall that finds none (a user not kept) reads only ids and terms, and the rows of the candidates
recall looks at, when it looks: a cold user's first recall waits for the build, and reading every row
was a large part of it (decisions D14: `bench.snapshots`). On SQLite that build reads each of its two
lists as one concatenated row (`_build_concatenated`): it runs beside the query's encode, and a read
row by row gave the GIL to the encoder thread at every row.

A snapshot holds no memory text: term hashes, flags and the speaker label only. The access count
(the frequency prior) is as of the snapshot's build."""
import logging
import threading
import time
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from cachetools import LRUCache
from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Max

from config.plain_reads import plain_rows
from conversations.models import Conversation
from memory.cache import user_generation
from memory.choices import MemoryStatus
from memory.keyword import TermIndex, analyser, stored_hashes, term_hashes, terms, text_features
from memory.models import EntityLink, Memory, MemorySource, MemoryTerms

# What the back-check, the ranking and the second look read of a candidate.
CANDIDATE_COLUMNS = ("id", "kind", "scope", "conversation_id", "created_at", "valid_from", "valid_to", "occurred_at",
                     "importance", "access_count", "content_hash")
_COLUMN_INDEX = {name: i for i, name in enumerate(CANDIDATE_COLUMNS)}
logger = logging.getLogger(__name__)
_SOURCE_COLUMNS = ("memory", "message", "conversation", "external_ref")
_LINK_COLUMNS = ("memory", "entity")
_DATETIME_AT = tuple(_COLUMN_INDEX[name] for name in ("created_at", "valid_from", "valid_to", "occurred_at"))


@dataclass(slots=True)
class Candidate:
    """One candidate: its row as plain values (`CANDIDATE_COLUMNS`, datetimes aware), the stored text
    verdicts, and its stored vector once the pipeline has read it."""
    row: tuple
    cjk: bool
    small_talk: bool
    speaker: str | None
    vector: np.ndarray | None = None


# The columns as read-only attributes (candidate.kind, ...): a property per column, since the ranking
# reads them a thousand times per recall and a __getattr__ fallback cost more than the reads.
for _name, _i in _COLUMN_INDEX.items():
    setattr(Candidate, _name, property(lambda self, _i=_i: self.row[_i]))
del _name, _i


def _aware(value, tz):
    """A datetime column as the ORM would give it: SQLite hands back ISO text, MySQL a naive
    datetime; both are in the connection's time zone (UTC), made aware when USE_TZ (`tz`)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if tz is not None and value.tzinfo is None:
        value = value.replace(tzinfo=tz)
    return value


@dataclass
class UserCorpus:
    generation: object
    ids: np.ndarray
    raw: dict[int, tuple]  # memory id -> CANDIDATE_COLUMNS as the driver gave them (all, or those read so far)
    features: dict[int, tuple[bool, bool, str | None]]  # cjk, small talk, speaker (all, or those asked for so far)
    # Every memory's term hashes end to end, in `ids` order; a memory's run is flat[starts[p]:starts[p + 1]].
    flat: np.ndarray
    starts: np.ndarray
    index: TermIndex | None
    _position: dict[int, int] = field(default_factory=dict)
    # A concatenated build's features, made into `features` entries on first use: cjk and small-talk
    # flags in `ids` order, the speaker labels as hex in the terms' order, and each memory's place there.
    _packed_features: tuple[np.ndarray, np.ndarray, list[str], np.ndarray] | None = None
    _rows: dict[int, tuple] = field(default_factory=dict)  # converted rows, made on first use
    _sources: dict[int, list[dict]] = field(default_factory=dict)
    _links: dict[int, list[int]] = field(default_factory=dict)
    _owners: dict[int, str] = field(default_factory=dict)

    def __contains__(self, memory_id: int) -> bool:
        return memory_id in self._positions()

    def _positions(self) -> dict[int, int]:
        if not self._position:
            self._position = dict(zip(self.ids.tolist(), range(len(self.ids))))
        return self._position

    def candidates(self, memory_ids) -> dict[int, Candidate]:
        """Fresh Candidates of those of these memories the snapshot holds; rows not read yet are read
        now, in one statement (a memory no longer active by then is left out)."""
        held = [i for i in memory_ids if i in self]
        missing = [i for i in held if i not in self.raw]
        if missing:
            n = len(CANDIDATE_COLUMNS)
            with connection.cursor() as cursor:
                cursor.execute(_rows_by_id_statement(len(missing)), missing)
                for row in cursor.fetchall():
                    if row[n] == MemoryStatus.ACTIVE.value:
                        self.raw[row[0]] = row[:n]
        return {i: self.candidate(i) for i in held if i in self.raw}

    def candidate(self, memory_id: int) -> Candidate:
        """A fresh Candidate of a memory whose row is read (the pipeline sets its vector; the snapshot
        is shared between threads)."""
        row = self._rows.get(memory_id)
        if row is None:
            tz = connection.timezone if settings.USE_TZ else None
            values = list(self.raw[memory_id])
            for i in _DATETIME_AT:
                values[i] = _aware(values[i], tz)
            row = self._rows[memory_id] = tuple(values)
        features = self.features.get(memory_id)
        if features is None:
            cjk, small_talk, speakers, place = self._packed_features
            p = self._positions()[memory_id]
            speaker = speakers[place[p]]
            features = self.features[memory_id] = (bool(cjk[p]), bool(small_talk[p]),
                                                   bytes.fromhex(speaker).decode() if speaker else None)
        return Candidate(row, *features)

    def terms_of(self, memory_ids) -> np.ndarray:
        """The term hashes of these memories end to end (memories not in the snapshot have none)."""
        position = self._positions()
        runs = [self.flat[self.starts[p]:self.starts[p + 1]] for p in
                (position.get(m) for m in memory_ids) if p is not None]
        return np.concatenate(runs) if runs else np.zeros(0, dtype=np.int64)

    def keyword_scores(self, query: str) -> dict[int, float]:
        """Raw BM25 score of every active memory of the user that shares a term with the query."""
        return self.keyword_scores_of(term_hashes(terms(query)))

    def keyword_mass(self, query: str) -> float:
        """`TermIndex.mass` of the query over this user's memories (0: no term known)."""
        if self.index is None:
            return 0.0
        return self.index.mass(term_hashes(terms(query)))

    def keyword_scores_of(self, query: np.ndarray) -> dict[int, float]:
        if self.index is None or not len(query):
            return {}
        scores = self.index.scores(query)
        positive = np.flatnonzero(scores > 0)
        return dict(zip(self.ids[positive].tolist(), scores[positive].tolist()))

    def sources_links(self, ids) -> tuple[dict[int, list[dict]], dict[int, list[int]]]:
        """Sources and entity links of these memories (read once per snapshot, two plain reads)."""
        wanted = [i for i in ids if i not in self._sources]
        if wanted:
            self._keep(wanted, plain_rows(MemorySource, _SOURCE_COLUMNS, wanted),
                       plain_rows(EntityLink, _LINK_COLUMNS, wanted))
        return {i: self._sources[i] for i in ids}, {i: self._links[i] for i in ids}

    def _keep(self, memory_ids, source_rows: list[tuple], link_rows: list[tuple]) -> None:
        """Record these memories' sources and links (`_SOURCE_COLUMNS` / `_LINK_COLUMNS` rows); a memory
        without rows has none."""
        sources: dict[int, list[dict]] = defaultdict(list)
        for memory_id, message_id, conversation_id, ref in source_rows:
            sources[memory_id].append({"message_id": message_id, "conversation_id": conversation_id, "ref": ref})
        links: dict[int, list[int]] = defaultdict(list)
        for memory_id, entity_id in link_rows:
            links[memory_id].append(entity_id)
        for memory_id in memory_ids:
            self._sources[memory_id] = sources.get(memory_id, [])
            self._links[memory_id] = links.get(memory_id, [])

    def prefetch(self, org_id: int, user_id: str) -> None:
        """Read the sources and links of every memory of the snapshot at once (two joined statements), so
        recall reads none: for snapshots built off the request path (`refresh_soon`, `warm`)."""
        qn = connection.ops.quote_name
        m = Memory._meta
        where = (f"{qn(m.db_table)}.{qn(m.get_field('org').column)} = %s AND {qn(m.db_table)}.{qn('user_id')} = %s "
                 f"AND {qn(m.db_table)}.{qn(m.get_field('status').column)} = %s")
        params = [org_id, user_id, MemoryStatus.ACTIVE.value]
        self._keep(self.ids.tolist(), _joined(MemorySource, _SOURCE_COLUMNS, where, params),
                   _joined(EntityLink, _LINK_COLUMNS, where, params))

    def owners(self, org_id: int, conversation_ids: set[int]) -> dict[int, str]:
        """The owner of each conversation of the org (owners never change)."""
        wanted = [c for c in conversation_ids if c not in self._owners]
        if wanted:
            found = dict(plain_rows(Conversation, ("id", "owner_user"), wanted, key="id", org=org_id))
            for conversation_id in wanted:
                self._owners[conversation_id] = found.get(conversation_id)
        return {c: self._owners[c] for c in conversation_ids if self._owners.get(c) is not None}


def _joined(model, columns: tuple[str, ...], where: str, params: list) -> list[tuple]:
    """`model`'s columns for the rows whose `memory` is one of the memories `where` selects."""
    qn, opts, m = connection.ops.quote_name, model._meta, Memory._meta
    cols = ", ".join(f"{qn(opts.db_table)}.{qn(opts.get_field(c).column)}" for c in columns)
    sql = (f"SELECT {cols} FROM {qn(opts.db_table)} INNER JOIN {qn(m.db_table)} ON "
           f"{qn(m.db_table)}.{qn(m.pk.column)} = {qn(opts.db_table)}.{qn(opts.get_field('memory').column)} WHERE {where}")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _column(name: str) -> str:
    qn, m = connection.ops.quote_name, Memory._meta
    return f"{qn(m.db_table)}.{qn(m.get_field(name).column)}"


def _candidate_columns() -> list[str]:
    # SQLite's driver would parse every datetime of the user's memories; as text they are parsed only
    # for the candidates a recall looks at (`_aware`), a sixth of a cold snapshot's build at 2,000.
    as_text = connection.vendor == "sqlite"
    return [f"CAST({_column(c)} AS TEXT)" if as_text and _COLUMN_INDEX[c] in _DATETIME_AT else _column(c)
            for c in CANDIDATE_COLUMNS]


def _user_range(columns: list[str]) -> str:
    """These columns of the user's active memories, newest first, as the ORM's default order: BM25 ties
    keep the order they always had. Every column is in memory_recall_snapshot_idx, in this order: one
    index range, no table row visited."""
    qn, m = connection.ops.quote_name, Memory._meta
    return (f"SELECT {', '.join(columns)} FROM {qn(m.db_table)} WHERE {_column('org')} = %s "
            f"AND {_column('user_id')} = %s AND {_column('status')} = %s "
            f"ORDER BY {_column('created_at')} DESC, {_column('id')} DESC")


def _rows_statement() -> str:
    """Every active memory's candidate row and version."""
    return _user_range(_candidate_columns() + [_column("version")])


def _ids_statement() -> str:
    """Every active memory's id and version only (two columns of the same range)."""
    return _user_range([_column("id"), _column("version")])


def _rows_by_id_statement(n: int) -> str:
    """The candidate rows and status of n memories, by primary key (the status is read, not filtered:
    with it in the WHERE clause SQLite's planner took the status index, see memories_of). Not
    plain_rows: its datetimes would go through the driver's per-value parse (`_candidate_columns`)."""
    qn, m = connection.ops.quote_name, Memory._meta
    return (f"SELECT {', '.join(_candidate_columns() + [_column('status')])} FROM {qn(m.db_table)} "
            f"WHERE {_column('id')} IN ({', '.join(['%s'] * n)})")


def _terms_statement() -> str:
    """The stored terms of every memory of the user (not only the active ones: a range of the owner
    index, which a join from each memory would turn into a lookup per memory)."""
    qn, t = connection.ops.quote_name, MemoryTerms._meta
    # SQLite's driver turns a boolean column into a bool by a Python call per value (Django's
    # converter); as integers they are plain values.
    flags = ("cjk", "small_talk") if connection.vendor == "sqlite" else ()
    columns = ", ".join(f"CAST({qn(t.get_field(c).column)} AS INTEGER)" if c in flags else qn(t.get_field(c).column)
                        for c in ("memory", "version", "tokenizer", "hashes", "cjk", "small_talk", "speaker"))
    return (f"SELECT {columns} FROM {qn(t.db_table)} WHERE {qn(t.get_field('org').column)} = %s "
            f"AND {qn('user_id')} = %s")


def _concatenated_statements() -> tuple[str, str]:
    """The ids statement and the terms statement as one row each, every column concatenated in SQL
    (SQLite). Python's sqlite3 releases the GIL around every row it steps, and a cold build runs while
    the query is encoded on another thread, which takes the GIL at each release: ~2,000 rows read
    one by one took half as long again as alone (`_build_concatenated`). Each list is counted, and a
    NULL, which group_concat would skip, is made a value, so the lists stay aligned."""
    qn, m, t = connection.ops.quote_name, Memory._meta, MemoryTerms._meta
    ids = (f"SELECT count(*), group_concat({_column('id')}), group_concat({_column('version')}), "
           f"group_concat(coalesce({_column('created_at')}, ''), '|') FROM {qn(m.db_table)} "
           f"WHERE {_column('org')} = %s AND {_column('user_id')} = %s AND {_column('status')} = %s")
    col = lambda name: qn(t.get_field(name).column)  # noqa: E731
    terms = (f"SELECT count(*), group_concat({col('memory')}), group_concat({col('version')}), "
             f"group_concat(coalesce(length({col('hashes')}), 0)), group_concat(hex({col('hashes')}), ''), "
             f"group_concat(coalesce(CAST({col('cjk')} AS INTEGER), 0)), "
             f"group_concat(coalesce(CAST({col('small_talk')} AS INTEGER), 0)), group_concat(hex({col('speaker')})) "
             f"FROM {qn(t.db_table)} WHERE {col('org')} = %s AND {qn('user_id')} = %s AND {col('tokenizer')} = %s")
    return ids, terms


def _ints(text: str | None, count: int) -> np.ndarray | None:
    """A comma-separated list of `count` integers; None if it is not that."""
    values = np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, dtype=np.int64)
    return values if len(values) == count else None


def _build_concatenated(org_id: int, user_id: str, generation) -> UserCorpus | None:
    """`build(rows=False)` from the two statements of `_concatenated_statements`: the same snapshot
    (ids in the same order, the same hashes and index), or None when some active memory has no current
    stored terms (the projection lags a write), which `build` handles by reading its text."""
    name = analyser()
    ids_sql, terms_sql = _concatenated_statements()
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
        return UserCorpus(generation, ids, {}, {}, np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64), None)
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
    corpus = UserCorpus(generation, ids, {}, {}, flat, starts, index)
    corpus._packed_features = (cjk[place], small_talk[place], speakers, place)
    return corpus


def build(org_id: int, user_id: str, generation, rows: bool = True) -> UserCorpus:
    """The user's snapshot; `rows=False` leaves the candidate rows to be read when asked for."""
    if not rows and connection.vendor == "sqlite":
        corpus = _build_concatenated(org_id, user_id, generation)
        if corpus is not None:
            return corpus
    return _build_row_by_row(org_id, user_id, generation, rows)


def _build_row_by_row(org_id: int, user_id: str, generation, rows: bool) -> UserCorpus:
    with connection.cursor() as cursor:
        cursor.execute(_rows_statement() if rows else _ids_statement(), [org_id, user_id, MemoryStatus.ACTIVE.value])
        found = cursor.fetchall()
        cursor.execute(_terms_statement(), [org_id, user_id])
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
    return UserCorpus(generation, ids, raw, features, flat, starts, index)


_corpora: LRUCache | None = None
_lock = threading.Lock()
_inflight: dict[tuple[int, str], Future] = {}  # background rebuilds (refresh_soon)
_refresher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="recall-snapshot")
_REBUILD_ATTEMPTS = 3


def _cache() -> LRUCache:
    global _corpora
    if _corpora is None:
        _corpora = LRUCache(maxsize=settings.RECALL_CORPUS["users"])
    return _corpora


def user_corpus(org_id: int, user_id: str) -> UserCorpus:
    key = (org_id, user_id)
    generation = user_generation(org_id, user_id)
    with _lock:
        cached = _cache().get(key)  # a read counts as a use
        if cached is not None and cached.generation == generation:
            return cached
        running = _inflight.get(key)
    if running is not None:  # a rebuild after this user's last write is under way: its result, not a second build
        try:
            built = running.result(timeout=settings.RECALL_CORPUS["wait_seconds"])
            if built is not None and built.generation == generation:
                return built
        except Exception:  # its own error is logged there; build here
            pass
    corpus = build(org_id, user_id, generation, rows=False)  # on the request path: rows as recall asks
    with _lock:
        _cache()[key] = corpus
    return corpus


def _rebuild(key: tuple[int, str]) -> UserCorpus | None:
    from django.db import connection as thread_connection

    try:
        for attempt in range(_REBUILD_ATTEMPTS):
            try:
                corpus = build(*key, user_generation(*key))
                corpus.prefetch(*key)
                break
            except DatabaseError:
                # SQLite answers "locked" while the write that triggered this still projects; retry.
                if attempt == _REBUILD_ATTEMPTS - 1:
                    raise
                thread_connection.close()
                time.sleep(0.05 * (attempt + 1))
        with _lock:
            _cache()[key] = corpus
        return corpus
    except Exception:
        logger.exception("recall snapshot rebuild failed org=%s", key[0])
        return None
    finally:
        with _lock:
            _inflight.pop(key, None)
        thread_connection.close()  # this thread's own connection


def refresh_soon(org_id: int, user_id: str) -> None:
    """After a write to this user's memories in this process: rebuild the user's snapshot on a thread of
    its own if one is kept (a user in use), so the next recall finds it built instead of building it
    while it waits. Users without a snapshot are built when first asked for."""
    key = (org_id, user_id)
    with _lock:
        if key not in _cache() or key in _inflight:
            return
        _inflight[key] = _refresher.submit(_rebuild, key)


def warm(limit: int | None = None) -> int:
    """Build the snapshots of the users whose memories changed last (up to the cache's capacity), as
    the web process starts: their first recall then finds them. Returns how many were built."""
    limit = settings.RECALL_CORPUS["users"] if limit is None else limit
    users = (Memory.objects.filter(status=MemoryStatus.ACTIVE).values("org_id", "user_id")
             .annotate(last=Max("updated_at")).order_by("-last")[:limit])
    built = 0
    for row in users:
        key = (row["org_id"], row["user_id"])
        corpus = build(*key, user_generation(*key))
        corpus.prefetch(*key)
        with _lock:
            _cache()[key] = corpus
        built += 1
    return built


def keyword_scores(*, org_id: int, user_id: str, query: str) -> dict[int, float]:
    """Raw BM25 score of every active memory of the user that shares a term with the query."""
    return user_corpus(org_id, user_id).keyword_scores(query)


def clear() -> None:
    with _lock:
        _cache().clear()
