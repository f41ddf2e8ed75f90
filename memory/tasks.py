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
