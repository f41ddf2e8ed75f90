"""Thin Celery wrappers: take ids, call services/projections, retry transient backend failures.

Tasks that touch the vector index use ``VectorTask``: ``config.celery.route_task`` sends them to
``CELERY_VECTOR_QUEUE`` when one is set (the embedded shard on a single node: only the process that
owns it consumes that queue). See docs/architecture.md, Topologies.
"""
import logging

from celery import Task, shared_task

from memory.vector_index import VectorIndexUnavailable

logger = logging.getLogger(__name__)


class VectorTask(Task):
    """A task that opens the vector index.

    A worker that may not open the embedded shard (it does not consume the vector queue) and still
    receives one (queued before the routing existed, or published by hand) sends it on to the vector
    queue instead of failing: a retry would go back to the same queue.
    """

    touches_vectors = True

    def __call__(self, *args, **kwargs):
        from django.conf import settings

        from memory.vector_index import may_open_vector_index

        queue = getattr(settings, "CELERY_VECTOR_QUEUE", "")
        if queue and not self.request.is_eager and not may_open_vector_index():
            logger.warning("task %s delivered to a process without the vector index; forwarded to queue %s",
                           self.name, queue)
            self.apply_async(args, kwargs, queue=queue)
            return None
        return super().__call__(*args, **kwargs)


@shared_task(base=VectorTask, acks_late=True, autoretry_for=(VectorIndexUnavailable, ConnectionError),
             retry_backoff=True, retry_backoff_max=60, max_retries=10)
def memory_sync(memory_id: int, version: int, collection: str | None = None) -> str:
    from memory import projections

    return projections.memory_sync(memory_id=memory_id, version=version, collection_name=collection)


@shared_task(base=VectorTask, acks_late=True, autoretry_for=(VectorIndexUnavailable, ConnectionError),
             retry_backoff=True, retry_backoff_max=60, max_retries=10)
def memories_sync(pairs: list[list[int]], lagging_only: bool = False) -> dict:
    """memory_sync of several [memory id, version] pairs in one pass (a batch of writes). lagging_only
    (the projection sweep's re-queues; optional: queued messages outlive deploys): rows already
    projected at that version are skipped."""
    from memory import projections

    return projections.memories_sync(pairs=[(int(m), int(v)) for m, v in pairs], lagging_only=lagging_only)


@shared_task(base=VectorTask, acks_late=True, autoretry_for=(VectorIndexUnavailable, ConnectionError),
             retry_backoff=True, retry_backoff_max=60, max_retries=10)
def memory_points_delete(memory_ids: list[int]) -> int:
    from memory import projections

    return projections.memory_points_delete(memory_ids=memory_ids)


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


# Maintenance (memory/projections/, memory/jobs/). Those that touch vectors are VectorTasks: in the single-node
# topology they run in the process that owns the embedded shard; with a Qdrant server any worker can.


@shared_task(base=VectorTask, ignore_result=True)
def projections_reconcile_task(collection: str | None = None, fix: bool = True) -> dict:
    # No retry: beat runs this again in 5 minutes, and a run that overlaps another is skipped.
    from memory.jobs.run_records import maintenance_run
    from memory.projections.reconcile import projections_reconcile_once

    return maintenance_run("projections_reconcile", lambda: projections_reconcile_once(
        collection=collection, fix=fix), where="worker")


# Operator runs (`rebuild_projections --enqueue`, `reembed --enqueue`), executed where the embedded shard
# is open. Acknowledged on receipt: they can outlast the broker's visibility timeout, and a redelivered
# copy would run the whole job again; if the process dies midway the operator runs the command again.
# Projection tasks wait behind them on the vector queue.
@shared_task(base=VectorTask, acks_late=False, ignore_result=True)
def projections_rebuild_task(batch: int = 500, optimize: bool = True) -> dict:
    from memory.projections.rebuild import projections_rebuild

    counts = projections_rebuild(batch=batch, optimize=optimize)
    logger.info("rebuild_projections done %s", counts)
    return counts


@shared_task(base=VectorTask, acks_late=False, ignore_result=True)
def reembed_task(model: str, batch: int = 256, optimize: bool = False) -> dict:
    from memory.projections.reembed import reembed

    counts = reembed(model=model, batch=batch, optimize=optimize)
    logger.info("reembed done %s", counts)
    return counts


@shared_task(ignore_result=True)
def extraction_resume_task() -> int:
    from memory.jobs.lost_work_resume import extraction_resume
    from memory.jobs.run_records import maintenance_run

    return maintenance_run("extraction_resume", extraction_resume, where="worker")


@shared_task(ignore_result=True)
def memories_expire_task() -> int:
    from memory.jobs.run_records import maintenance_run
    from memory.services.lifecycle import memories_expire

    return maintenance_run("memories_expire", memories_expire, where="worker")


@shared_task(ignore_result=True)
def memories_evict_task() -> int:
    from memory.jobs.run_records import maintenance_run
    from memory.services.lifecycle import memories_evict

    return maintenance_run("memories_evict", memories_evict, where="worker")


@shared_task(ignore_result=True)
def llm_review_task() -> dict:
    # No retry: the next run (beat, LLM_REVIEW_EVERY_MINUTES) is the retry, and a run stops by itself
    # when the LLM is down. Without an LLM configured it does nothing (and records no run).
    from memory.jobs.run_records import maintenance_run
    from memory.services.llm_review import llm_review_configured, llm_review_run

    if not llm_review_configured():
        return {"skipped": "no_llm"}
    return maintenance_run("llm_review", llm_review_run, where="worker")
