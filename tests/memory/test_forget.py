"""A forgotten memory is gone from MySQL content, the vector index, the cache, recall, context and
re-extraction."""
import json

import pytest

from conversations.models import Message
from memory.models import ForgetRequest, ForgetRule, Memory, MemoryEmbedding, MemoryVersion
from memory.vector_index import get_vector_index
from memory.vectors import active_collection
from tenancy.models import AuditEvent
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db
SECRET = "杭州西湖区文三路"


def say(api, conv, content):
    assert api.post(f"/api/v1/conversations/{conv['id']}/messages", {"role": "user", "content": content},
                    format="json").status_code == 201


def everything_visible(api, conv) -> str:
    recall = api.post("/api/v1/recall", {"query": "我住在哪里", "k": 20}, format="json").json()
    ctx = api.post(f"/api/v1/conversations/{conv['id']}/context", {"message": "我住在哪里"}, format="json").json()
    return json.dumps(recall, ensure_ascii=False) + json.dumps(ctx, ensure_ascii=False)


def forget_by_query(api, query):
    preview = api.post("/api/v1/forget/preview", {"query": query}, format="json").json()["matches"]
    assert preview, "the preview should find the address"
    response = api.post("/api/v1/forget", {"query": query, "memory_ids": [m["id"] for m in preview]}, format="json")
    assert response.status_code == 201, response.content
    return response.json(), preview


def test_forget_by_query_removes_everything(api):
    s1 = create_conversation(api, "s1")
    say(api, s1, f"我家住在{SECRET}。")
    ids = list(Memory.objects.values_list("id", flat=True))
    assert SECRET in everything_visible(api, create_conversation(api, "probe"))
    org_id = Memory.objects.first().org_id
    from memory.cache import memory_cache, standing_memories

    assert set(standing_memories(org_id, "u1")) & set(ids)  # the cache hash holds the fact now
    request, preview = forget_by_query(api, "我的住址")
    assert api.get(f"/api/v1/forget/{request['id']}").json()["status"] == "executed"
    assert {m["id"] for m in preview} == set(ids)  # the fact and the episode it came from
    # MySQL: content redacted in every version, messages redacted, embeddings gone
    assert not Memory.objects.filter(content__contains="文三路").exists()
    assert not MemoryVersion.objects.filter(content__contains="文三路").exists()
    assert not Message.objects.filter(content__contains="文三路").exists()
    assert not MemoryEmbedding.objects.filter(memory_id__in=ids).exists()
    assert set(Memory.objects.values_list("status", flat=True)) == {"forgotten"}
    # vector index: points physically deleted
    index = get_vector_index()
    assert not {pid for pid, _ in index.scroll(collection=active_collection())} & set(ids)
    # cache: the per-user hash no longer holds it
    assert not set(memory_cache.get_all(org_id, "u1") or {}) & set(ids)
    # recall and context
    probe = create_conversation(api, "probe2")
    assert "文三路" not in everything_visible(api, probe)
    # a rule blocks re-extraction and the audit log holds no content
    assert ForgetRule.objects.count() >= 1
    assert "文三路" not in json.dumps(list(AuditEvent.objects.values("detail")), ensure_ascii=False)


def test_reextraction_cannot_bring_it_back(api):
    s1 = create_conversation(api, "s1")
    say(api, s1, f"我家住在{SECRET}。")
    memory = Memory.objects.exclude(kind="episode").get()
    assert api.post("/api/v1/forget", {"memory_ids": [memory.id]}, format="json").status_code == 201
    # message kept (explicit id forget does not cover messages) but extraction is blocked
    assert Message.objects.filter(content__contains="文三路").exists()
    api.post(f"/api/v1/conversations/{s1['id']}/reextract", {}, format="json")
    assert not Memory.objects.filter(status="active", content__contains="文三路").exclude(kind="episode").exists()
    # saying it again in a new conversation is blocked too
    say(api, create_conversation(api, "s2"), f"我家住在{SECRET}。")
    assert not Memory.objects.filter(status="active", content__contains="文三路").exclude(kind="episode").exists()


def test_forget_is_idempotent(api):
    say(api, create_conversation(api), "我们合作社今年的采购预算是八十万。")
    memory = Memory.objects.exclude(kind="episode").get()
    for _ in range(2):
        assert api.post("/api/v1/forget", {"memory_ids": [memory.id]}, format="json").status_code == 201
    assert Memory.objects.get(id=memory.id).status == "forgotten"
    assert ForgetRequest.objects.filter(status="executed").count() == 2


