"""The vector-index port: one small ABC, one module per backend (edge.py, server.py).

The index is a projection of MySQL, so everything here can be dropped and rebuilt. A
collection holds the vectors of one embedding model (see ``memory.embeddings.collection_name_for``);
a "live" pointer selects the collection that reads and writes use when ``collection=None``,
so a rebuild can fill a new collection and switch over in one step.

Distance is cosine. Vectors arrive already L2-normalised, so scores are cosine similarities.

Filter language
---------------
``filters`` is a dict of payload key -> condition. All conditions must hold (AND):

- scalar (str, int, bool): equality, ``{"org": "acme", "user_id": "u1"}``.
  A float scalar is treated as the range ``gte == lte == value``.
- list of str or of int: any-of, ``{"kind": ["fact", "event"]}``. On a list-valued payload
  field (``entity_ids: [3, 7]``) a point matches when any of its values is in the list, as in
  Qdrant. An empty list matches nothing.
- dict with any of ``gte``, ``gt``, ``lte``, ``lt``: numeric range, ``{"created_ts": {"gte": 1.7e9}}``.
- the special key ``"must_not"``: a dict of the same form (without a nested ``must_not``).
  A point is excluded when *any* of its conditions matches (Qdrant's ``must_not``), so
  ``{"must_not": {"status": "archived", "kind": "event"}}`` drops archived points and events.

Payload values are str, int, float, bool, or lists of str/int. Anything else raises ValueError:
a malformed filter is a bug, never a reason to retry.

Errors
------
Adapters raise ``VectorIndexUnavailable`` for every backend failure (closed index, dead server,
I/O error, missing collection or live pointer), so the read path can degrade to keyword search
and Celery tasks can retry. Bad input (wrong vector dimension, malformed filters) raises
ValueError instead.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

__all__ = [
    "FilterBuilder",
    "QdrantFilters",
    "KEYWORD_INDEX_FIELDS",
    "INTEGER_INDEX_FIELDS",
    "TENANT_FIELD",
    "VectorHit",
    "VectorIndex",
    "VectorIndexUnavailable",
    "VectorPoint",
    "build_filter",
    "check_collection_name",
    "check_point_id",
    "vector_as_list",
]

# Payload fields that get a payload index, so filtered search stays fast at ~1M points.
KEYWORD_INDEX_FIELDS: tuple[str, ...] = ("org", "user_id", "owner", "kind", "status")
INTEGER_INDEX_FIELDS: tuple[str, ...] = ("entity_ids",)
# Qdrant co-locates points of one tenant when the keyword index is marked is_tenant.
TENANT_FIELD = "org"

_RANGE_KEYS = frozenset({"gte", "gt", "lte", "lt"})


class VectorIndexUnavailable(Exception):
    """The backend cannot serve the call now (closed, unreachable, I/O error, missing collection)."""


@dataclass
class VectorPoint:
    point_id: int
    vector: np.ndarray | list[float]
    payload: dict[str, Any]


@dataclass
class VectorHit:
    point_id: int
    score: float
    payload: dict[str, Any]


class VectorIndex(ABC):
    """A vector store with named collections and a live-collection pointer.

    ``collection=None`` always means the live collection.

    search(), scroll() and count() are the same for every backend: translate the filter language,
    ask the backend, turn its points into hits. They live here; an adapter gives its filter builder
    (``filter_builder``) and the backend calls (``_query``, ``_resolve_name``, ``_scroll_page``, ``_count``).
    """

    filter_builder: FilterBuilder[Any, Any]

    @abstractmethod
    def ensure_collection(self, name: str, dim: int) -> None:
        """Create the collection (cosine, ``dim``) with payload indexes; no-op if it exists.

        Raises ValueError if it exists with another dimension.
        """

    @abstractmethod
    def upsert(self, points: list[VectorPoint], *, collection: str | None = None) -> None: ...

    @abstractmethod
    def delete(self, point_ids: list[int], *, collection: str | None = None) -> None:
        """Delete points; ids that are not there are ignored."""

    def search(
        self,
        vector: np.ndarray | Sequence[float],
        *,
        filters: Mapping[str, Any],
        limit: int,
        collection: str | None = None,
        with_payload: bool = True,
    ) -> list[VectorHit]:
        flt = build_filter(filters, self.filter_builder)
        scored = self._query(vector, flt, limit=limit, collection=collection, with_payload=with_payload)
        return [VectorHit(int(p.id), float(p.score), dict(p.payload or {})) for p in scored]

    def search_many(
        self,
        vectors: Sequence[np.ndarray | Sequence[float]],
        *,
        filters: Mapping[str, Any],
        limit: int,
        collection: str | None = None,
        with_payload: bool = True,
    ) -> list[list[VectorHit]]:
        """`search` for several query vectors under one filter: one list of hits per vector, in order."""
        flt = build_filter(filters, self.filter_builder)
        batches = self._query_many(list(vectors), flt, limit=limit, collection=collection, with_payload=with_payload)
        return [[VectorHit(int(p.id), float(p.score), dict(p.payload or {})) for p in scored] for scored in batches]

    def _query_many(self, vectors: list, flt: Any, *, limit: int, collection: str | None,
                    with_payload: bool) -> list[Sequence[Any]]:
        """One `_query` per vector; a backend with a batch call plans them together."""
        return [self._query(v, flt, limit=limit, collection=collection, with_payload=with_payload) for v in vectors]

    def scroll(
        self,
        *,
        collection: str | None = None,
        filters: Mapping[str, Any] | None = None,
        batch: int = 1000,
    ) -> Iterator[tuple[int, dict[str, Any]]]:
        """Yield (point id, payload) for every matching point, for reconciliation with MySQL."""
        flt = build_filter(filters, self.filter_builder)
        name = self._resolve_name(collection)  # pin the collection: the live pointer may move mid-scroll
        offset: Any = None
        while True:
            records, offset = self._scroll_page(name, flt, offset=offset, limit=batch)
            for record in records:
                yield int(record.id), dict(record.payload or {})
            if offset is None:
                return

    def count(self, *, collection: str | None = None, filters: Mapping[str, Any] | None = None) -> int:
        return self._count(collection, build_filter(filters, self.filter_builder))

    @abstractmethod
    def live_collection(self) -> str | None: ...

    @abstractmethod
    def set_live(self, name: str) -> None:
        """Point the live pointer at an existing collection (ValueError if it does not exist)."""

    @abstractmethod
    def collections(self) -> list[str]: ...

    @abstractmethod
    def drop_collection(self, name: str) -> None:
        """Drop a collection (no-op if missing); dropping the live one clears the live pointer."""

    @abstractmethod
    def close(self) -> None: ...

    def optimize(self, *, collection: str | None = None) -> None:
        """Build vector indexes after a bulk load. A server optimises in the background: no-op."""

    # ---------------------------------------------------------------- the backend calls

    @abstractmethod
    def _query(self, vector: np.ndarray | Sequence[float], flt: Any, *, limit: int, collection: str | None,
               with_payload: bool) -> Sequence[Any]:
        """The nearest points, best first, as the backend returns them (``id``, ``score``, ``payload``)."""

    @abstractmethod
    def _resolve_name(self, collection: str | None) -> str:
        """The collection a call reaches: ``collection`` itself, or the one the live pointer names now."""

    @abstractmethod
    def _scroll_page(self, name: str, flt: Any, *, offset: Any, limit: int) -> tuple[Sequence[Any], Any]:
        """One page of points (``id``, ``payload``) and the offset of the next page (None after the last)."""

    @abstractmethod
    def _count(self, collection: str | None, flt: Any) -> int: ...


# --------------------------------------------------------------------------------------------
# Shared helpers for adapters
# --------------------------------------------------------------------------------------------


_COLLECTION_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,127}")


def check_collection_name(name: str) -> str:
    # Edge collections are directory names, so keep them to a portable lowercase alphabet.
    if not isinstance(name, str) or not _COLLECTION_NAME.fullmatch(name):
        raise ValueError(f"collection name must match {_COLLECTION_NAME.pattern}, got {name!r}")
    return name


def vector_as_list(vector: np.ndarray | Sequence[float], dim: int | None = None) -> list[float]:
    """Both clients want plain float lists; check the dimension here so a wrong model is a ValueError."""
    values = np.asarray(vector, dtype=np.float32).reshape(-1)
    if dim is not None and values.shape[0] != dim:
        raise ValueError(f"vector has dimension {values.shape[0]}, collection expects {dim}")
    return values.tolist()


def check_point_id(point_id: int) -> int:
    # Qdrant ids are unsigned integers (or UUIDs, which we do not use); bool is an int subclass.
    if isinstance(point_id, bool) or not isinstance(point_id, (int, np.integer)) or point_id < 0:
        raise ValueError(f"point id must be a non-negative int, got {point_id!r}")
    return int(point_id)


F = TypeVar("F")  # the backend's filter type
C = TypeVar("C")  # the backend's condition type


class FilterBuilder(ABC, Generic[F, C]):
    """Turns the dict filter language into one backend's filter objects."""

    @abstractmethod
    def eq(self, key: str, value: str | int | bool) -> C: ...

    @abstractmethod
    def any_of(self, key: str, values: list[str] | list[int]) -> C: ...

    @abstractmethod
    def range(self, key: str, bounds: dict[str, float]) -> C: ...

    @abstractmethod
    def combine(self, must: list[C], must_not: list[C]) -> F: ...


