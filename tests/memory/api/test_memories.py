import pytest

from memory.models import Memory, MemoryVersion
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db


def create_memory(api, **body):
    body.setdefault("kind", "preference")
    response = api.post("/api/v1/memories", body, format="json")
    assert response.status_code in (200, 201), response.content
    return response.json()


def test_create_get_list_and_history(api):
    created = create_memory(api, content="用户喜欢简洁的回答", key="pref:回答风格")
    assert created["action"] == "added"
    memory = created["memory"]
    assert memory["content"] == "用户喜欢简洁的回答" and memory["key"] == "pref:回答风格" and memory["version"] == 1
    assert api.get(f"/api/v1/memories/{memory['id']}").json()["kind"] == "preference"
    listed = api.get("/api/v1/memories").json()["results"]
    assert [m["id"] for m in listed] == [memory["id"]]
    history = api.get(f"/api/v1/memories/{memory['id']}/history").json()
    assert [v["n"] for v in history["versions"]] == [1] and history["versions"][0]["reason"] == "ADD"


def test_update_adds_a_version_and_keeps_the_old_one(api):
    memory = create_memory(api, content="维保计划默认看两周")["memory"]
    updated = api.patch(f"/api/v1/memories/{memory['id']}", {"content": "维保计划默认看一个月"}, format="json")
    assert updated.status_code == 200 and updated.json()["version"] == 2
    versions = MemoryVersion.objects.filter(memory_id=memory["id"]).order_by("n")
    assert [v.content for v in versions] == ["维保计划默认看两周", "维保计划默认看一个月"]
    assert [v.reason for v in versions] == ["ADD", "UPDATE"]


def test_patch_with_importance_alone_changes_it_without_a_new_content_version(api):
    memory = create_memory(api, content="维保计划默认看两周")["memory"]
    updated = api.patch(f"/api/v1/memories/{memory['id']}", {"importance": 0.9}, format="json")
    assert updated.status_code == 200, updated.content
    body = updated.json()
    assert body["importance"] == 0.9 and body["content"] == "维保计划默认看两周"
    assert body["version"] == memory["version"] + 1  # the row moves, so projections pick it up
    assert MemoryVersion.objects.filter(memory_id=memory["id"]).count() == 1
    assert Memory.objects.get(id=memory["id"]).importance == 0.9
    validity = api.patch(f"/api/v1/memories/{memory['id']}", {"valid_to": "2030-01-01T00:00:00Z"}, format="json")
    assert validity.status_code == 200 and validity.json()["valid_to"].startswith("2030-01-01")


@pytest.mark.parametrize("body", [{}, {"valid_from": None, "valid_to": None}])
def test_patch_with_nothing_to_change_is_a_400(api, body):
    memory = create_memory(api, content="维保计划默认看两周")["memory"]
    response = api.patch(f"/api/v1/memories/{memory['id']}", body, format="json")
    assert response.status_code == 400 and "Nothing to change" in str(response.json())
    assert api.patch(f"/api/v1/memories/{memory['id']}", {"importance": 2}, format="json").json().keys() == {"importance"}


def test_exact_duplicate_is_not_stored_twice(api):
    first = create_memory(api, content="我喜欢简洁的回答。")
    second = create_memory(api, content="我喜欢简洁的回答")
    assert second["action"] == "duplicate" and second["memory"]["id"] == first["memory"]["id"]
    assert Memory.objects.filter(status="active").count() == 1


def test_same_slot_supersedes_and_keeps_the_chain(api):
    old = create_memory(api, content="维保计划默认给我看未来两周的", key="pref:维保计划")["memory"]
    new = create_memory(api, content="维保计划默认改成看未来一个月的", key="pref:维保计划")
    assert new["action"] == "superseded" and new["superseded"] == [old["id"]]
    old_row = Memory.objects.get(id=old["id"])
    assert old_row.status == "superseded" and old_row.superseded_by_id == new["memory"]["id"]
    chain = api.get(f"/api/v1/memories/{new['memory']['id']}/history").json()["chain"]
    assert chain["supersedes"] == [old["id"]]


def test_recall_returns_sources_and_score_parts(api):
    conv = create_conversation(api)
    message = api.post(f"/api/v1/conversations/{conv['id']}/messages",
                       {"role": "user", "content": "hello", "external_ref": "X1:1"}, format="json").json()
    create_memory(api, kind="fact", content="Our cooperative bought a grain dryer from Nanjing",
                  sources=[{"message_id": message["id"]}, {"ref": "ticket-9"}])
    body = api.post("/api/v1/recall", {"query": "Where did we buy the grain dryer?", "explain": True}, format="json").json()
    assert body["degraded"] is False
    top = body["items"][0]
    assert "Nanjing" in top["content"]
    # The source given by message id carries the message's external ref, as an extracted memory's does.
    assert {(s["message_id"], s["ref"]) for s in top["sources"]} == {(message["id"], "X1:1"), (None, "ticket-9")}
    assert set(top["score_parts"]) >= {"semantic", "keyword", "recency", "importance", "frequency"}


