def on_messages_appended(sender, *, org_id: int, message_ids: list[int], **kwargs) -> None:
    """Queue extraction for freshly committed messages (ids only)."""
    from memory.enqueue import MESSAGES_EXTRACT, enqueue

    enqueue(MESSAGES_EXTRACT, message_ids)


def on_generation_bumped(sender, *, org_id: int, user_id: str, **kwargs) -> None:
    """A write to this user's memories committed here: rebuild their recall snapshot off the request
    path, if this process keeps one (memory/recall/snapshot.py)."""
    from django.conf import settings

    if settings.RECALL_CORPUS["refresh"]:
        from memory.recall.snapshot_cache import refresh_soon

        refresh_soon(org_id, user_id)