class QdrantFilters(FilterBuilder[Any, Any]):
    """The filter language in Qdrant's models. qdrant-client (``qdrant_client.models``) and qdrant-edge
    (``qdrant_edge``) name them alike, so one builder serves both: ``models`` is the module and
    ``range_type`` its float range (``Range``, ``RangeFloat``)."""

    def __init__(self, models: Any, range_type: type) -> None:
        self._models = models
        self._range_type = range_type

    def eq(self, key: str, value: str | int | bool) -> Any:
        return self._models.FieldCondition(key=key, match=self._models.MatchValue(value=value))

    def any_of(self, key: str, values: list[str] | list[int]) -> Any:
        return self._models.FieldCondition(key=key, match=self._models.MatchAny(any=values))

    def range(self, key: str, bounds: dict[str, float]) -> Any:
        return self._models.FieldCondition(key=key, range=self._range_type(**bounds))

    def combine(self, must: list[Any], must_not: list[Any]) -> Any:
        return self._models.Filter(must=must or None, must_not=must_not or None)


def build_filter(filters: Mapping[str, Any] | None, builder: FilterBuilder[F, C]) -> F | None:
    if not filters:
        return None
    must = _conditions(filters, builder, allow_must_not=True)
    must_not_spec = filters.get("must_not") or {}
    if not isinstance(must_not_spec, Mapping):
        raise ValueError("must_not must be a dict of conditions")
    must_not = _conditions(must_not_spec, builder, allow_must_not=False)
    if not must and not must_not:
        return None
    return builder.combine(must, must_not)


