"""The record of a Mem0 add (`POST /v1/memories/`): one row per add, whose id is the event the client
polls (memory/mem0/events.py reads its status from what the add wrote)."""
import uuid

from conversations.models import Conversation
from memory.models import Mem0AddEvent
from tenancy.models import Org


def mem0_add_event_create(*, org: Org, user_id: str, conversation: Conversation, infer: bool, metadata: dict,
                          message_count: int) -> Mem0AddEvent:
    """Called inside the add's transaction, so the event, its conversation and its messages or
    memories commit together."""
    return Mem0AddEvent.objects.create(event_id=uuid.uuid4(), org=org, user_id=user_id, conversation=conversation,
                                       infer=infer, metadata=metadata, message_count=message_count)
