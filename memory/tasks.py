"""Thin Celery wrappers: take ids, call services/projections, retry transient backend failures."""
from celery import shared_task

from memory.vector_index import VectorIndexUnavailable


@shared_task(acks_late=True, autoretry_for=(VectorIndexUnavailable, ConnectionError), retry_backoff=True,
             retry_backoff_max=60, max_retries=10)
def memory_sync(memory_id: int, version: int, collection: str | None = None) -> str:
    from memory import projections

    return projections.memory_sync(memory_id=memory_id, version=version, collection_name=collection)


@shared_task(acks_late=True, autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=8)
def messages_extract(message_ids: list[int], reextract: bool = False) -> None:
    from memory.services import extraction

    extraction.messages_extract(message_ids=message_ids, reextract=reextract)


@shared_task(ignore_result=True)
def memory_touch(memory_ids: list[int], at: str | None = None) -> None:
    from django.utils.dateparse import parse_datetime

    from memory.services import memory_touch as touch

    touch(memory_ids=memory_ids, at=parse_datetime(at) if at else None)


@shared_task(acks_late=True, autoretry_for=(ConnectionError,), retry_backoff=True, max_retries=8)
def forget_request_execute(request_id: int) -> None:
    from memory.services.forget import forget_request_execute as execute

    execute(request_id=request_id)


# Maintenance (memory.maintenance). In the embedded topology these must run in the process that owns
# the vector shard; with a Qdrant server any worker can.
RECONCILE_GRACE_SECONDS = 30  # rows written this recently are left to their own memory_sync tasks
RECONCILE_LOCK_SECONDS = 15 * 60


@shared_task(ignore_result=True)
def projections_reconcile_task(collection: str | None = None, fix: bool = True) -> dict:
    # No retry: beat runs this again in 5 minutes, and a run that overlaps another is skipped.
    from memory import maintenance

    with maintenance.single_flight("projections_reconcile", timeout=RECONCILE_LOCK_SECONDS) as acquired:
        if not acquired:
            return {"skipped": "already running"}
        return maintenance.projections_reconcile(collection=collection, fix=fix, grace_seconds=RECONCILE_GRACE_SECONDS)


@shared_task(ignore_result=True)
def extraction_resume_task() -> int:
    from memory import maintenance

    return maintenance.extraction_resume()


@shared_task(ignore_result=True)
def memories_expire_task() -> int:
    from memory.services.lifecycle import memories_expire

    return memories_expire()


@shared_task(ignore_result=True)
def memories_evict_task() -> int:
    from memory.services.lifecycle import memories_evict

    return memories_evict()
