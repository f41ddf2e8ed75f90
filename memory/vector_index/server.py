"""Vector index on a Qdrant server through qdrant-client (production), or its local mode (tests).

The live pointer is a native collection alias (``live_alias``, default ``"memories"``), so
``collection=None`` passes the alias straight to Qdrant and switching collections is one
atomic alias update. qdrant-client's local mode (``url=":memory:"``) supports aliases too.

Local mode is a pure-Python store: payload indexes have no effect there and it slows down past
~20k points (STACK.md), so use it only to test this adapter.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import httpx
import numpy as np
from qdrant_client import QdrantClient
from qdrant_client import models as qm
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from memory.vector_index import base
from memory.vector_index.base import VectorIndex, VectorIndexUnavailable, VectorPoint

__all__ = ["QdrantServerIndex"]

logger = logging.getLogger(__name__)

# Client errors that mean "try again later" rather than "the request is wrong".
_RETRYABLE_STATUS = frozenset({404, 408, 409, 423, 429})


class QdrantServerIndex(VectorIndex):
    filter_builder = base.QdrantFilters(qm, qm.Range)

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        *,
        live_alias: str = "memories",
        timeout: int = 5,
    ) -> None:
        base.check_collection_name(live_alias)
        self._alias = live_alias
        self._local = url == ":memory:"
        if self._local:
            self._client = QdrantClient(":memory:")
        else:
            # A short timeout so a dead server fails the request fast and the caller degrades;
            # no compatibility check, because it would make a network call in the constructor.
            self._client = QdrantClient(url=url, api_key=api_key, timeout=timeout, check_compatibility=False)
        self._closed = False
        self._ensured: dict[str, int] = {}  # collection -> dim, checked with indexes in this process
        # httpx clients are thread-safe; the lock only guards close() against concurrent use.
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- collections

    def ensure_collection(self, name: str, dim: int) -> None:
        base.check_collection_name(name)
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        with self._guard(f"ensure collection {name}"):
            exists = self._client.collection_exists(name)
            if exists and self._ensured.get(name) == dim:
                # Projections call this on every write: one round trip, not eight, once checked.
                return
            if not exists:
                try:
                    self._client.create_collection(
                        name, vectors_config=qm.VectorParams(size=dim, distance=qm.Distance.COSINE)
                    )
                    logger.info("vector index: created collection %s (dim=%d)", name, dim)
                except UnexpectedResponse as exc:
                    if exc.status_code != 409:  # 409: another process created it meanwhile
                        raise
            existing_dim = _vector_size(self._client.get_collection(name).config.params.vectors)
        if existing_dim != dim:
            raise ValueError(f"collection {name} has dimension {existing_dim}, not {dim}")
        self._ensure_payload_indexes(name)
        self._ensured[name] = dim

    def collections(self) -> list[str]:
        with self._guard("list collections"):
            return sorted(c.name for c in self._client.get_collections().collections)

    def drop_collection(self, name: str) -> None:
        base.check_collection_name(name)
        with self._guard(f"drop collection {name}"):
            # Remove our alias explicitly rather than rely on the server dropping it with the collection.
            if self._live_target() == name:
                self._client.update_collection_aliases(
                    [qm.DeleteAliasOperation(delete_alias=qm.DeleteAlias(alias_name=self._alias))]
                )
            self._client.delete_collection(name)
            self._ensured.pop(name, None)
        logger.info("vector index: dropped collection %s", name)

    def live_collection(self) -> str | None:
        with self._guard("read aliases"):
            return self._live_target()

    def set_live(self, name: str) -> None:
        base.check_collection_name(name)
        with self._guard(f"set live collection {name}"):
            if not self._client.collection_exists(name):
                raise ValueError(f"collection {name} does not exist")
            operations: list[qm.AliasOperations] = []
            if self._live_target() is not None:
                operations.append(qm.DeleteAliasOperation(delete_alias=qm.DeleteAlias(alias_name=self._alias)))
            operations.append(
                qm.CreateAliasOperation(create_alias=qm.CreateAlias(collection_name=name, alias_name=self._alias))
            )
            # One request: the server applies delete + create atomically, so readers never miss the alias.
            self._client.update_collection_aliases(operations)
        logger.info("vector index: live collection is now %s", name)

    # ---------------------------------------------------------------- points

    def upsert(self, points: list[VectorPoint], *, collection: str | None = None) -> None:
        if not points:
            return
        structs = [
            qm.PointStruct(id=base.check_point_id(p.point_id), vector=base.vector_as_list(p.vector), payload=dict(p.payload))
            for p in points
        ]
        with self._guard("upsert"):
            self._client.upsert(self._target(collection), points=structs, wait=True)

    def delete(self, point_ids: list[int], *, collection: str | None = None) -> None:
        if not point_ids:
            return
        ids = [base.check_point_id(i) for i in point_ids]
        with self._guard("delete"):
            self._client.delete(self._target(collection), points_selector=qm.PointIdsList(points=ids), wait=True)

    def _query(self, vector: np.ndarray | Sequence[float], flt: qm.Filter | None, *, limit: int, collection: str | None,
               with_payload: bool) -> list[qm.ScoredPoint]:
        query = base.vector_as_list(vector)
        with self._guard("search"):
            response = self._client.query_points(
                self._target(collection),
                query=query,
                query_filter=flt,
                limit=limit,
                with_payload=with_payload,
                with_vectors=False,
            )
        return response.points

    def _resolve_name(self, collection: str | None) -> str:
        with self._guard("read aliases"):
            # The real collection, not the alias: the alias may move to a new collection mid-scroll.
            name = base.check_collection_name(collection) if collection is not None else self._live_target()
        if name is None:
            raise VectorIndexUnavailable("no live collection is set")
        return name

    def _scroll_page(self, name: str, flt: qm.Filter | None, *, offset: Any, limit: int) -> tuple[list[qm.Record], Any]:
        with self._guard("scroll"):
            return self._client.scroll(name, scroll_filter=flt, limit=limit, offset=offset, with_payload=True, with_vectors=False)

    def _count(self, collection: str | None, flt: qm.Filter | None) -> int:
        with self._guard("count"):
            return int(self._client.count(self._target(collection), count_filter=flt, exact=True).count)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._client.close()
            except Exception:  # nothing useful to do: the client is being discarded anyway
                logger.exception("vector index: error while closing the qdrant client")

    # ---------------------------------------------------------------- internals

    def _target(self, collection: str | None) -> str:
        return self._alias if collection is None else base.check_collection_name(collection)

    def _live_target(self) -> str | None:
        for alias in self._client.get_aliases().aliases:
            if alias.alias_name == self._alias:
                return alias.collection_name
        return None

    def _ensure_payload_indexes(self, name: str) -> None:
        schemas: dict[str, qm.PayloadSchemaType | qm.KeywordIndexParams | qm.IntegerIndexParams] = {}
        for field in base.KEYWORD_INDEX_FIELDS:
            schemas[field] = (
                qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, is_tenant=True)
                if field == base.TENANT_FIELD
                else qm.PayloadSchemaType.KEYWORD
            )
        for field in base.INTEGER_INDEX_FIELDS:
            schemas[field] = qm.IntegerIndexParams(type=qm.IntegerIndexType.INTEGER, lookup=True, range=False)
        for field, schema in schemas.items():
            if self._local:
                # Local mode ignores payload indexes and warns about it; nothing to gain here.
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        self._client.create_payload_index(name, field, field_schema=schema, wait=True)
                except Exception:
                    logger.debug("vector index: local mode refused payload index %s", field)
                continue
            with self._guard(f"create payload index {field}"):
                # Idempotent on the server: re-creating an existing index is accepted.
                self._client.create_payload_index(name, field, field_schema=schema, wait=True)

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        if self._closed:
            raise VectorIndexUnavailable("qdrant index is closed")
        try:
            yield
        except VectorIndexUnavailable:
            raise
        except UnexpectedResponse as exc:
            if exc.status_code is not None and 400 <= exc.status_code < 500 and exc.status_code not in _RETRYABLE_STATUS:
                raise ValueError(f"qdrant rejected {action}: HTTP {exc.status_code}") from exc
            raise VectorIndexUnavailable(f"qdrant failed to {action}: HTTP {exc.status_code}") from exc
        except (ResponseHandlingException, httpx.HTTPError, OSError) as exc:
            raise VectorIndexUnavailable(f"qdrant unreachable during {action}: {exc}") from exc
        except RuntimeError as exc:  # local mode after close()
            raise VectorIndexUnavailable(f"qdrant failed to {action}: {exc}") from exc
        except ValueError as exc:
            # Local mode reports a missing collection/alias as ValueError; the server answers 404.
            if "not found" in str(exc):
                raise VectorIndexUnavailable(f"qdrant failed to {action}: {exc}") from exc
            raise


def _vector_size(vectors: Any) -> int:
    if isinstance(vectors, qm.VectorParams):
        return int(vectors.size)
    # Named vectors: we only ever create the default (unnamed) one.
    return int(vectors[""].size)
