"""Vector index backends: the ``VectorIndex`` port, its two adapters and a process-wide instance.

See ``memory.vector_index.base`` for the filter language and the error contract.
"""

from __future__ import annotations

import os
import threading

from memory.vector_index.base import VectorHit, VectorIndex, VectorIndexUnavailable, VectorPoint
from memory.vector_index.edge import EdgeVectorIndex
from memory.vector_index.server import QdrantServerIndex

__all__ = [
    "EdgeVectorIndex",
    "QdrantServerIndex",
    "VectorHit",
    "VectorIndex",
    "VectorIndexUnavailable",
    "VectorPoint",
    "get_vector_index",
    "may_open_vector_index",
    "refuse_embedded_index",
    "reset_vector_index",
]

_lock = threading.Lock()
_instance: VectorIndex | None = None
_instance_pid: int | None = None
# Why this process may not open the embedded shard (None: it may). Set at startup in Celery workers
# that do not consume the vector queue: one process per shard, and on a single node that process is
# the web process (docs/architecture.md, Topologies).
_embedded_refused: str | None = None


def get_vector_index() -> VectorIndex:
    """The process-wide index, built on first use from Django settings.

    ``QDRANT_URL`` set -> Qdrant server (``QDRANT_API_KEY``); otherwise the embedded
    qdrant-edge store under ``VECTOR_INDEX_PATH``.
    """
    global _instance, _instance_pid
    with _lock:
        # A forked child (gunicorn/celery prefork) must not share the parent's HTTP connections
        # or shard handles: it builds its own and leaves the parent's alone.
        if _instance is None or _instance_pid != os.getpid():
            _instance = _build_from_settings()
            _instance_pid = os.getpid()
        return _instance


def refuse_embedded_index(reason: str | None) -> None:
    """From now on this process refuses to open the embedded shard (``None`` allows it again).

    Opening it here would take the shard's lock from its owner, so a call that would open it raises
    ``VectorIndexUnavailable`` instead: every caller already treats that as "index down".
    """
    global _embedded_refused
    _embedded_refused = reason


def may_open_vector_index() -> bool:
    """False in a process that must leave the embedded shard to its owner (a Qdrant server is fine)."""
    from django.conf import settings

    return _embedded_refused is None or bool(getattr(settings, "QDRANT_URL", None))


def reset_vector_index() -> None:
    """Close and forget the process-wide index (tests, settings changes)."""
    global _instance, _instance_pid
    with _lock:
        instance, owner_pid = _instance, _instance_pid
        _instance, _instance_pid = None, None
    if instance is not None and owner_pid == os.getpid():  # never close a parent's handles
        instance.close()


def _build_from_settings() -> VectorIndex:
    from django.conf import settings

    url = getattr(settings, "QDRANT_URL", None)
    if url:
        return QdrantServerIndex(url, getattr(settings, "QDRANT_API_KEY", None))
    if _embedded_refused is not None:
        raise VectorIndexUnavailable(f"this process does not own the embedded shard: {_embedded_refused}")
    return EdgeVectorIndex(getattr(settings, "VECTOR_INDEX_PATH", "var/qdrant"))
