"""Embedded vector index on qdrant-edge (Qdrant's engine in-process), for single-host setups.

Layout under ``path``::

    <path>/<collection>/   one EdgeShard per collection (edge_config.json, wal/, segments/)
    <path>/LIVE.json       {"collection": "<name>"}, replaced atomically by set_live()

One process per path: an EdgeShard holds a lock on its WAL, and a second opener (another
process, or a second EdgeVectorIndex in this one) fails with "Can't init WAL: WouldBlock",
which surfaces here as VectorIndexUnavailable.

Durability: every update goes through the shard's write-ahead log, so an acknowledged upsert
survives a crash without flush(). flush() (also run by close()) writes segments out so the next
open replays less WAL; it costs ~5 ms on a 50k-point shard, so it is not run after every write.

qdrant-edge 0.9.0 does not build HNSW indexes in the background: after a bulk load call
optimize(), or unfiltered search stays a brute-force scan (3.6 ms at 50k points, 512-d).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from memory.vector_index import base
from memory.vector_index.base import VectorIndex, VectorIndexUnavailable, VectorPoint

__all__ = ["EdgeVectorIndex"]

logger = logging.getLogger(__name__)

LIVE_FILE = "LIVE.json"
# Written by EdgeShard.create(); its presence is how we tell a shard directory from leftovers.
_SHARD_MARKER = "edge_config.json"


class _EdgeFilters(base.QdrantFilters):
    def eq(self, key: str, value: str | int | bool) -> qe.FieldCondition:
        if isinstance(value, bool):
            # qdrant-edge 0.9.0 converts a Python bool to the int 1/0 (bool subclasses int), which
            # never matches a JSON true/false; numpy's bool_ is not an int and arrives as a bool.
            return qe.FieldCondition(key=key, match=qe.MatchValue(np.bool_(value)))
        return super().eq(key, value)


class _OpenShard:
    def __init__(self, shard: qe.EdgeShard, dim: int) -> None:
        self.shard = shard
        self.dim = dim
        # Projections call ensure_collection() on every write; check the indexes once per open.
        self.indexes_checked = False


class EdgeVectorIndex(VectorIndex):
    filter_builder = _EdgeFilters(qe, qe.RangeFloat)

    def __init__(self, path: str | Path) -> None:
        self._root = Path(path)
        self._root.mkdir(parents=True, exist_ok=True)
        # One lock for everything: shards are opened lazily and may be closed or dropped by
        # another thread, and queries take well under a millisecond, so serialising is cheap.
        self._lock = threading.RLock()
        self._shards: dict[str, _OpenShard] = {}
        self._closed = False
        # LIVE.json is re-read when its inode/mtime changes, so a pointer switched by another
        # process (e.g. a rebuild command writing a new collection) is picked up.
        self._live: str | None = None
        self._live_stamp: tuple[int, int] | None = None

    # ---------------------------------------------------------------- collections

    def ensure_collection(self, name: str, dim: int) -> None:
        base.check_collection_name(name)
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        with self._lock:
            self._check_open()
            path = self._root / name
            if name not in self._shards and not (path / _SHARD_MARKER).exists():
                config = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine))
                with _unavailable_on_error(f"create collection {name}"):
                    self._shards[name] = _OpenShard(qe.EdgeShard.create(str(path), config), dim)
                logger.info("vector index: created collection %s (dim=%d)", name, dim)
            opened = self._open(name)
            if opened.dim != dim:
                raise ValueError(f"collection {name} has dimension {opened.dim}, not {dim}")
            # Also run for an existing shard: a crash between create() and here leaves no indexes.
            if not opened.indexes_checked:
                self._ensure_payload_indexes(opened.shard)
                opened.indexes_checked = True

    def collections(self) -> list[str]:
        with self._lock:
            self._check_open()
            with _unavailable_on_error("list collections"):
                return sorted(p.name for p in self._root.iterdir() if (p / _SHARD_MARKER).exists())

    def drop_collection(self, name: str) -> None:
        base.check_collection_name(name)
        with self._lock:
            self._check_open()
            opened = self._shards.pop(name, None)
            with _unavailable_on_error(f"drop collection {name}"):
                if opened is not None:
                    opened.shard.close()
                if self.live_collection() == name:
                    (self._root / LIVE_FILE).unlink(missing_ok=True)
                    self._live, self._live_stamp = None, None
                if (self._root / name).exists():
                    shutil.rmtree(self._root / name)
            logger.info("vector index: dropped collection %s", name)

    def live_collection(self) -> str | None:
        with self._lock:
            self._check_open()
            live_path = self._root / LIVE_FILE
            try:
                st = live_path.stat()
            except FileNotFoundError:
                self._live, self._live_stamp = None, None
                return None
            except OSError as exc:
                raise VectorIndexUnavailable(f"cannot read {LIVE_FILE}") from exc
            stamp = (st.st_ino, st.st_mtime_ns)
            if stamp != self._live_stamp:
                try:
                    self._live = json.loads(live_path.read_text(encoding="utf-8"))["collection"]
                except (OSError, ValueError, KeyError, TypeError) as exc:
                    raise VectorIndexUnavailable(f"cannot read {LIVE_FILE}") from exc
                self._live_stamp = stamp
            return self._live

    def set_live(self, name: str) -> None:
        base.check_collection_name(name)
        with self._lock:
            self._check_open()
            if name not in self._shards and not (self._root / name / _SHARD_MARKER).exists():
                raise ValueError(f"collection {name} does not exist")
            with _unavailable_on_error(f"write {LIVE_FILE}"):
                _write_atomically(self._root / LIVE_FILE, json.dumps({"collection": name}))
            self._live_stamp = None  # force a re-read, which also records the new stamp
            logger.info("vector index: live collection is now %s", name)

    # ---------------------------------------------------------------- points

    def upsert(self, points: list[VectorPoint], *, collection: str | None = None) -> None:
        if not points:
            return
        with self._lock:
            opened = self._resolve(collection)
            edge_points = [
                qe.Point(base.check_point_id(p.point_id), base.vector_as_list(p.vector, opened.dim), dict(p.payload))
                for p in points
            ]
            with _unavailable_on_error("upsert"):
                opened.shard.update(qe.UpdateOperation.upsert_points(edge_points))

    def delete(self, point_ids: list[int], *, collection: str | None = None) -> None:
        if not point_ids:
            return
        ids = [base.check_point_id(i) for i in point_ids]
        with self._lock:
            opened = self._resolve(collection)
            with _unavailable_on_error("delete"):
                opened.shard.update(qe.UpdateOperation.delete_points(ids))

    def _query(self, vector: np.ndarray | Sequence[float], flt: qe.Filter | None, *, limit: int, collection: str | None,
               with_payload: bool) -> list[qe.ScoredPoint]:
        with self._lock:
            opened = self._resolve(collection)
            request = qe.QueryRequest(
                limit=limit,
                query=qe.Query.Nearest(base.vector_as_list(vector, opened.dim)),
                filter=flt,
                with_payload=with_payload,
                with_vector=False,
            )
            with _unavailable_on_error("search"):
                return opened.shard.query(request)

    def _query_many(self, vectors: list, flt: qe.Filter | None, *, limit: int, collection: str | None,
                    with_payload: bool) -> list[list[qe.ScoredPoint]]:
        if len(vectors) < 2:
            return [self._query(v, flt, limit=limit, collection=collection, with_payload=with_payload) for v in vectors]
        with self._lock:
            opened = self._resolve(collection)
            # One planned batch: searches that differ only in their vector share one pass over the segments.
            batch = qe.QueryBatchRequest([
                qe.QueryRequest(limit=limit, query=qe.Query.Nearest(base.vector_as_list(v, opened.dim)), filter=flt,
                                with_payload=with_payload, with_vector=False) for v in vectors])
            with _unavailable_on_error("search"):
                return opened.shard.query_batch(batch)

    def _scroll_page(self, name: str, flt: qe.Filter | None, *, offset: Any, limit: int) -> tuple[list[qe.Record], Any]:
        # The lock is taken per page, never across a yield, so a slow consumer blocks nobody.
        with self._lock:
            opened = self._resolve(name)
            with _unavailable_on_error("scroll"):
                return opened.shard.scroll(
                    qe.ScrollRequest(offset=offset, limit=limit, filter=flt, with_payload=True, with_vector=False)
                )

    def _count(self, collection: str | None, flt: qe.Filter | None) -> int:
        with self._lock:
            opened = self._resolve(collection)
            with _unavailable_on_error("count"):
                return int(opened.shard.count(qe.CountRequest(exact=True, filter=flt)))

    # ---------------------------------------------------------------- maintenance

    def flush(self, *, collection: str | None = None) -> None:
        """Write pending segment changes to disk (the WAL already makes updates durable)."""
        with self._lock:
            opened = self._resolve(collection)
            with _unavailable_on_error("flush"):
                opened.shard.flush()

    def optimize(self, *, collection: str | None = None) -> None:
        """Build HNSW/segment indexes; blocks (about 22 s for 50k x 512-d on 2 cores)."""
        with self._lock:
            opened = self._resolve(collection)
            with _unavailable_on_error("optimize"):
                opened.shard.optimize()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            shards, self._shards = self._shards, {}
            for name, opened in shards.items():
                try:
                    opened.shard.flush()
                    opened.shard.close()
                except Exception:  # closing the others matters more than reporting this one
                    logger.exception("vector index: failed to close collection %s", name)

    # ---------------------------------------------------------------- internals

    def _check_open(self) -> None:
        if self._closed:
            raise VectorIndexUnavailable("edge vector index is closed")

    def _resolve_name(self, collection: str | None) -> str:
        if collection is not None:
            return collection
        live = self.live_collection()
        if live is None:
            raise VectorIndexUnavailable("no live collection is set")
        return live

    def _resolve(self, collection: str | None) -> _OpenShard:
        with self._lock:
            self._check_open()
            return self._open(self._resolve_name(collection))

    def _open(self, name: str) -> _OpenShard:
        """Return the open shard for ``name``, loading it from disk on first use. Caller holds the lock."""
        opened = self._shards.get(name)
        if opened is not None:
            return opened
        base.check_collection_name(name)
        path = self._root / name
        if not (path / _SHARD_MARKER).exists():
            raise VectorIndexUnavailable(f"collection {name} does not exist")
        with _unavailable_on_error(f"open collection {name}"):
            dim = _read_dim(path)
            opened = _OpenShard(qe.EdgeShard.load(str(path)), dim)
        self._shards[name] = opened
        return opened

    @staticmethod
    def _ensure_payload_indexes(shard: qe.EdgeShard) -> None:
        with _unavailable_on_error("create payload indexes"):
            existing = set(shard.info().payload_schema)
            for field in base.KEYWORD_INDEX_FIELDS:
                if field not in existing:
                    params = qe.KeywordIndexParams(is_tenant=field == base.TENANT_FIELD)
                    shard.update(qe.UpdateOperation.create_field_index(field, params))
            for field in base.INTEGER_INDEX_FIELDS:
                if field not in existing:
                    params = qe.IntegerIndexParams(lookup=True, range=False)
                    shard.update(qe.UpdateOperation.create_field_index(field, params))


@contextmanager
def _unavailable_on_error(action: str) -> Iterator[None]:
    """qdrant-edge raises bare ``Exception`` for every failure (closed shard, WAL lock, I/O)."""
    try:
        yield
    except (ValueError, TypeError, VectorIndexUnavailable):
        raise  # our own input checks and argument conversion errors are bugs, not outages
    except Exception as exc:
        raise VectorIndexUnavailable(f"qdrant-edge failed to {action}: {exc}") from exc


def _read_dim(path: Path) -> int:
    # The shard writes its config as JSON; the default (unnamed) vector is stored under "".
    try:
        config = json.loads((path / _SHARD_MARKER).read_text(encoding="utf-8"))
        return int(config["vectors"][""]["size"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise VectorIndexUnavailable(f"cannot read {path.name}/{_SHARD_MARKER}") from exc


def _write_atomically(target: Path, text: str) -> None:
    # Readers see either the old file or the new one, never a torn write.
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # make the rename itself durable
    finally:
        os.close(dir_fd)