def _conditions(spec: Mapping[str, Any], builder: FilterBuilder[F, C], *, allow_must_not: bool) -> list[C]:
    conditions: list[C] = []
    for key, value in spec.items():
        if key == "must_not":
            if not allow_must_not:
                raise ValueError("must_not cannot be nested")
            continue
        if not isinstance(key, str) or not key:
            raise ValueError(f"filter key must be a non-empty str, got {key!r}")
        conditions.append(_condition(key, value, builder))
    return conditions


def _condition(key: str, value: Any, builder: FilterBuilder[F, C]) -> C:
    if isinstance(value, (bool, np.bool_)):
        return builder.eq(key, bool(value))
    if isinstance(value, (str, int, np.integer)):
        return builder.eq(key, value if isinstance(value, str) else int(value))
    if isinstance(value, (float, np.floating)):
        # Qdrant has no float equality match; a closed range is the same thing.
        return builder.range(key, {"gte": float(value), "lte": float(value)})
    if isinstance(value, (list, tuple)):
        if not value:
            return builder.any_of(key, [])  # both backends match nothing on an empty any-of
        if all(isinstance(v, str) for v in value):
            return builder.any_of(key, list(value))
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in value):
            return builder.any_of(key, [int(v) for v in value])
        raise ValueError(f"any-of filter on {key!r} must be a list of str or a list of int")
    if isinstance(value, Mapping):
        unknown = set(value) - _RANGE_KEYS
        if unknown or not value:
            raise ValueError(f"range filter on {key!r} takes gte/gt/lte/lt, got {sorted(value)}")
        bounds = {}
        for bound, limit in value.items():
            if limit is None:
                continue
            if isinstance(limit, bool) or not isinstance(limit, (int, float, np.integer, np.floating)):
                raise ValueError(f"range bound {key}.{bound} must be a number")
            bounds[bound] = float(limit)
        return builder.range(key, bounds)
    raise ValueError(f"unsupported filter value for {key!r}: {type(value).__name__}")
