import pytest

from conversations.models import Message
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db


def test_create_get_and_list(api):
    conv = create_conversation(api, external_id="s1", title="维保")
    assert conv["external_id"] == "s1" and conv["owner_user"] == "u1"
    assert api.get(f"/api/v1/conversations/{conv['id']}").json()["title"] == "维保"
    listed = api.get("/api/v1/conversations").json()
    assert [c["id"] for c in listed["results"]] == [conv["id"]]


def test_create_with_same_external_id_is_idempotent(api):
    first = api.post("/api/v1/conversations", {"external_id": "s1"}, format="json")
    second = api.post("/api/v1/conversations", {"external_id": "s1"}, format="json")
    assert first.status_code == 201 and second.status_code == 200
    assert first.json()["id"] == second.json()["id"]


def test_append_and_list_messages_chinese_round_trip(api):
    conv = create_conversation(api)
    text = "以后给我的维保建议请按紧急程度从高到低排序。🚜 emoji ok"
    created = api.post(f"/api/v1/conversations/{conv['id']}/messages",
                       {"role": "user", "content": text, "external_ref": "D1:1"}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["content"] == text and body["seq"] == 1 and body["token_count"] > 0
    assert Message.objects.get(id=body["id"]).content == text
    listed = api.get(f"/api/v1/conversations/{conv['id']}/messages").json()
    assert [m["content"] for m in listed["results"]] == [text]
    assert api.get(f"/api/v1/conversations/{conv['id']}/messages/{body['id']}").json()["external_ref"] == "D1:1"


def test_body_cannot_set_identity(api):
    conv = create_conversation(api)
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages",
                        {"role": "user", "content": "hi", "user_id": "u2"}, format="json")
    assert response.status_code == 400
    assert "user_id" in response.json()


@pytest.mark.parametrize("body,field", [
    ({"role": "robot", "content": "x"}, "role"),
    ({"role": "tool", "content": "x"}, "tool_call_id"),
    ({"role": "user", "content": "x", "occurred_at": "yesterday-ish"}, "occurred_at"),
    ({"role": "user", "content": 12}, None),
    ({"role": "user", "content": "x", "unknown": 1}, "unknown"),
    ({"role": "user", "content": "x", "tool_calls": [{"id": "c1", "name": "f"}]}, "tool_calls"),
    ({"role": "user"}, "content"),
    ([1, 2], None),
])
def test_invalid_messages_are_400_naming_the_field(api, body, field):
    conv = create_conversation(api)
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages", body, format="json")
    assert response.status_code == 400, response.content
    if field:
        assert field in response.content.decode()
    assert Message.objects.count() == 0


def test_oversized_content_is_400(api, settings):
    settings.MAX_MESSAGE_CHARS = 50
    conv = create_conversation(api)
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages", {"role": "user", "content": "字" * 51},
                        format="json")
    assert response.status_code == 400 and "content" in response.json()


def test_tool_call_and_result_round_trip(api):
    conv = create_conversation(api)
    url = f"/api/v1/conversations/{conv['id']}/messages/batch"
    batch = {"messages": [
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "name": "get_records", "arguments": {"a": 1}}]},
        {"role": "tool", "content": "[1,2,3]", "tool_call_id": "call_1"},
    ]}
    response = api.post(url, batch, format="json")
    assert response.status_code == 201, response.content
    assert [m["seq"] for m in response.json()] == [1, 2]
    assert response.json()[0]["tool_calls"][0]["id"] == "call_1"


def test_batch_is_atomic(api):
    conv = create_conversation(api)
    url = f"/api/v1/conversations/{conv['id']}/messages/batch"
    bad = {"messages": [{"role": "user", "content": "ok"}, {"role": "tool", "content": "no call id"}]}
    response = api.post(url, bad, format="json")
    assert response.status_code == 400
    assert "messages" in response.json()
    assert Message.objects.count() == 0


def test_batch_over_limit_is_400(api, settings):
    settings.MAX_BATCH_MESSAGES = 3
    conv = create_conversation(api)
    batch = {"messages": [{"role": "user", "content": f"m{i}"} for i in range(4)]}
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages/batch", batch, format="json")
    assert response.status_code == 400 and "messages" in response.json()
    assert Message.objects.count() == 0


