from celery import shared_task


@shared_task(acks_late=True)
def messages_extract(message_ids: list[int]) -> None:
    from memory.services import extraction

    extraction.messages_extract(message_ids=message_ids)
