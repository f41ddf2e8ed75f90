import logging
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from conversations.models import Conversation, ConversationAccess, EntityMention, HistorySummary, Message, TaskState
from conversations.signals import messages_appended
from conversations.window_cache import window_cache_append, window_cache_drop
from tenancy.db import retry_on_contention
from tenancy.models import Org
from tenancy.services import audit_record

logger = logging.getLogger(__name__)


class Conflict(Exception):
    """A write lost an optimistic-concurrency race or hit a uniqueness rule."""


@retry_on_contention
def conversation_create(*, org: Org, owner_user: str, external_id: str | None = None, title: str = "") -> tuple[Conversation, bool]:
    """Create a conversation; with an external_id the call is idempotent for its owner."""
    if external_id:
        existing = Conversation.objects.filter(org=org, external_id=external_id).first()
        if existing is not None:
            if existing.owner_user != owner_user:
                raise Conflict("external_id is already used by another conversation")
            return existing, False
    conversation = Conversation(org=org, owner_user=owner_user, external_id=external_id or None, title=title)
    conversation.full_clean(validate_unique=False)
    try:
        with transaction.atomic():
            conversation.save()
    except IntegrityError:
        # A concurrent create with the same external_id won; return its row if it is ours.
        return conversation_create(org=org, owner_user=owner_user, external_id=external_id, title=title)
    return conversation, True


@retry_on_contention
@transaction.atomic
def conversation_access_set(*, conversation: Conversation, user_id: str, granted: bool, actor: str) -> ConversationAccess:
    state = ConversationAccess.GRANTED if granted else ConversationAccess.REVOKED
    access, _ = ConversationAccess.objects.update_or_create(
        conversation=conversation, user_id=user_id, defaults={"state": state}
    )
    audit_record(org=conversation.org, actor=actor, actor_kind="api", action="conversation.grant" if granted else "conversation.revoke",
                 target_type="conversation", target_id=str(conversation.id), detail={"user_id": user_id})
    return access


def _message_tokens(message: dict[str, Any]) -> int:
    from conversations.tokens import count_message_tokens

    payload = {"role": message["role"], "content": message.get("content") or ""}
    if message.get("tool_calls"):
        payload["tool_calls"] = message["tool_calls"]
    if message.get("tool_call_id"):
        payload["tool_call_id"] = message["tool_call_id"]
    return count_message_tokens(payload)


@retry_on_contention
def messages_append(*, conversation: Conversation, user_id: str, messages: list[dict[str, Any]]) -> list[Message]:
    """Append validated messages atomically: all of them or none.

    The conversation row is locked so concurrent appends get distinct, gapless seq numbers.
    Extraction is queued only after COMMIT, through the messages_appended signal.
    """
    now = timezone.now()
    with transaction.atomic():
        locked = Conversation.objects.select_for_update().get(id=conversation.id)
        seq = locked.message_count
        rows = []
        for data in messages:
            seq += 1
            rows.append(Message(
                conversation=locked, org_id=locked.org_id, user_id=user_id, seq=seq, role=data["role"],
                content=data.get("content") or "", tool_call_id=data.get("tool_call_id") or None,
                tool_calls=data.get("tool_calls") or None, token_count=_message_tokens(data),
                occurred_at=data.get("occurred_at") or now, external_ref=data.get("external_ref") or None,
            ))
        created = Message.objects.bulk_create(rows)
        if not all(m.pk for m in created):  # backends without RETURNING (MySQL): re-read by seq
            created = list(Message.objects.filter(conversation=locked, seq__gt=locked.message_count).order_by("seq"))
        Conversation.objects.filter(id=locked.id).update(message_count=F("message_count") + len(rows))
        _record_mentions(locked, created)
        message_ids = [m.id for m in created]
        org_id = locked.org_id
        # Robust: the messages are committed, so nothing after COMMIT may turn the 201 into an error. A
        # failed cache push is caught by the window check; a failed enqueue (or an eager extraction that
        # failed) leaves extracted_at NULL, the pending marker the extraction sweep picks up.
        transaction.on_commit(lambda: window_cache_append(locked.id, locked.window_version, created), robust=True)
        transaction.on_commit(lambda: messages_appended.send(sender=Message, org_id=org_id, message_ids=message_ids),
                              robust=True)
    logger.info("appended messages conversation=%s count=%s", conversation.id, len(created))
    return created


