def on_messages_appended(sender, *, org_id: int, message_ids: list[int], **kwargs) -> None:
    """Queue extraction for freshly committed messages (ids only)."""
    from memory.enqueue import MESSAGES_EXTRACT, enqueue

    enqueue(MESSAGES_EXTRACT, message_ids)