def test_cannot_forget_someone_elses_memory(api, api_u2):
    say(api, create_conversation(api), "我们合作社今年的采购预算是八十万。")
    memory = Memory.objects.exclude(kind="episode").get()
    response = api_u2.post("/api/v1/forget", {"memory_ids": [memory.id]}, format="json")
    assert response.status_code == 400 and "memory_ids" in response.json()
    assert Memory.objects.get(id=memory.id).status == "active"


def test_forget_everything_about_me(api, api_u2):
    say(api, create_conversation(api, "a"), "我们合作社今年的采购预算是八十万。")
    say(api_u2, create_conversation(api_u2, "b"), "我喜欢简洁的回答。")
    assert api.post("/api/v1/forget", {"everything": True}, format="json").status_code == 201
    assert set(Memory.objects.filter(user_id="u1").values_list("status", flat=True)) == {"forgotten"}
    assert not Message.objects.filter(user_id="u1").exclude(content="").exists()
    assert Memory.objects.filter(user_id="u2", status="active").exists()  # other users untouched


def test_org_setting_makes_requests_wait_for_an_operator(api, org, django_capture_on_commit_callbacks):
    org.forget_requires_approval = True
    org.save()
    say(api, create_conversation(api), "我们合作社今年的采购预算是八十万。")
    memory = Memory.objects.exclude(kind="episode").get()
    request = api.post("/api/v1/forget", {"memory_ids": [memory.id]}, format="json").json()
    assert request["status"] == "pending"
    assert Memory.objects.get(id=memory.id).status == "active"
    from memory.services.forget import forget_request_decide

    with django_capture_on_commit_callbacks(execute=True):
        forget_request_decide(request=ForgetRequest.objects.get(id=request["id"]), approve=True, operator="op1")
    assert api.get(f"/api/v1/forget/{request['id']}").json()["status"] == "executed"
    assert Memory.objects.get(id=memory.id).status == "forgotten"


def test_revoked_source_hides_derived_memories_until_restored(api, api_u2):
    conv = create_conversation(api, "s1")
    say(api, conv, "我们合作社今年的采购预算是八十万。")
    query = {"query": "今年采购预算是多少"}
    assert "八十万" in json.dumps(api.post("/api/v1/recall", query, format="json").json(), ensure_ascii=False)
    api.post(f"/api/v1/conversations/{conv['id']}/access/revoke", {"user": "u1"}, format="json")
    assert "八十万" not in json.dumps(api.post("/api/v1/recall", query, format="json").json(), ensure_ascii=False)
    api.post(f"/api/v1/conversations/{conv['id']}/access/grant", {"user": "u1"}, format="json")
    assert "八十万" in json.dumps(api.post("/api/v1/recall", query, format="json").json(), ensure_ascii=False)


def test_executed_forget_answer_names_what_it_did(api):
    """The answer of an executed forget lists the memories forgotten and the messages redacted; the
    defaults of include_messages (query: yes, explicit ids: no) show in it."""
    conv = create_conversation(api, "s1")
    say(api, conv, f"我家住在{SECRET}。")
    message_id = Message.objects.get(content__contains="文三路").id
    created, preview = forget_by_query(api, "我的住址")
    request = api.get(f"/api/v1/forget/{created['id']}").json()
    assert request["status"] == "executed"
    assert request["result"]["redacted_message_ids"] == [message_id]
    assert request["result"]["messages_redacted"] == 1
    assert sorted(request["result"]["forgotten_memory_ids"]) == sorted(m["id"] for m in preview)

    say(api, conv, "我们合作社今年的采购预算是八十万。")
    memory = Memory.objects.filter(status="active").exclude(kind="episode").get()
    by_id = api.get(f"/api/v1/forget/{api.post('/api/v1/forget', {'memory_ids': [memory.id]}, format='json').json()['id']}").json()
    assert by_id["result"]["forgotten_memory_ids"] == [memory.id]
    assert by_id["result"]["redacted_message_ids"] == []  # explicit ids keep their messages by default
    budget_message = Message.objects.get(content__contains="八十万").id
    created = api.post("/api/v1/forget", {"memory_ids": [memory.id], "include_messages": True}, format="json").json()
    with_messages = api.get(f"/api/v1/forget/{created['id']}").json()
    assert with_messages["result"]["redacted_message_ids"] == [budget_message]
    assert Message.objects.get(id=budget_message).redacted
