from datetime import datetime

from django.db.models import Min, Q, QuerySet
from django.http import Http404

from common.plain_reads import plain_instances, plain_rows
from conversations.models import Conversation, ConversationAccess, Message, TaskState
from tenancy.models import Org


def conversation_readable_q(user_id: str) -> Q:
    """Conversations a user may read: owned and not revoked, or explicitly granted."""
    revoked = ConversationAccess.objects.filter(user_id=user_id, state=ConversationAccess.REVOKED).values("conversation_id")
    granted = ConversationAccess.objects.filter(user_id=user_id, state=ConversationAccess.GRANTED).values("conversation_id")
    return (Q(owner_user=user_id) & ~Q(id__in=revoked)) | Q(id__in=granted)


def conversation_list(*, org: Org, user_id: str) -> QuerySet[Conversation]:
    return Conversation.objects.filter(org=org).filter(conversation_readable_q(user_id))


def conversation_get(*, org: Org, user_id: str, conversation_id: int) -> Conversation:
    """404 for another org's, unknown or unreadable conversations alike: existence is never revealed.
    The rule of conversation_readable_q on two plain indexed reads (every append and context call runs
    this, and recall with a conversation: even compiling the two ORM lookups cost more than the reads)."""
    if not isinstance(conversation_id, int) or not 0 < conversation_id < 2**63:  # a URL takes any digits: 404, not a 500
        raise Http404
    conversation = next(iter(plain_instances(Conversation, [conversation_id], org=org.id)), None)
    if conversation is None:
        raise Http404
    conversation.org = org  # the one it was read with: no second read when a caller follows the key
    # One row at most (conversation_access_unique).
    state = next(iter(plain_rows(ConversationAccess, ("state",), [conversation.id], key="conversation",
                                 user_id=user_id)), (None,))[0]
    if state == ConversationAccess.GRANTED or (conversation.owner_user == user_id and state != ConversationAccess.REVOKED):
        return conversation
    raise Http404


def conversation_owned(*, org: Org, user_id: str, conversation_id: int) -> Conversation:
    conversation = Conversation.objects.filter(org=org, owner_user=user_id, id=conversation_id).first()
    if conversation is None:
        raise Http404
    return conversation


def readable_conversation_ids(*, org: Org, user_id: str, among: set[int],
                              owners: dict[int, str | None] | None = None) -> set[int]:
    """Which of these conversations of the org the user may read now: the rule of
    conversation_readable_q, applied in Python to two plain indexed reads (recall runs this on every
    call, and the ORM compiling the two subqueries cost more than the reads). The access rows are read
    on every call, so a grant or a revocation applies at once. Owners never change: `owners` is the
    caller's memo of id -> owner (None: no conversation of the org), filled here with what it lacks,
    which the caller may keep (memory/recall/snapshot.py keeps one per snapshot)."""
    if not among:
        return set()
    owners = {} if owners is None else owners
    wanted = [c for c in among if c not in owners]
    if wanted:
        found = dict(plain_rows(Conversation, ("id", "owner_user"), wanted, key="id", org=org.id))
        for conversation_id in wanted:
            owners[conversation_id] = found.get(conversation_id)
    known = {c: owners[c] for c in among if owners[c] is not None}
    if not known:
        return set()
    states = dict(plain_rows(ConversationAccess, ("conversation", "state"), list(known), key="conversation",
                             user_id=user_id))
    return {conversation_id for conversation_id, owner in known.items()
            if states.get(conversation_id) == ConversationAccess.GRANTED
            or (owner == user_id and states.get(conversation_id) != ConversationAccess.REVOKED)}


def message_list(*, conversation: Conversation) -> QuerySet[Message]:
    return Message.objects.filter(conversation=conversation).order_by("seq")


def message_get(*, conversation: Conversation, message_id: int) -> Message:
    message = Message.objects.filter(conversation=conversation, id=message_id).first()
    if message is None:
        raise Http404
    return message


def message_in_org(*, org: Org, message_id: int) -> Message | None:
    """A message by id within the org, whoever may read it: the caller checks readability of its
    conversation (`conversation_get`) before it uses it (a memory's source given by id)."""
    return Message.objects.filter(id=message_id, org=org).select_related("conversation").first()


def messages_unextracted(*, roles, created_before: datetime | None = None) -> QuerySet[Message]:
    """Messages committed but not yet extracted (`extracted_at` NULL, the marker the append writes in
    the message's own transaction) of the given roles, optionally only those older than a time."""
    pending = Message.objects.filter(extracted_at__isnull=True, role__in=roles)
    return pending if created_before is None else pending.filter(created_at__lt=created_before)


def messages_by_ref(*, org_id: int, conversation_id: int, external_ref: str) -> QuerySet[Message]:
    """The messages a client's write tagged with one reference (a Mem0 add's `mem0:<event id>`)."""
    return Message.objects.filter(org_id=org_id, conversation_id=conversation_id, external_ref=external_ref)


def task_state_get(*, conversation: Conversation, key: str) -> TaskState:
    task = TaskState.objects.filter(conversation=conversation, key=key).first()
    if task is None:
        raise Http404
    return task


def task_state_list(*, conversation: Conversation) -> QuerySet[TaskState]:
    return TaskState.objects.filter(conversation=conversation).order_by("key")


def messages_stored(*, conversation: Conversation, messages: list[dict]) -> dict[tuple[str, str], datetime]:
    """(role, content) → first stored time, of those `messages` the conversation already holds unredacted."""
    contents = {m["content"] for m in messages}
    rows = (Message.objects.filter(conversation=conversation, redacted=False, content__in=contents)
            .values("role", "content").annotate(first=Min("created_at")).values_list("role", "content", "first"))
    return {(role, content): first for role, content, first in rows}
