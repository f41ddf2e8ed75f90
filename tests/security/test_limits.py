"""Limits and the console's perimeter (issue "Reliability and security", item 4).

Per-key rate limits, request-body and field-size limits, pagination caps, the console behind a staff
login with CSRF, security headers, and an operator AuditEvent for every console action.
"""
import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from memory.models import Memory
from tenancy.models import SCOPE_MEM0_COMPAT, ApiKey, AuditEvent
from tenancy.services import api_key_create
from tenancy.throttling import ApiKeyRateThrottle
from tests.conftest import make_client

pytestmark = pytest.mark.django_db


def _ok(response, status=None):
    assert response.status_code < 300 if status is None else response.status_code == status, \
        (response.status_code, response.content[:300])
    return response.json() if response.content else None


def _operator(username: str = "sec-operator", **flags):
    flags = flags or {"is_staff": True, "is_superuser": True}
    return get_user_model().objects.create_user(username=username, password="pw-sec-123", **flags)


# --------------------------------------------------------------------------- rate limits
@pytest.fixture
def tiny_rate(monkeypatch):
    """DRF reads THROTTLE_RATES into the class at import; the throttle resolves `rate` per instance."""
    monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "3/min"})


def test_rate_limit_is_per_api_key(tiny_rate, org, other_org):
    first, second_key, foreign = make_client(org, "u1"), make_client(org, "u1"), make_client(other_org, "u1")
    statuses = [first.get("/api/v1/conversations").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    limited = first.post("/api/v1/recall", {"query": "anything"}, format="json")
    assert limited.status_code == 429 and int(limited["Retry-After"]) > 0
    assert limited["Content-Type"].startswith("application/json") and "detail" in limited.json()
    # Another key of the same org, and another org's key, keep their own budgets.
    assert [second_key.get("/api/v1/conversations").status_code for _ in range(3)] == [200, 200, 200]
    assert foreign.get("/api/v1/conversations").status_code == 200


def test_rate_limit_is_shared_by_every_user_of_a_key_and_by_mcp(tiny_rate, org):
    """The budget belongs to the key (the agent service), whatever X-Memory-User says, REST or MCP."""
    api = make_client(org, "u1")
    assert api.get("/api/v1/conversations").status_code == 200
    as_u2 = Client().get("/api/v1/conversations", HTTP_AUTHORIZATION=f"Bearer {api.raw_key}", HTTP_X_MEMORY_USER="u2")
    assert as_u2.status_code == 200
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    mcp = Client().post("/mcp", ping, content_type="application/json", HTTP_ACCEPT="application/json",
                        HTTP_AUTHORIZATION=f"Bearer {api.raw_key}", HTTP_X_MEMORY_USER="u3")
    assert mcp.status_code == 200
    assert api.get("/api/v1/conversations").status_code == 429
    mcp = Client().post("/mcp", ping, content_type="application/json", HTTP_ACCEPT="application/json",
                        HTTP_AUTHORIZATION=f"Bearer {api.raw_key}", HTTP_X_MEMORY_USER="u3")
    assert mcp.status_code == 429 and mcp.json()["error"]["code"] == -32011


# --------------------------------------------------------------------------- request body size
def test_request_body_over_the_limit_is_a_413_naming_the_limit(settings, org):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    api = make_client(org, "u1")
    api.raise_request_exception = False
    conversation = _ok(api.post("/api/v1/conversations", {"title": "t"}, format="json"))
    cid = conversation["id"]
    big = "长" * 3000  # 9 kB of UTF-8: over the byte limit, well under every character limit
    attempts = [
        api.post(f"/api/v1/conversations/{cid}/messages", {"role": "user", "content": big}, format="json"),
        api.post(f"/api/v1/conversations/{cid}/messages/batch",
                 {"messages": [{"role": "user", "content": big[:1000]}] * 3}, format="json"),
        api.post("/api/v1/memories", {"kind": "fact", "content": big[:2000] + big[:2000]}, format="json"),
        api.post("/api/v1/entities/bulk", {"entities": [{"type": "asset", "external_id": f"A{i}", "name": big[:100]}
                                                        for i in range(20)]}, format="json"),
        api.post("/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": big}}),
                 content_type="application/json", HTTP_ACCEPT="application/json"),
    ]
    mem0_key = api_key_create(org=org, name="mem0", scopes=[SCOPE_MEM0_COMPAT])[1]
    attempts.insert(-1, api.post("/v3/memories/add/", {"messages": [{"role": "user", "content": big}], "user_id": "u1"},
                                 format="json", HTTP_AUTHORIZATION=f"Token {mem0_key}"))
    for response in attempts[:-1]:  # REST and Mem0: the JSON error shape, naming the limit
        assert response.status_code == 413, (response.status_code, response.content[:200])
        assert response["Content-Type"] == "application/json"
        body = response.json()
        assert body["code"] == "request_too_large" and body["limit"] == 4096 and "4096 bytes" in body["detail"]
    assert attempts[-1].status_code == 413
    assert not Memory.objects.filter(org=org).exists()
    assert _ok(api.get(f"/api/v1/conversations/{cid}"))["message_count"] == 0