def _record_mentions(conversation: Conversation, messages: list[Message]) -> None:
    from entities.selectors import entity_matcher_for_org

    matcher = entity_matcher_for_org(org_id=conversation.org_id)
    if matcher is None:
        return
    mentions = []
    for message in messages:
        if message.role == "system" or not message.content:
            continue
        seen = set()
        for match in matcher.find(message.content):
            if match.entity_id in seen:
                continue
            seen.add(match.entity_id)
            mentions.append(EntityMention(entity_id=match.entity_id, message=message, conversation=conversation,
                                          user_id=message.user_id, surface=match.surface[:300], at=message.occurred_at))
    EntityMention.objects.bulk_create(mentions, ignore_conflicts=True)


@retry_on_contention
@transaction.atomic
def task_state_put(*, conversation: Conversation, key: str, kind: str, state: str, data: dict, user_id: str,
                   expected_version: int | None = None) -> tuple[TaskState, bool]:
    """Optimistic concurrency: with expected_version the write applies only over that version."""
    task = TaskState.objects.select_for_update().filter(conversation=conversation, key=key).first()
    if task is None:
        if expected_version not in (None, 0):
            raise Conflict("task state does not exist at the expected version")
        task = TaskState(conversation=conversation, key=key, kind=kind, state=state, data=data, version=1, updated_by=user_id)
        task.full_clean(validate_unique=False)
        try:
            with transaction.atomic():
                task.save()
        except IntegrityError:
            raise Conflict("task state was created concurrently")
        return task, True
    if expected_version is not None and expected_version != task.version:
        raise Conflict(f"task state is at version {task.version}, not {expected_version}")
    task.kind, task.state, task.data, task.updated_by = kind, state, data, user_id
    task.version += 1
    task.full_clean(validate_unique=False)
    task.save(update_fields=["kind", "state", "data", "version", "updated_at", "updated_by"])
    return task, False


def summary_store(*, conversation: Conversation, covers_until_seq: int, text: str, token_count: int,
                  produced_by: str) -> HistorySummary:
    return HistorySummary.objects.create(conversation=conversation, covers_until_seq=covers_until_seq, text=text,
                                         token_count=token_count, produced_by=produced_by)


def messages_redact(*, message_ids: list[int]) -> int:
    """Remove message text for good (forget requests that cover messages)."""
    with transaction.atomic():
        conversations = list(Conversation.objects.select_for_update()
                             .filter(messages__id__in=message_ids).distinct().values_list("id", "window_version"))
        updated = Message.objects.filter(id__in=message_ids).update(content="", tool_calls=None, redacted=True)
        HistorySummary.objects.filter(conversation__messages__id__in=message_ids).delete()
        Conversation.objects.filter(id__in=[c for c, _ in conversations]).update(window_version=F("window_version") + 1)
        for conversation_id, version in conversations:
            transaction.on_commit(lambda c=conversation_id, v=version: window_cache_drop(c, v), robust=True)
    return updated


def message_mark_do_not_remember(*, message_id: int) -> None:
    Message.objects.filter(id=message_id).update(do_not_remember=True)


def message_mark_extracted(*, message_id: int, at: datetime | None = None) -> None:
    Message.objects.filter(id=message_id).update(extracted_at=at or timezone.now())


def messages_mark_extracted(*, message_ids: list[int], at: datetime | None = None) -> int:
    """The batch form: one UPDATE for every message a batched extraction finished."""
    return Message.objects.filter(id__in=message_ids).update(extracted_at=at or timezone.now())


def summaries_delete(*, org: Org, owner_user: str) -> int:
    """Drop the rolling summaries of every conversation the user owns (forgetting a whole user): they
    are rebuilt from what the messages still hold if the conversations are read again."""
    deleted, _ = HistorySummary.objects.filter(conversation__org=org, conversation__owner_user=owner_user).delete()
    return deleted
