"""Recent-window cache: served from the cache when it is exactly the conversation, never stale."""
import pytest
import redis
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.models import Conversation
from conversations.services import conversation_create, messages_append, messages_redact
from conversations.window_cache import window_messages


def _fresh(conversation):
    return Conversation.objects.get(id=conversation.id)


def _message_queries(ctx) -> list[str]:
    return [q["sql"] for q in ctx.captured_queries if "conversations_message" in q["sql"]]


@pytest.fixture
def conversation(org):
    conversation, _ = conversation_create(org=org, owner_user="u1")
    messages_append(conversation=conversation, user_id="u1", messages=[
        {"role": "user", "content": "我们农场在黑龙江。"},
        {"role": "assistant", "content": "好的。"},
    ])
    return conversation


@pytest.mark.django_db(transaction=True)
def test_second_read_is_served_from_the_cache(conversation):
    first = window_messages(_fresh(conversation))
    with CaptureQueriesContext(connection) as ctx:
        second = window_messages(_fresh(conversation))
    assert [m.content for m in second] == [m.content for m in first] == ["我们农场在黑龙江。", "好的。"]
    assert _message_queries(ctx) == []


@pytest.mark.django_db(transaction=True)
def test_append_extends_the_cached_list(conversation):
    window_messages(_fresh(conversation))
    messages_append(conversation=conversation, user_id="u1", messages=[{"role": "user", "content": "Tractor T-7 leaks."}])
    with CaptureQueriesContext(connection) as ctx:
        messages = window_messages(_fresh(conversation))
    assert [m.seq for m in messages] == [1, 2, 3]
    assert messages[-1].content == "Tractor T-7 leaks."
    assert _message_queries(ctx) == []


@pytest.mark.django_db(transaction=True)
def test_a_lost_push_reads_the_database(conversation, monkeypatch):
    window_messages(_fresh(conversation))
    # The push after COMMIT is lost (Redis blipped): the list is now one message short.
    monkeypatch.setattr("conversations.services.window_cache_append", lambda *a, **k: None)
    messages_append(conversation=conversation, user_id="u1", messages=[{"role": "user", "content": "第三条"}])
    messages = window_messages(_fresh(conversation))
    assert [m.content for m in messages][-1] == "第三条"


@pytest.mark.django_db(transaction=True)
def test_redaction_is_never_served_from_an_old_list_even_if_the_drop_failed(conversation, monkeypatch):
    window_messages(_fresh(conversation))
    monkeypatch.setattr("conversations.services.window_cache_drop", lambda *a, **k: None)
    first_id = _fresh(conversation).messages.order_by("seq").first().id
    messages_redact(message_ids=[first_id])
    messages = window_messages(_fresh(conversation))
    assert [m.content for m in messages] == ["好的。"]
    assert _fresh(conversation).window_version == 1


@pytest.mark.django_db(transaction=True)
def test_as_of_filters_the_cached_list(org):
    conversation, _ = conversation_create(org=org, owner_user="u1")
    messages_append(conversation=conversation, user_id="u1", messages=[
        {"role": "user", "content": "我们农场在黑龙江。", "occurred_at": "2026-03-01T08:00:00+08:00"},
        {"role": "assistant", "content": "好的。", "occurred_at": "2026-03-01T08:05:00+08:00"},
    ])
    assert len(window_messages(_fresh(conversation))) == 2  # both cached
    first = _fresh(conversation).messages.order_by("seq").first()
    messages = window_messages(_fresh(conversation), at=first.occurred_at)
    assert [m.id for m in messages] == [first.id]  # the later reply is not yet known at that time


@pytest.mark.django_db(transaction=True)
def test_long_conversations_are_not_cached(conversation, settings):
    settings.CACHE_WINDOW_MAX_MESSAGES = 2
    window_messages(_fresh(conversation))
    messages_append(conversation=conversation, user_id="u1", messages=[{"role": "user", "content": "third"}])
    with CaptureQueriesContext(connection) as ctx:
        messages = window_messages(_fresh(conversation))
    assert [m.content for m in messages][-1] == "third"
    assert _message_queries(ctx), "a conversation above the cap must be read from the database"


@pytest.mark.django_db(transaction=True)
def test_redis_down_reads_the_database(conversation, monkeypatch):
    dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2, socket_timeout=0.2)
    monkeypatch.setattr("conversations.window_cache._redis", lambda: dead)
    messages_append(conversation=conversation, user_id="u1", messages=[{"role": "user", "content": "still here"}])
    messages = window_messages(_fresh(conversation))
    assert [m.content for m in messages] == ["我们农场在黑龙江。", "好的。", "still here"]