# --------------------------------------------------------------------------- field sizes
def _field_errors(response) -> dict:
    assert response.status_code == 400, (response.status_code, response.content[:300])
    return response.json()


def test_field_size_limits_are_400s_naming_the_field(settings, org):
    settings.MAX_MESSAGE_CHARS = 500
    settings.MAX_MEMORY_CHARS = 200
    settings.MAX_BATCH_MESSAGES = 3
    api = make_client(org, "u1")
    cid = _ok(api.post("/api/v1/conversations", {"title": "t"}, format="json"))["id"]
    # At the limit: accepted.
    _ok(api.post(f"/api/v1/conversations/{cid}/messages", {"role": "user", "content": "a" * 500}, format="json"), 201)
    _ok(api.post("/api/v1/memories", {"kind": "fact", "content": "b" * 200}, format="json"))
    _ok(api.post("/api/v1/recall", {"query": "q" * 4000}, format="json"), 200)
    # One over: refused, and the error names the field.
    cases = [
        ("post", f"/api/v1/conversations/{cid}/messages", {"role": "user", "content": "a" * 501}, "content"),
        ("post", f"/api/v1/conversations/{cid}/messages/batch",
         {"messages": [{"role": "user", "content": "hi"}] * 4}, "messages"),
        ("post", f"/api/v1/conversations/{cid}/messages/batch",
         {"messages": [{"role": "user", "content": "a" * 501}]}, "messages"),
        ("post", "/api/v1/memories", {"kind": "fact", "content": "b" * 201}, "content"),
        ("patch", "/api/v1/memories/{memory_id}", {"content": "c" * 201}, "content"),
        ("post", "/api/v1/recall", {"query": "q" * 4001}, "query"),
        ("post", "/api/v1/recall", {"query": "q", "k": settings.MAX_RECALL_K + 1}, "k"),
        ("post", "/api/v1/forget/preview", {"query": "q" * 4001}, "query"),
        ("post", f"/api/v1/conversations/{cid}/context", {"message": "m" * 501}, "message"),
        ("post", f"/api/v1/conversations/{cid}/context", {"message": "m", "budget": settings.MAX_CONTEXT_BUDGET + 1},
         "budget"),
        ("post", "/api/v1/entities", {"type": "asset", "external_id": "x" * 201, "name": "n"}, "external_id"),
        ("post", "/api/v1/entities", {"type": "asset", "external_id": "x", "name": "n" * 301}, "name"),
        ("post", "/api/v1/entities/resolve", {"text": "t" * 4001}, "text"),
        ("post", "/api/v1/conversations", {"title": "t" * 301}, "title"),
        ("put", f"/api/v1/conversations/{cid}/tasks/" + "k" * 201, {"state": "s"}, "key"),
        ("put", f"/api/v1/conversations/{cid}/tasks/plan", {"state": "s" * 101}, "state"),
        ("put", f"/api/v1/conversations/{cid}/tasks/plan", {"state": "s", "data": {"d": "x" * 600}}, "data"),
    ]
    memory_id = Memory.objects.filter(org=org).exclude(kind="episode").values_list("id", flat=True).first()
    for method, path, body, field in cases:
        response = getattr(api, method)(path.format(memory_id=memory_id), body, format="json")
        assert field in _field_errors(response), (path, field, response.json())
    # The acting-user header is a field too (APIClient credentials would override it: use a plain client).
    for user in ("u" * 129, "u1/../u2", "", "u1 u2"):
        response = Client().get("/api/v1/conversations", HTTP_AUTHORIZATION=f"Bearer {api.raw_key}",
                                HTTP_X_MEMORY_USER=user)
        assert "X-Memory-User" in _field_errors(response), user
    assert Client().get("/api/v1/conversations", HTTP_AUTHORIZATION=f"Bearer {api.raw_key}",
                        HTTP_X_MEMORY_USER="u" * 128).status_code == 200


# --------------------------------------------------------------------------- pagination caps
DISTINCT_FACTS = ["The barn roof was replaced in 2019.", "我的狗叫旺财。", "Our tractor fleet runs on biodiesel.",
                  "用户住在杭州西湖区。", "The accountant visits every second Friday.", "我对花生过敏。",
                  "The irrigation pump is rated at 40 kW."]
