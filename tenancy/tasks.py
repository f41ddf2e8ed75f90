from celery import shared_task


@shared_task
def idempotency_records_purge_task() -> int:
    from tenancy.idempotency import idempotency_records_purge

    return idempotency_records_purge()
