from datetime import datetime

from django.db.models import Min, Q, QuerySet
from django.db.models.functions import Left, Right
from django.http import Http404

from common.plain_reads import plain_instances, plain_rows
from conversations.models import Conversation, ConversationAccess, EntityMention, Message, TaskState
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


# --------------------------------------------------------------------------- what memory reads of messages

def messages_by_id(*, message_ids) -> list[Message]:
    """These messages with their org, in conversation order (extraction's input)."""
    return list(Message.objects.filter(id__in=message_ids).select_related("org").order_by("conversation_id", "seq"))


def message_ids_of(*, conversation_id: int) -> list[int]:
    """Every message id of the conversation, in order."""
    return list(Message.objects.filter(conversation_id=conversation_id).order_by("seq").values_list("id", flat=True))


def turns_before(*, conversation_id: int, before_seq: int, roles, limit: int) -> list[tuple[int, str, str]]:
    """The last `limit` unredacted turns of these roles before `before_seq`, oldest first: (seq, role, content)."""
    rows = list(Message.objects.filter(conversation_id=conversation_id, seq__lt=before_seq, role__in=roles, redacted=False)
                .order_by("-seq").values_list("seq", "role", "content")[:limit])
    rows.reverse()
    return rows


def mentioned_entity_ids(*, message_ids) -> dict[int, list[int]]:
    """message id → the entities its mentions name, in the mentions' order (newest first)."""
    out: dict[int, list[int]] = {}
    for message_id, entity_id in EntityMention.objects.filter(message_id__in=message_ids).values_list("message_id", "entity_id"):
        out.setdefault(message_id, []).append(entity_id)
    return out


def message_external_refs(*, message_ids) -> dict[int, str | None]:
    """message id → the reference the client gave it (`external_ref`)."""
    return dict(Message.objects.filter(id__in=message_ids).values_list("id", "external_ref"))


def messages_created_at(*, message_ids) -> list[datetime]:
    """When each of these messages was stored (one value per message found)."""
    return list(Message.objects.filter(id__in=message_ids).values_list("created_at", flat=True))


def message_ids_created_since(*, message_ids, since: datetime) -> set[int]:
    return set(Message.objects.filter(id__in=message_ids, created_at__gte=since).values_list("id", flat=True))


def message_ids_of_owner(*, org: Org, owner_user: str) -> set[int]:
    """Every message of the conversations the user owns in the org."""
    return set(Message.objects.filter(org=org, conversation__owner_user=owner_user).values_list("id", flat=True))


def assistant_replies(*, message_ids) -> dict[int, int]:
    """assistant message id → the user message it directly answers (the next turn), for these user messages."""
    rows = list(Message.objects.filter(id__in=message_ids, role="user").values_list("id", "conversation_id", "seq"))
    if not rows:
        return {}
    where = Q()
    for _, conversation_id, seq in rows:
        where |= Q(conversation_id=conversation_id, seq=seq + 1)
    position = {(c, s + 1): m for m, c, s in rows}
    return {mid: position[(c, s)] for mid, c, s in Message.objects.filter(where, role="assistant")
            .values_list("id", "conversation_id", "seq")}


def answered_turns(*, org_id: int, message_ids) -> tuple[list[tuple], dict[int, int]]:
    """These messages of the org as (id, conversation id, seq, role) rows, and the user turn each
    assistant message among them answers (the message right before it in its conversation), as
    assistant id → user id. Plain reads (common/plain_reads.py): recall runs this on every call with
    episodes among its candidates."""
    rows = plain_rows(Message, ("id", "conversation", "seq", "role"), message_ids, key="id", org=org_id)
    answered: dict[int, int] = {}
    previous = {(conv, seq - 1): mid for mid, conv, seq, role in rows if role == "assistant" and seq > 1}
    if previous:
        by_position: dict[int, set[int]] = {}
        for conv, seq in previous:
            by_position.setdefault(conv, set()).add(seq)
        for conv, seqs in by_position.items():
            for mid, seq in plain_rows(Message, ("id", "seq"), seqs, key="seq", conversation=conv, role="user"):
                answered[previous[(conv, seq)]] = mid
    return rows, answered


def conversation_count(*, org: Org) -> int:
    return Conversation.objects.filter(org=org).count()


def conversation_in_org(*, org: Org, conversation_id: int) -> Conversation | None:
    """A conversation by id within the org, whoever may read it (the caller decides what it may see)."""
    return Conversation.objects.filter(id=conversation_id, org=org).first()


def conversation_external_ids(*, conversation_ids) -> dict[int, str]:
    """conversation id → its client key (`external_id`)."""
    return dict(Conversation.objects.filter(id__in=conversation_ids).values_list("id", "external_id"))


def conversations_keyed(*, org: Org, owner_user: str, heads: list[str], exact: str | None = None,
                        tail: str | None = None) -> QuerySet[Conversation]:
    """The user's own conversations whose client key (`external_id`) starts with each of `heads` and,
    when given, equals `exact` or ends with `tail` (a client's naming scheme: Mem0's agent and run).
    Compared exactly, as every identifier (docs/security.md): `startswith` and `endswith` are a LIKE,
    which SQLite answers ignoring ASCII case (agent `Bot` would match `bot`); the LIKE narrows by
    index, the exact head or tail decides."""
    qs = Conversation.objects.filter(org=org, owner_user=owner_user)
    for head in heads:
        qs = qs.filter(external_id__startswith=head).alias(**{f"head_{len(head)}": Left("external_id", len(head))}) \
            .filter(**{f"head_{len(head)}": head})
    if exact is not None:
        return qs.filter(external_id=exact)
    if tail is not None:
        return qs.filter(external_id__endswith=tail).alias(tail_part=Right("external_id", len(tail))).filter(tail_part=tail)
    return qs