def test_pagination_is_capped_at_max_page_size(settings, org, django_capture_on_commit_callbacks):
    settings.MAX_PAGE_SIZE = 5
    api = make_client(org, "u1")
    cid = _ok(api.post("/api/v1/conversations", {"title": "t"}, format="json"))["id"]
    for n in range(7):
        _ok(api.post("/api/v1/conversations", {"title": f"c{n}"}, format="json"))
        _ok(api.put(f"/api/v1/conversations/{cid}/tasks/k{n}", {"state": "s"}, format="json"))
        _ok(api.post("/api/v1/entities", {"type": "asset", "external_id": f"A{n}", "name": f"设备{n}号机"},
                     format="json"))
        _ok(api.post("/api/v1/memories", {"kind": "fact", "content": DISTINCT_FACTS[n]}, format="json"))
    _ok(api.post(f"/api/v1/conversations/{cid}/messages/batch",
                 {"messages": [{"role": "user", "content": f"message {n}"} for n in range(7)]}, format="json"))
    for path in ("/api/v1/conversations", f"/api/v1/conversations/{cid}/messages", "/api/v1/memories",
                 "/api/v1/entities"):
        body = _ok(api.get(path, {"limit": 100000}))
        assert len(body["results"]) == 5 and body["next"], (path, len(body["results"]))
        # The rest is reachable through the cursor, never through a bigger page.
        rest = _ok(api.get(body["next"]))
        assert 1 <= len(rest["results"]) <= 5
    assert len(_ok(api.get(f"/api/v1/conversations/{cid}/tasks", {"limit": 100000}))) == 5
    assert len(_ok(api.post("/api/v1/recall", {"query": "barn", "k": 100}, format="json"))["items"]) <= 100


# --------------------------------------------------------------------------- console perimeter
CONSOLE_PAGES = ["/admin/", "/admin/console/", "/admin/console/health/", "/admin/console/recall/",
                 "/admin/console/api-keys/", "/admin/console/forget-user/", "/admin/console/purge-org/",
                 "/admin/memory/memory/", "/admin/tenancy/apikey/", "/admin/tenancy/auditevent/"]


@pytest.mark.parametrize("path", CONSOLE_PAGES)
def test_console_pages_need_a_staff_login(path, client):
    response = client.get(path)
    assert response.status_code == 302, response.status_code
    assert response["Location"].startswith(reverse("admin:login")), response["Location"]
    # An API key is no way in either.
    api_key = make_client(_org("perimeter"), "u1").raw_key
    assert client.get(path, HTTP_AUTHORIZATION=f"Bearer {api_key}").status_code == 302
    # Nor is a logged-in user without staff status.
    user = get_user_model().objects.create_user(username="not-staff", password="pw-sec-123")
    client.force_login(user)
    assert client.get(path).status_code == 302


def _org(slug):
    from tenancy.services import org_get_or_create

    return org_get_or_create(slug=slug)


def test_console_posts_need_a_csrf_token(org):
    operator = _operator()
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    keys_before = ApiKey.objects.count()
    refused = [
        client.post("/admin/console/api-keys/", {"org": org.id, "name": "no-token"}),
        client.post("/admin/console/purge-org/", {"org": org.id, "confirm_slug": org.slug}),
        client.post("/admin/console/forget-user/", {"org": org.id, "user_id": "u1", "approve_now": "1"}),
        client.post("/admin/login/", {"username": "sec-operator", "password": "pw-sec-123"}),
    ]
    assert [r.status_code for r in refused] == [403] * len(refused)
    assert ApiKey.objects.count() == keys_before and type(org).objects.filter(id=org.id).exists()
    # With the token from the page, the same form works.
    page = client.get("/admin/console/api-keys/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    created = client.post("/admin/console/api-keys/",
                          {"org": org.id, "name": "with-token", "csrfmiddlewaretoken": token})
    assert created.status_code == 200 and ApiKey.objects.count() == keys_before + 1


def test_console_login_cookie_and_pages_are_hardened(org, settings):
    client = Client()
    client.force_login(_operator())
    page = client.get("/admin/console/api-keys/")
    assert page.status_code == 200
    # The page that shows a new key's plaintext must never be cached.
    assert "no-store" in page["Cache-Control"] and "private" in page["Cache-Control"]
    assert settings.SESSION_COOKIE_HTTPONLY is True