def test_cursor_pagination_walks_every_message_once(api, settings):
    settings.DEFAULT_PAGE_SIZE = 7
    conv = create_conversation(api)
    batch = {"messages": [{"role": "user", "content": f"消息 {i}"} for i in range(30)]}
    assert api.post(f"/api/v1/conversations/{conv['id']}/messages/batch", batch, format="json").status_code == 201
    seen, url = [], f"/api/v1/conversations/{conv['id']}/messages"
    while url:
        page = api.get(url).json()
        assert len(page["results"]) <= 7
        seen += [m["seq"] for m in page["results"]]
        url = page["next"]
    assert seen == list(range(1, 31))


def test_page_size_is_capped(api, settings):
    settings.MAX_PAGE_SIZE = 5
    conv = create_conversation(api)
    batch = {"messages": [{"role": "user", "content": f"m{i}"} for i in range(8)]}
    api.post(f"/api/v1/conversations/{conv['id']}/messages/batch", batch, format="json")
    page = api.get(f"/api/v1/conversations/{conv['id']}/messages?limit=1000").json()
    assert len(page["results"]) == 5


def test_other_org_gets_404(api, api_other_org):
    conv = create_conversation(api)
    for path in (f"/api/v1/conversations/{conv['id']}", f"/api/v1/conversations/{conv['id']}/messages"):
        assert api_other_org.get(path).status_code == 404
    response = api_other_org.post(f"/api/v1/conversations/{conv['id']}/messages", {"role": "user", "content": "x"},
                                  format="json")
    assert response.status_code == 404
    assert api.get("/api/v1/conversations/999999").status_code == 404


def test_other_user_of_same_org_gets_404_until_granted(api, api_u2):
    conv = create_conversation(api)
    api.post(f"/api/v1/conversations/{conv['id']}/messages", {"role": "user", "content": "秘密"}, format="json")
    assert api_u2.get(f"/api/v1/conversations/{conv['id']}/messages").status_code == 404
    assert api_u2.get("/api/v1/conversations").json()["results"] == []
    assert api.post(f"/api/v1/conversations/{conv['id']}/access/grant", {"user": "u2"}, format="json").status_code == 204
    assert api_u2.get(f"/api/v1/conversations/{conv['id']}/messages").status_code == 200
    # only the owner manages access
    assert api_u2.post(f"/api/v1/conversations/{conv['id']}/access/revoke", {"user": "u1"}, format="json").status_code == 404


def test_owner_can_revoke_own_access(api):
    conv = create_conversation(api)
    assert api.post(f"/api/v1/conversations/{conv['id']}/access/revoke", {"user": "u1"}, format="json").status_code == 204
    assert api.get(f"/api/v1/conversations/{conv['id']}").status_code == 404
    assert api.post(f"/api/v1/conversations/{conv['id']}/access/grant", {"user": "u1"}, format="json").status_code == 204
    assert api.get(f"/api/v1/conversations/{conv['id']}").status_code == 200


def test_task_state_versioned_with_optimistic_concurrency(api):
    conv = create_conversation(api)
    url = f"/api/v1/conversations/{conv['id']}/tasks/booking-A-1002"
    created = api.put(url, {"kind": "confirmation", "state": "confirmed", "data": {"when": "2026-03-10 09:00"}}, format="json")
    assert created.status_code == 201 and created.json()["version"] == 1
    updated = api.put(url, {"kind": "confirmation", "state": "done", "data": {}, "expected_version": 1}, format="json")
    assert updated.status_code == 200 and updated.json()["version"] == 2
    stale = api.put(url, {"kind": "confirmation", "state": "x", "data": {}, "expected_version": 1}, format="json")
    assert stale.status_code == 409
    got = api.get(url).json()
    assert got["state"] == "done" and got["version"] == 2
    assert [t["key"] for t in api.get(f"/api/v1/conversations/{conv['id']}/tasks").json()] == ["booking-A-1002"]


def test_task_state_validation(api):
    conv = create_conversation(api)
    url = f"/api/v1/conversations/{conv['id']}/tasks/k"
    response = api.put(url, {"kind": "nonsense", "state": "x"}, format="json")
    assert response.status_code == 400 and "kind" in response.json()
    response = api.put(url, {"state": "x", "data": [1]}, format="json")
    assert response.status_code == 400 and "data" in response.json()
