"""A user's active memories as recall ranks them: one snapshot per (org, user), read from MySQL once
per memory generation and kept in process (LRU, memory/recall/snapshot_cache.py), like the keyword
index it holds.

Every write that changes what recall may return for a user (a new memory or version, a status
change, a source or entity link added to a duplicate) bumps that user's generation after it commits
(memory/enqueue.py), so a snapshot is used only while nothing it holds has changed. It holds the
ranking columns of every active memory, the text verdicts the projection stored (memory/recall/keyword.py)
and the keyword index; sources, entity links and conversation owners are read for the candidates
that need them and kept (they change only with a write, which makes a new snapshot). What can
change without a write to the user's memories is read on every call by the back-check: whether a
source conversation is readable now, whether a linked entity is allowed now
(memory/recall/back_check.py); the rows of the items served are read once more at the end.

A snapshot built off the request path (`warm`, `refresh_soon`) reads every row at once; one built by
the recall that finds none (a user not kept) reads only ids and terms, and the rows of the candidates
recall looks at, when it looks: a cold user's first recall waits for the build, and reading every row
was a large part of it (decisions D14: `bench.snapshots`). On SQLite that build reads each of its two
lists as one concatenated row (`memory/recall/snapshot_build.py`): it runs beside the query's encode, and a read
row by row gave the GIL to the encoder thread at every row.

A snapshot holds no memory text: term hashes, flags and the speaker label only. The access count
(the frequency prior) is as of the snapshot's build."""
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from django.conf import settings
from django.db import connection

from common.plain_reads import plain_rows
from memory.choices import MemoryStatus
from memory.models import EntityLink, Memory, MemorySource
from memory.recall.keyword import TermIndex, term_hashes, terms
from memory.recall.snapshot_sql import (
    CANDIDATE_COLUMNS,
    COLUMN_INDEX,
    DATETIME_AT,
    LINK_COLUMNS,
    SOURCE_COLUMNS,
    joined,
    rows_by_id_statement,
)

logger = logging.getLogger(__name__)


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
for _name, _i in COLUMN_INDEX.items():
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


@dataclass(kw_only=True)
class UserSnapshot:
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
    # Each source conversation's owner, as conversations.selectors.readable_conversation_ids reads it
    # (owners never change; None: no conversation of the org).
    owners: dict[int, str | None] = field(default_factory=dict)

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
                cursor.execute(rows_by_id_statement(len(missing)), missing)
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
            for i in DATETIME_AT:
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
            self._keep(wanted, plain_rows(MemorySource, SOURCE_COLUMNS, wanted),
                       plain_rows(EntityLink, LINK_COLUMNS, wanted))
        return {i: self._sources[i] for i in ids}, {i: self._links[i] for i in ids}

    def _keep(self, memory_ids, source_rows: list[tuple], link_rows: list[tuple]) -> None:
        """Record these memories' sources and links (`SOURCE_COLUMNS` / `LINK_COLUMNS` rows); a memory
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
        self._keep(self.ids.tolist(), joined(MemorySource, SOURCE_COLUMNS, where, params),
                   joined(EntityLink, LINK_COLUMNS, where, params))