# --------------------------------------------------------------------------- security headers
HEADERS = {"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "same-origin"}


def test_security_headers_on_api_and_console_responses(org):
    api = make_client(org, "u1")
    operator_client = Client()
    operator_client.force_login(_operator())
    responses = {
        "api 200": api.get("/api/v1/conversations"),
        "api 201": api.post("/api/v1/memories", {"kind": "fact", "content": "Headers matter."}, format="json"),
        "api 400": api.post("/api/v1/recall", {}, format="json"),
        "api 401": Client().get("/api/v1/conversations"),
        "api 404": api.get("/api/v1/memories/999999999"),
        "mcp": Client().post("/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
                             content_type="application/json", HTTP_ACCEPT="application/json",
                             HTTP_AUTHORIZATION=f"Bearer {api.raw_key}", HTTP_X_MEMORY_USER="u1"),
        "schema": Client().get("/api/schema/"),
        "login page": Client().get("/admin/login/"),
        "login redirect": Client().get("/admin/console/health/"),
        "console page": operator_client.get("/admin/console/health/"),
        "admin page": operator_client.get("/admin/memory/memory/"),
        "health": Client().get("/healthz"),
    }
    for name, response in responses.items():
        for header, value in HEADERS.items():
            assert response.get(header) == value, (name, response.status_code, header, response.get(header))


# --------------------------------------------------------------------------- operator audit trail
@pytest.fixture
def operator_client():
    client = Client()
    client.force_login(_operator("audit-operator"))
    return client


def _events_since(last_id: int):
    return list(AuditEvent.objects.filter(id__gt=last_id).order_by("id"))


def _last_id() -> int:
    return AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0


def _assert_operator_events(events, *actions):
    by_action = {e.action: e for e in events}
    for action in actions:
        event = by_action.get(action)
        assert event is not None, f"no audit event {action}: {[e.action for e in events]}"
        assert (event.actor_kind, event.actor) == ("operator", "audit-operator"), (action, event.actor_kind,
                                                                                   event.actor)


def _no_content(events, *texts):
    for event in events:
        blob = json.dumps(event.detail, ensure_ascii=False) + event.target_id
        for text in texts:
            assert text not in blob, (event.action, event.detail)


def test_console_api_key_create_and_revoke_are_audited(operator_client, org):
    mark = _last_id()
    assert operator_client.post("/admin/console/api-keys/", {"org": org.id, "name": "audited"}).status_code == 200
    key = ApiKey.objects.get(org=org, name="audited")
    events = _events_since(mark)
    _assert_operator_events(events, "api_key.create")
    mark = _last_id()
    response = operator_client.post(f"/admin/console/api-keys/{key.id}/revoke/")
    assert response.status_code == 302
    _assert_operator_events(_events_since(mark), "api_key.revoke")


def test_console_memory_actions_are_audited(operator_client, org, django_capture_on_commit_callbacks):
    api = make_client(org, "u1")
    secret = "The vault code is zqauditcode."
    memory_id = _ok(api.post("/api/v1/memories", {"kind": "fact", "content": secret}, format="json"))["memory"]["id"]
    other_id = _ok(api.post("/api/v1/memories", {"kind": "preference", "content": "Short answers about zqaudittwo."},
                            format="json"))["memory"]["id"]
    mark = _last_id()
    with django_capture_on_commit_callbacks(execute=True):
        response = operator_client.post(reverse("admin:memory_memory_invalidate", args=[memory_id]),
                                        {"reason": "wrong"})
    assert response.status_code == 302
    _assert_operator_events(_events_since(mark), "memory.invalidated")
    mark = _last_id()
    with django_capture_on_commit_callbacks(execute=True):
        response = operator_client.post(reverse("admin:memory_memory_forget", args=[other_id]),
                                        {"approve_now": "1", "include_messages": ""})
    assert response.status_code == 302
    events = _events_since(mark)
    _assert_operator_events(events, "forget.request", "forget.approve")
    assert Memory.objects.get(id=other_id).status == "forgotten"
    _no_content(events, "zqaudittwo", "zqauditcode")


def test_console_forget_user_and_recall_explain_are_audited(operator_client, org, django_capture_on_commit_callbacks):
    api = make_client(org, "u1")
    _ok(api.post("/api/v1/memories", {"kind": "fact", "content": "The gate code is zqgatecode."}, format="json"))
    mark = _last_id()
    response = operator_client.post("/admin/console/recall/", {"org": org.id, "user_id": "u1",
                                                               "query": "what is the gate code", "k": 5,
                                                               "include_episodes": "on"})
    assert response.status_code == 200
    events = _events_since(mark)
    _assert_operator_events(events, "recall.explain")
    _no_content(events, "gate code", "zqgatecode")
    mark = _last_id()
    with django_capture_on_commit_callbacks(execute=True):
        response = operator_client.post("/admin/console/forget-user/", {"org": org.id, "user_id": "u1",
                                                                         "approve_now": "1"})
    assert response.status_code == 302
    _assert_operator_events(_events_since(mark), "forget.request", "forget.approve")
    assert not Memory.objects.filter(org=org, user_id="u1", status="active").exists()


def test_an_operator_named_system_is_still_audited_as_an_operator(org):
    client = Client()
    client.force_login(_operator("system"))
    mark = _last_id()
    assert client.post("/admin/console/api-keys/", {"org": org.id, "name": "disguised"}).status_code == 200
    [event] = [e for e in _events_since(mark) if e.action == "api_key.create"]
    assert event.actor_kind == "operator"