def test_a_source_given_by_message_id_carries_the_messages_ref_in_every_surface(api, org):
    """REST (history, recall), MCP recall_memory and the Mem0 history all list it."""
    import json

    from rest_framework.test import APIClient

    from tenancy.models import SCOPE_MEM0_COMPAT
    from tenancy.services import api_key_create

    conv = create_conversation(api)
    message = api.post(f"/api/v1/conversations/{conv['id']}/messages",
                       {"role": "user", "content": "hello", "external_ref": "X1:7"}, format="json").json()
    written = create_memory(api, kind="fact", content="The zqdryer grain dryer came from Nanjing",
                            sources=[{"message_id": message["id"]}])["memory"]
    expected = [{"message_id": message["id"], "conversation_id": conv["id"], "ref": "X1:7"}]
    assert api.get(f"/api/v1/memories/{written['id']}/history").json()["versions"][0]["sources"] == expected
    recalled = api.post("/api/v1/recall", {"query": "zqdryer grain dryer"}, format="json").json()["items"]
    assert [(i["id"], i["sources"]) for i in recalled if i["kind"] != "episode"] == [(written["id"], expected)]

    mcp = api.post("/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "recall_memory", "arguments": {"query": "zqdryer grain dryer"}}}), content_type="application/json",
        HTTP_ACCEPT="application/json, text/event-stream", HTTP_MCP_PROTOCOL_VERSION="2025-06-18")
    items = mcp.json()["result"]["structuredContent"]["items"]
    assert [(i["id"], i["sources"]) for i in items if i["kind"] != "episode"] == [(written["id"], expected)]

    mem0 = APIClient()
    mem0.credentials(HTTP_AUTHORIZATION=f"Token {api_key_create(org=org, name='mem0', scopes=[SCOPE_MEM0_COMPAT])[1]}")
    history = mem0.get(f"/v1/memories/{written['id']}/history/")
    assert history.status_code == 200, history.content
    assert [entry["sources"] for entry in history.json()] == [expected]


def test_recall_never_crosses_users_or_orgs(api, api_u2, api_other_org):
    memory = create_memory(api, kind="fact", content="我平时用 MySQL 做报表数据库")["memory"]
    # Positive control: the owner recalls and lists it with the same query, so the empty answers
    # below come from the isolation, not from a recall that finds nothing.
    owned = api.post("/api/v1/recall", {"query": "报表数据库用什么"}, format="json").json()["items"]
    assert memory["id"] in [i["id"] for i in owned]
    assert [m["id"] for m in api.get("/api/v1/memories").json()["results"]] == [memory["id"]]
    for other in (api_u2, api_other_org):
        items = other.post("/api/v1/recall", {"query": "报表数据库用什么"}, format="json").json()["items"]
        assert items == []
        assert other.get("/api/v1/memories").json()["results"] == []


def test_memory_of_another_user_is_404(api, api_u2):
    memory = create_memory(api, kind="fact", content="秘密")["memory"]
    assert api_u2.get(f"/api/v1/memories/{memory['id']}").status_code == 404
    assert api_u2.patch(f"/api/v1/memories/{memory['id']}", {"content": "x"}, format="json").status_code == 404


@pytest.mark.parametrize("body,field", [
    ({"kind": "opinion", "content": "x"}, "kind"),
    ({"kind": "fact", "content": ""}, "content"),
    ({"kind": "fact", "content": "x", "assertion": "rumour"}, "assertion"),
    ({"kind": "fact", "content": "x", "user_id": "u2"}, "user_id"),
    ({"kind": "fact", "content": "x", "entities": ["asset:NOPE"]}, "entities"),
    ({"kind": "fact", "content": "x", "valid_from": "2026-03-02T00:00:00Z", "valid_to": "2026-03-01T00:00:00Z"}, "valid_to"),
    ({"kind": "fact", "content": "x", "importance": 3}, "importance"),
])
def test_invalid_memory_bodies_are_400(api, body, field):
    response = api.post("/api/v1/memories", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert Memory.objects.count() == 0


@pytest.mark.parametrize("body,field", [({"query": "x", "k": 0}, "k"), ({"query": "x", "k": 10_000}, "k"),
                                        ({"k": 3}, "query"), ({"query": "x", "kinds": ["nope"]}, "kinds")])
def test_invalid_recall_is_400(api, body, field):
    response = api.post("/api/v1/recall", body, format="json")
    assert response.status_code == 400 and field in response.json()
