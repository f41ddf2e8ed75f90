def on_messages_appended(sender, *, org_id: int, message_ids: list[int], **kwargs) -> None:
    """Queue extraction for freshly committed messages (ids only)."""
    from memory.enqueue import enqueue
    from memory.tasks import messages_extract as messages_extract_task

    enqueue(messages_extract_task, message_ids)
