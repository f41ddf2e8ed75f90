"""Idempotency-Key on appends (single, batch) and memory writes: a retry answers the first response
and stores nothing new; another body under the same key is refused naming the header."""
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from conversations.models import Message
from memory.models import Memory
from tenancy.idempotency import idempotency_records_purge
from tenancy.models import IdempotencyRecord
from tests.conftest import make_client
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db


def post(api, path, body, key):
    return api.post(path, body, format="json", HTTP_IDEMPOTENCY_KEY=key)


def test_repeated_append_returns_the_first_answer_and_stores_once(api):
    conv = create_conversation(api)
    path = f"/api/v1/conversations/{conv['id']}/messages"
    body = {"role": "user", "content": "我们农场在黑龙江齐齐哈尔"}
    first = post(api, path, body, "k-1")
    again = post(api, path, body, "k-1")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first.headers
    assert Message.objects.filter(conversation_id=conv["id"]).count() == 1
    assert Memory.objects.filter(kind="episode").count() == 1  # extraction ran once
    # Without a key, or with a new one, the same body is a new message.
    assert post(api, path, body, "k-2").json()["id"] != first.json()["id"]
    assert api.post(path, body, format="json").status_code == 201
    assert Message.objects.filter(conversation_id=conv["id"]).count() == 3


def test_repeated_batch_append(api):
    conv = create_conversation(api)
    path = f"/api/v1/conversations/{conv['id']}/messages/batch"
    body = {"messages": [{"role": "user", "content": "I am vegetarian"}, {"role": "assistant", "content": "Noted."}]}
    first = post(api, path, body, "batch-1")
    again = post(api, path, body, "batch-1")
    assert again.status_code == 201 and again.json() == first.json()
    assert Message.objects.filter(conversation_id=conv["id"]).count() == 2


def test_repeated_memory_write_and_update(api):
    body = {"kind": "fact", "content": "Our accountant is called Maria Keller"}
    first = post(api, "/api/v1/memories", body, "m-1")
    again = post(api, "/api/v1/memories", body, "m-1")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json() and again.json()["action"] == "added"
    assert Memory.objects.exclude(kind="episode").count() == 1
    memory_id = first.json()["memory"]["id"]
    patch = {"content": "Our accountant is called Maria Keller-Schmidt"}
    updated = api.patch(f"/api/v1/memories/{memory_id}", patch, format="json", HTTP_IDEMPOTENCY_KEY="u-1")
    replay = api.patch(f"/api/v1/memories/{memory_id}", patch, format="json", HTTP_IDEMPOTENCY_KEY="u-1")
    assert updated.status_code == replay.status_code == 200 and replay.json() == updated.json()
    assert Memory.objects.get(id=memory_id).version == updated.json()["version"]


def test_same_key_with_another_body_is_refused_naming_the_header(api):
    conv = create_conversation(api)
    path = f"/api/v1/conversations/{conv['id']}/messages"
    assert post(api, path, {"role": "user", "content": "one"}, "k").status_code == 201
    response = post(api, path, {"role": "user", "content": "two"}, "k")
    assert response.status_code == 422
    assert "Idempotency-Key" in response.json()
    assert list(Message.objects.values_list("content", flat=True)) == ["one"]


def test_keys_are_scoped_to_user_and_endpoint(org, api):
    other = make_client(org, "u2")
    conv_a, conv_b = create_conversation(api, "a"), create_conversation(api, "b")
    body = {"role": "user", "content": "hello"}
    assert post(api, f"/api/v1/conversations/{conv_a['id']}/messages", body, "k").status_code == 201
    assert post(api, f"/api/v1/conversations/{conv_b['id']}/messages", body, "k").status_code == 201
    conv_c = create_conversation(other, "c")
    assert post(other, f"/api/v1/conversations/{conv_c['id']}/messages", body, "k").status_code == 201
    assert Message.objects.count() == 3


def test_a_failed_write_stores_no_key_and_its_retry_runs(api):
    conv = create_conversation(api)
    path = f"/api/v1/conversations/{conv['id']}/messages"
    assert post(api, path, {"role": "nobody", "content": "x"}, "k").status_code == 400
    assert not IdempotencyRecord.objects.exists()
    assert post(api, path, {"role": "user", "content": "x"}, "k").status_code == 201


@pytest.mark.parametrize("key", ["", "x" * 256, "ключ", "a\tb"])
def test_malformed_key_is_a_400_naming_the_header(api, key):
    conv = create_conversation(api)
    response = post(api, f"/api/v1/conversations/{conv['id']}/messages", {"role": "user", "content": "x"}, key)
    assert response.status_code == 400 and "Idempotency-Key" in response.json()
    assert not Message.objects.exists()


def test_expired_keys_no_longer_count_and_are_purged(api, settings):
    conv = create_conversation(api)
    path = f"/api/v1/conversations/{conv['id']}/messages"
    body = {"role": "user", "content": "x"}
    assert post(api, path, body, "old").status_code == 201
    assert post(api, path, body, "kept").status_code == 201
    IdempotencyRecord.objects.filter(key="old").update(
        created_at=timezone.now() - timedelta(hours=settings.IDEMPOTENCY_RETENTION_HOURS, minutes=1))
    assert "Idempotent-Replayed" not in post(api, path, body, "old").headers  # expired: a new write
    assert Message.objects.count() == 3
    IdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(hours=settings.IDEMPOTENCY_RETENTION_HOURS + 1))
    assert idempotency_records_purge() == 2
    assert not IdempotencyRecord.objects.exists()


def test_purge_is_a_beat_job():
    from memory.jobs.beat_schedule import BEAT_JOBS

    assert "tenancy.tasks.idempotency_records_purge_task" in {job.task for job in BEAT_JOBS}


@pytest.mark.service_only
@pytest.mark.django_db(transaction=True)
def test_concurrent_duplicates_store_once():
    """Eight requests with one key at once: the unique constraint makes seven wait for the first
    commit and answer its response."""
    from tenancy.services import org_get_or_create

    org = org_get_or_create(slug="idem-race")
    api = make_client(org, "u1")
    conv = create_conversation(api)
    path = f"/api/v1/conversations/{conv['id']}/messages"
    barrier, answers, errors = threading.Barrier(8), [], []

    def worker():
        client = make_client(org, "u1")
        try:
            barrier.wait(timeout=10)
            response = post(client, path, {"role": "user", "content": "I keep bees behind the orchard"}, "same")
            answers.append((response.status_code, response.json()["id"]))
        except Exception as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert {status for status, _ in answers} == {201} and len({i for _, i in answers}) == 1, answers
    assert Message.objects.filter(conversation_id=conv["id"]).count() == 1
