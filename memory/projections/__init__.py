"""Projections of the system of record: the vector index and the cache follow MySQL.

`rows` syncs one memory (the per-write task), `batch` the shared batch machinery, `reconcile`,
`rebuild` and `reembed` the maintenance runs over the whole store."""
from memory.projections.rows import memories_sync, memory_payload, memory_points_delete, memory_sync

__all__ = ["memories_sync", "memory_payload", "memory_points_delete", "memory_sync"]
