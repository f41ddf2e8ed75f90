"""What an extractor is shown beside the message: the user's standing memories (with short ids, so
an LLM can name one to update) and the conversation's last turns."""
from conversations.models import Message
from conversations.selectors import turns_before
from memory.choices import MemoryKind, MemoryScope, MemoryStatus
from memory.models import Memory
from memory.selectors.backlog import EXTRACTABLE_ROLES

EXISTING_SHOWN = 20  # memories shown to the extractor (with short ids) for update/supersede decisions
RECENT_TURNS = 4


def existing_for(message: Message) -> tuple[list, dict[int, int]]:
    from memory.extraction import ExistingMemory

    rows = list(Memory.objects.filter(org_id=message.org_id, user_id=message.user_id, status=MemoryStatus.ACTIVE, scope=MemoryScope.USER)
                .exclude(kind=MemoryKind.EPISODE).order_by("-id").values_list("id", "kind", "content", "slot_key")[:EXISTING_SHOWN])
    shown, short_to_id = [], {}
    for short_id, (memory_id, kind, content, slot_key) in enumerate(rows, start=1):
        shown.append(ExistingMemory(short_id=short_id, kind=kind, content=content, slot_key=slot_key))
        short_to_id[short_id] = memory_id
    return shown, short_to_id


def recent_turns(message: Message) -> list[tuple[str, str]]:
    return [(role, content) for _, role, content in turns_before(
        conversation_id=message.conversation_id, before_seq=message.seq, roles=EXTRACTABLE_ROLES, limit=RECENT_TURNS)]
