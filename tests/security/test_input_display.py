"""Input a console would show wrongly: bidirectional control characters are refused with a 400 naming
the field (REST bodies and query parameters, MCP), dates outside DATE_MIN_YEAR..DATE_MAX_YEAR are
refused with a 400 naming the field; ensure_demo prints the port it is given; the console health page
names the cache backend this process uses."""
import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from conversations.models import Message
from memory.models import Memory
from tests.conftest import make_client
from tests.console.helpers import make_operator
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db

BIDI = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"]


LIST_PARAMETERS = [("/api/v1/conversations", "external_id"), ("/api/v1/entities", "search"),
                   ("/api/v1/entities", "type"), ("/api/v1/memories", "entity")]


@pytest.mark.parametrize("path,param", LIST_PARAMETERS)
@pytest.mark.parametrize("raw", ["%E2%80%AEabc", "abc%E2%81%A6", "%FF%FE", "a%C3", "%ED%A0%80"],
                         ids=["rlo", "lri", "latin1-bytes", "cut-utf8", "utf8-surrogate"])
def test_bidi_controls_and_invalid_bytes_in_list_parameters_are_refused_naming_it(api, path, param, raw):
    """docs/api.md: refused, not an empty 200 that reads as "no match". The query string goes on the
    wire as bytes (`QUERY_STRING`), as a client sends it."""
    entity = api.post("/api/v1/entities", {"type": "asset", "external_id": "A-1", "name": "拖拉机"}, format="json")
    assert entity.status_code == 201
    response = api.get(path, QUERY_STRING=f"{param}={raw}")
    assert response.status_code == 400, (path, param, raw, response.status_code, response.content[:200])
    assert list(response.json()) == [param], response.json()
    fine = api.get(path, QUERY_STRING=f"{param}=A-1" if param != "entity" else "entity=asset:A-1")
    assert fine.status_code == 200


def test_list_parameters_are_checked_like_body_fields(api):
    assert api.get("/api/v1/entities", {"include_inactive": "maybe"}).status_code == 400
    assert api.get("/api/v1/conversations", {"externalid": "x"}).json() == {"externalid": ["Unknown field."]}
    assert api.get("/api/v1/entities", {"search": "a" * 301}).status_code == 400
    assert api.get("/api/v1/entities", {"include_inactive": "true"}).status_code == 200


@pytest.mark.parametrize("char", BIDI)
def test_bidi_controls_in_a_message_are_refused_naming_the_field(api, char):
    conv = create_conversation(api)
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages",
                        {"role": "user", "content": f"pay invoice {char}fdp.exe"}, format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["content"] and "bidirectional" in response.json()["content"][0]
    assert not Message.objects.exists()


def test_bidi_controls_are_refused_in_every_kind_of_text_field(api):
    conv = create_conversation(api)
    cases = [
        (f"/api/v1/conversations/{conv['id']}/messages/batch",
         {"messages": [{"role": "user", "content": "ok"}, {"role": "user", "content": "x\u202ey"}]}, "messages"),
        ("/api/v1/memories", {"kind": "fact", "content": "abc\u2066def"}, "content"),
        ("/api/v1/recall", {"query": "\u202bwhere"}, "query"),
        ("/api/v1/conversations", {"external_id": "s\u2067", "title": "t"}, "external_id"),
        (f"/api/v1/conversations/{conv['id']}/context", {"message": "hi", "tools": [{"name": "a\u202db"}]}, "tools"),
    ]
    for path, body, field in cases:
        response = api.post(path, body, format="json")
        assert response.status_code == 400, (path, response.content)
        assert field in response.json(), (path, response.json())
    put = api.put(f"/api/v1/conversations/{conv['id']}/tasks/t1", {"kind": "plan", "state": "open",
                                                                   "data": {"note": "a\u2069b"}}, format="json")
    assert put.status_code == 400 and "data" in put.json()
    listed = api.get("/api/v1/memories", {"entity": "asset:A\u202e1"})
    assert listed.status_code == 400 and "entity" in listed.json()
    assert not Memory.objects.exists() and Message.objects.count() == 0
    # Direction marks that only set a direction (LRM/RLM) are ordinary text.
    ok = api.post(f"/api/v1/conversations/{conv['id']}/messages", {"role": "user", "content": "שלום\u200e ok"},
                  format="json")
    assert ok.status_code == 201


def test_bidi_controls_in_mcp_arguments_are_refused(org):
    api = make_client(org)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "recall_memory", "arguments": {"query": "abc\u202edef"}}}
    response = Client().post("/mcp", json.dumps(body), content_type="application/json", HTTP_ACCEPT="application/json",
                             HTTP_AUTHORIZATION=f"Bearer {api.raw_key}", HTTP_X_MEMORY_USER="u1")
    assert response.status_code == 400
    assert "params.arguments.query" in response.json()["error"]["message"]


@pytest.mark.parametrize("field,value", [("occurred_at", "9999-12-31T00:00:00Z"), ("occurred_at", "1969-12-31T23:59:59Z"),
                                         ("occurred_at", "2101-01-01T00:00:00Z")])
def test_message_dates_outside_the_range_are_refused(api, field, value):
    conv = create_conversation(api)
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages", {"role": "user", "content": "x", field: value},
                        format="json")
    assert response.status_code == 400 and field in response.json()
    assert not Message.objects.exists()


def test_dates_at_the_edges_are_accepted_and_every_date_field_is_checked(api, settings):
    conv = create_conversation(api)
    for value in ("1970-01-01T00:00:00Z", "2100-12-31T23:59:59Z"):
        assert api.post(f"/api/v1/conversations/{conv['id']}/messages",
                        {"role": "user", "content": "x", "occurred_at": value}, format="json").status_code == 201
    for field in ("valid_from", "valid_to", "occurred_at", "at"):
        response = api.post("/api/v1/memories", {"kind": "fact", "content": "I am vegetarian", field: "9999-12-31T00:00:00Z"},
                            format="json")
        assert response.status_code == 400 and field in response.json(), field
    assert api.post("/api/v1/recall", {"query": "x", "at": "3000-01-01T00:00:00Z"}, format="json").status_code == 400
    listed = api.get("/api/v1/memories", {"created_after": "0001-01-01T00:00:00Z"})
    assert listed.status_code == 400 and "created_after" in listed.json()
    settings.DATE_MAX_YEAR = 2200  # the range is a setting
    assert api.post(f"/api/v1/conversations/{conv['id']}/messages",
                    {"role": "user", "content": "x", "occurred_at": "2150-01-01T00:00:00Z"}, format="json").status_code == 201


def test_ensure_demo_prints_the_port_it_serves_on(monkeypatch, tmp_path, settings):
    settings.VAR_DIR = tmp_path
    out = StringIO()
    call_command("ensure_demo", "--port", "8102", stdout=out)
    assert "http://127.0.0.1:8102/admin/" in out.getvalue()
    monkeypatch.setenv("PORT", "8777")
    out = StringIO()
    call_command("ensure_demo", stdout=out)
    assert "http://127.0.0.1:8777/admin/" in out.getvalue() and ":8000" not in out.getvalue()


def test_health_page_names_the_cache_backend_in_use(client, settings):
    client.force_login(make_operator())
    page = client.get("/admin/console/health/").content.decode()
    expected = "Redis" if settings.CACHES["default"]["BACKEND"].endswith("RedisCache") else "local memory"
    assert f"cache ({expected})" in page
    other = "local memory" if expected == "Redis" else "Redis"
    assert f"cache ({other})" not in page
