"""The MCP endpoint: the official SDK client against a live HTTP server, and protocol edge cases
through Django's test client."""
import json
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
from mcp import Client, ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from memory.models import Memory
from tenancy.services import api_key_create, api_key_revoke
from tenancy.throttling import ApiKeyRateThrottle
from tests.conftest import make_client
from tests.conversations.api_helpers import create_conversation

TOOLS = {"recall_memory", "get_context", "entity_neighbours"}
IDENTITY_WORDS = ("user", "org", "tenant", "actor", "key")

live = pytest.mark.django_db(transaction=True)


def auth_headers(raw_key: str | None, user: str | None = "u1") -> dict[str, str]:
    headers = {}
    if raw_key is not None:
        headers["Authorization"] = f"Bearer {raw_key}"
    if user is not None:
        headers["X-Memory-User"] = user
    return headers


@asynccontextmanager
async def mcp_session(url: str, headers: dict[str, str]):
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def call(url: str, headers: dict[str, str], *calls: tuple[str, dict]) -> list:
    """Open one SDK session and make the tool calls in order; returns their CallToolResults."""
    async def main():
        async with mcp_session(url, headers) as session:
            return [await session.call_tool(name, args) for name, args in calls]
    return anyio.run(main)


def create_memory(api, **body) -> dict:
    body.setdefault("kind", "fact")
    response = api.post("/api/v1/memories", body, format="json")
    assert response.status_code in (200, 201), response.content
    return response.json()["memory"]


def post_messages(api, conv, messages):
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages/batch", {"messages": messages}, format="json")
    assert response.status_code == 201, response.content


def assert_tool_error(result, *words):
    assert result.is_error, result
    assert result.structured_content is None
    text = result.content[0].text
    for word in words:
        assert word in text, text
    return text


@pytest.fixture
def mcp_url(live_server) -> str:
    return f"{live_server.url}/mcp"


# --------------------------------------------------------------------------- over HTTP, with the SDK client

@live
def test_initialize_and_list_exactly_the_read_only_tools(mcp_url, org):
    api = make_client(org, "u1")

    async def main():
        async with mcp_session(mcp_url, auth_headers(api.raw_key)) as session:
            assert session.initialize_result.protocol_version == LATEST_HANDSHAKE_VERSION
            assert session.initialize_result.capabilities.tools is not None
            return (await session.list_tools()).tools
    tools = anyio.run(main)
    assert {t.name for t in tools} == TOOLS and len(tools) == len(TOOLS)
    for tool in tools:
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert not [p for p in schema["properties"] if any(w in p.lower() for w in IDENTITY_WORDS)], schema
        assert tool.annotations.read_only_hint is True and tool.output_schema["type"] == "object"
    by_name = {t.name: t.input_schema for t in tools}
    assert set(by_name["recall_memory"]["properties"]) == {"query", "k", "kinds", "at", "conversation_id"}
    assert set(by_name["get_context"]["properties"]) == {"conversation_id", "message", "budget", "evidence"}
    assert set(by_name["entity_neighbours"]["properties"]) == {"type", "external_id", "include_history", "relation_type"}


@live
def test_entity_neighbours_lists_only_what_the_user_may_read(mcp_url, org):
    api = make_client(org, "u1")
    entities = [{"type": "asset", "external_id": "A-1", "name": "1号冷柜"},
                {"type": "workorder", "external_id": "WO-1", "name": "工单1"},
                {"type": "workorder", "external_id": "WO-2", "name": "工单2", "grants": ["someone-else"]}]
    assert api.post("/api/v1/entities/bulk", {"entities": entities}, format="json").status_code == 201
    relations = [{"from": {"type": "workorder", "external_id": wo}, "type": "about", "to": {"type": "asset", "external_id": "A-1"}}
                 for wo in ("WO-1", "WO-2")]
    assert api.post("/api/v1/relations/bulk", {"relations": relations}, format="json").status_code == 201

    [listed, hidden, missing] = call(mcp_url, auth_headers(api.raw_key, "u1"),
                                     ("entity_neighbours", {"type": "asset", "external_id": "A-1"}),
                                     ("entity_neighbours", {"type": "workorder", "external_id": "WO-2"}),
                                     ("entity_neighbours", {"type": "workorder", "external_id": "WO-404"}))
    assert not listed.is_error, listed.content
    neighbours = listed.structured_content["neighbours"]
    assert [(n["entity"]["external_id"], n["type"], n["direction"]) for n in neighbours] == [("WO-1", "about", "in")]
    # A hidden entity answers exactly as a missing one.
    assert hidden.is_error and missing.is_error
    assert hidden.content[0].text.replace("WO-2", "X") == missing.content[0].text.replace("WO-404", "X")


@live
def test_recall_memory_returns_the_users_memory_in_the_rest_shape(mcp_url, org, other_org):
    api = make_client(org, "u1")
    memory = create_memory(api, content="Our cooperative bought a grain dryer from Nanjing")
    query = {"query": "Where did we buy the grain dryer?"}
    rest = api.post("/api/v1/recall", query, format="json").json()

    [result] = call(mcp_url, auth_headers(api.raw_key, "u1"), ("recall_memory", {**query, "k": 3}))
    assert not result.is_error, result.content
    body = result.structured_content
    assert json.loads(result.content[0].text) == body
    assert [item["id"] for item in body["items"]] == [memory["id"]] == [item["id"] for item in rest["items"]]
    assert set(body) == set(rest) and set(body["items"][0]) == set(rest["items"][0])
    assert body["items"][0]["content"] == memory["content"] and body["degraded"] is False
    # The access-count touch ran inside the live server thread, so eager execution reaches it there too.
    assert Memory.objects.get(id=memory["id"]).access_count == 2  # REST recall + MCP recall

    # The same call as another user of the org, and as the same user name in another org: nothing.
    for key, user in ((make_client(org).raw_key, "u2"), (make_client(other_org).raw_key, "u1")):
        [result] = call(mcp_url, auth_headers(key, user), ("recall_memory", query))
        assert not result.is_error and result.structured_content["items"] == []


@live
def test_get_context_stays_within_the_budget_and_matches_rest(mcp_url, org):
    api = make_client(org, "u1")
    conv = create_conversation(api, title="maintenance")
    post_messages(api, conv, [{"role": "user" if i % 2 == 0 else "assistant",
                               "content": f"Message {i}: the tractor needs an oil change every 250 hours. " * 5}
                              for i in range(12)])
    args = {"conversation_id": conv["id"], "message": "When is the next oil change?", "budget": 300}
    [result] = call(mcp_url, auth_headers(api.raw_key), ("get_context", args))
    assert not result.is_error, result.content
    ctx = result.structured_content
    assert ctx["budget"] == 300 and 0 < ctx["total_tokens"] <= 300
    assert ctx["messages"][-1] == {"role": "user", "content": "When is the next oil change?"}
    assert len(ctx["messages"]) < 13  # the window was cut to fit
    rest = api.post(f"/api/v1/conversations/{conv['id']}/context",
                    {"message": args["message"], "budget": 300}, format="json").json()
    assert set(ctx) == set(rest) and ctx["messages"] == rest["messages"]  # the second call reuses the summary
    assert [(s["name"], s["tokens"], s["text"]) for s in ctx["sections"]] == \
           [(s["name"], s["tokens"], s["text"]) for s in rest["sections"]]


@live
def test_get_context_takes_evidence_and_reports_what_was_cut(mcp_url, org, settings):
    settings.CONTEXT_EVIDENCE_MAX_TOKENS = 60
    api = make_client(org, "u1")
    conv = create_conversation(api, title="maintenance")
    post_messages(api, conv, [{"role": "user", "content": "1号收割机的液压油该换了吗？"}])
    evidence = [{"id": "kb-7", "text": "液压油每工作500小时更换一次。", "source": "维保手册 4.2", "score": 0.9},
                {"id": "kb-9", "text": "更换液压油时须同时更换滤芯。" * 20, "source": "维保手册 4.3", "score": 0.7},
                {"id": 12, "text": "冬季使用低温液压油。", "source": "维保手册 4.5"}]
    args = {"conversation_id": conv["id"], "message": "液压油多久换一次？", "budget": 400, "evidence": evidence}
    [result] = call(mcp_url, auth_headers(api.raw_key), ("get_context", args))
    assert not result.is_error, result.content
    ctx = result.structured_content
    sections = {s["name"]: s for s in ctx["sections"]}
    assert sections["evidence"]["included"] == ["kb-7", "kb-9", "12"] and sections["evidence"]["truncated"] == ["kb-9"]
    assert ctx["messages"][0]["content"] == sections["evidence"]["text"]  # first: the tool takes no system prompt
    assert "[1] 液压油每工作500小时更换一次。 (source: 维保手册 4.2)" in ctx["messages"][0]["content"]
    assert "[3] 冬季使用低温液压油。" in ctx["messages"][0]["content"]
    rest = api.post(f"/api/v1/conversations/{conv['id']}/context",
                    {k: v for k, v in args.items() if k != "conversation_id"}, format="json").json()
    assert rest["sections"] == ctx["sections"] and rest["messages"] == ctx["messages"]
    [bad, duplicate] = call(mcp_url, auth_headers(api.raw_key),
                            ("get_context", {**args, "evidence": [{"id": "a", "text": "x"}]}),
                            ("get_context", {**args, "evidence": [evidence[0], evidence[0]]}))
    assert_tool_error(bad, "'evidence'")
    assert_tool_error(duplicate, "'evidence'", "unique")


@live
def test_an_unreadable_conversation_is_not_found(mcp_url, org):
    owner = make_client(org, "u1")
    conv = create_conversation(owner, title="private")
    post_messages(owner, conv, [{"role": "user", "content": "my private plans"}])
    missing = conv["id"] + 10_000
    results = call(mcp_url, auth_headers(make_client(org).raw_key, "u2"),
                   ("get_context", {"conversation_id": conv["id"], "message": "what are the plans?"}),
                   ("get_context", {"conversation_id": missing, "message": "what are the plans?"}),
                   ("recall_memory", {"query": "plans", "conversation_id": conv["id"]}))
    texts = [assert_tool_error(r, "not found") for r in results]
    # Someone else's conversation reads exactly like one that does not exist.
    assert texts[0] == f"Conversation {conv['id']} not found." and texts[1] == f"Conversation {missing} not found."
    assert texts[2] == texts[0]


@live
def test_identity_arguments_are_rejected_and_never_followed(mcp_url, org):
    owner = make_client(org, "u1")
    create_memory(owner, content="u1 stores reports in MySQL")
    conv = create_conversation(owner)
    results = call(mcp_url, auth_headers(make_client(org).raw_key, "u2"),
                   ("recall_memory", {"query": "reports database", "user_id": "u1"}),
                   ("recall_memory", {"query": "reports database", "org_id": org.id, "org": "acme"}),
                   ("get_context", {"conversation_id": conv["id"], "message": "hi", "user_id": "u1"}),
                   ("recall_memory", {"query": "reports database"}))
    assert_tool_error(results[0], "Unknown argument 'user_id'", "X-Memory-User")
    assert_tool_error(results[1], "Unknown argument 'org'", "Unknown argument 'org_id'")
    assert_tool_error(results[2], "Unknown argument 'user_id'")
    assert "MySQL" not in " ".join(c.text for r in results for c in r.content)
    assert results[3].structured_content["items"] == []


@live
def test_bad_arguments_are_tool_errors_naming_the_argument(mcp_url, org):
    api = make_client(org, "u1")
    conv = create_conversation(api)
    cases = [
        ("recall_memory", {}, "'query'"),
        ("recall_memory", {"query": ""}, "'query'"),
        ("recall_memory", {"query": "x" * 4001}, "'query'"),
        ("recall_memory", {"query": "x", "k": 0}, "'k'"),
        ("recall_memory", {"query": "x", "k": "5"}, "'k'"),
        ("recall_memory", {"query": "x", "k": 10_000}, "'k'"),
        ("recall_memory", {"query": "x", "kinds": ["secret"]}, "'kinds'"),
        ("recall_memory", {"query": "x", "at": "yesterday"}, "'at'"),
        ("recall_memory", {"query": "x", "conversation_id": "abc"}, "'conversation_id'"),
        ("get_context", {"message": "x"}, "'conversation_id'"),
        ("get_context", {"conversation_id": conv["id"], "message": "x", "budget": 10}, "'budget'"),
        ("get_context", {"conversation_id": conv["id"], "message": 5}, "'message'"),
    ]
    results = call(mcp_url, auth_headers(api.raw_key), *[(name, args) for name, args, _ in cases])
    for (name, args, word), result in zip(cases, results):
        assert len(assert_tool_error(result, word)) < 300  # names the problem without echoing the value
    # Valid optional nulls are accepted, as the schema says.
    [ok] = call(mcp_url, auth_headers(api.raw_key),
                ("recall_memory", {"query": "x", "k": 2, "kinds": None, "at": None, "conversation_id": None}))
    assert not ok.is_error, ok.content


@live
@pytest.mark.parametrize("case", ["no key", "wrong key", "revoked key", "no user", "bad user"])
def test_bad_credentials_fail_to_connect(mcp_url, org, case):
    key, raw = api_key_create(org=org, name="agent")
    headers = {
        "no key": auth_headers(None, "u1"),
        "wrong key": auth_headers(raw[:-4] + "abcd", "u1"),
        "revoked key": auth_headers(raw, "u1"),
        "no user": auth_headers(raw, None),
        "bad user": auth_headers(raw, "u 1/../admin"),
    }[case]
    if case == "revoked key":
        api_key_revoke(key=key)

    async def main():
        async with mcp_session(mcp_url, headers) as session:
            await session.list_tools()
    with pytest.raises(BaseException) as excinfo:
        anyio.run(main)
    error = excinfo.value
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:  # anyio task groups wrap it
        error = error.exceptions[0]
    assert isinstance(error, MCPError) and error.error.code == -32010, repr(error)


@live
def test_an_auto_negotiating_client_falls_back_to_the_handshake(mcp_url, org):
    """`mcp.Client` probes the 2026 `server/discover` first; the server's -32022 sends it to `initialize`."""
    api = make_client(org, "u1")
    create_memory(api, content="The dryer came from Nanjing")

    async def main():
        async with httpx2.AsyncClient(headers=auth_headers(api.raw_key), timeout=30) as http:
            async with Client(streamable_http_client(mcp_url, http_client=http)) as client:
                assert client.protocol_version == LATEST_HANDSHAKE_VERSION
                return await client.call_tool("recall_memory", {"query": "Where is the dryer from?"})
    result = anyio.run(main)
    assert not result.is_error and "Nanjing" in result.structured_content["items"][0]["content"]


# --------------------------------------------------------------------------- protocol edges, Django test client

def rpc(client, body, *, raw_key: str | None, user: str | None = "u1", content_type="application/json", **headers):
    extra = {"HTTP_" + k.upper().replace("-", "_"): v for k, v in {**auth_headers(raw_key, user), **headers}.items()}
    payload = body if isinstance(body, str) else json.dumps(body)
    return client.post("/mcp", payload, content_type=content_type, **extra)


def request(method: str, params: dict | None = None, rid: int = 1) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": method, **({"params": params} if params is not None else {})}


def initialize(version: str) -> dict:
    return request("initialize", {"protocolVersion": version, "capabilities": {},
                                  "clientInfo": {"name": "test", "version": "0"}})


@pytest.fixture
def key(org) -> str:
    return api_key_create(org=org, name="agent")[1]


@pytest.mark.django_db
@pytest.mark.parametrize("requested,expected", [
    *[(v, v) for v in HANDSHAKE_PROTOCOL_VERSIONS],
    ("2026-07-28", LATEST_HANDSHAKE_VERSION), ("1999-01-01", LATEST_HANDSHAKE_VERSION),
])
def test_initialize_answers_the_clients_version_when_supported(client, key, requested, expected):
    response = rpc(client, initialize(requested), raw_key=key)
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    body = response.json()
    assert body["id"] == 1 and body["result"]["protocolVersion"] == expected
    assert body["result"]["serverInfo"]["name"] == "memory-service"
    assert "Mcp-Session-Id" not in response


@pytest.mark.django_db
def test_http_level_rules(client, key):
    assert client.get("/mcp").status_code == 405
    assert client.delete("/mcp").status_code == 405
    notification = rpc(client, {"jsonrpc": "2.0", "method": "notifications/initialized"}, raw_key=key)
    assert notification.status_code == 202 and notification.content == b""
    assert rpc(client, request("ping"), raw_key=key).json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    parse = rpc(client, "{not json", raw_key=key)
    assert parse.status_code == 400 and parse.json()["error"]["code"] == -32700 and parse.json()["id"] is None
    batch = rpc(client, [request("ping")], raw_key=key)
    assert batch.status_code == 400 and batch.json()["error"]["code"] == -32600
    bad = rpc(client, {"jsonrpc": "1.0", "id": 7, "method": "ping"}, raw_key=key)
    assert bad.status_code == 400 and bad.json()["id"] == 7
    wrong_type = rpc(client, request("ping"), raw_key=key, content_type="text/plain")
    assert wrong_type.status_code == 415
    assert rpc(client, request("ping"), raw_key=key, Origin="http://evil.example").status_code == 403
    assert rpc(client, request("ping"), raw_key=key, Accept="text/event-stream").status_code == 406


@pytest.mark.django_db
def test_protocol_version_header_is_checked(client, key):
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        assert rpc(client, request("tools/list"), raw_key=key, **{"MCP-Protocol-Version": version}).status_code == 200
    response = rpc(client, request("server/discover", {}), raw_key=key, **{"MCP-Protocol-Version": "2026-07-28"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32022
    assert error["data"] == {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": "2026-07-28"}


@pytest.mark.django_db
def test_unknown_methods_and_tools_are_jsonrpc_errors(client, key):
    assert rpc(client, request("resources/list"), raw_key=key).json()["error"]["code"] == -32601
    assert rpc(client, request("server/discover"), raw_key=key).json()["error"]["code"] == -32601
    unknown = rpc(client, request("tools/call", {"name": "memory_write", "arguments": {}}), raw_key=key).json()
    assert unknown["error"]["code"] == -32602 and "memory_write" in unknown["error"]["message"]
    not_object = rpc(client, request("tools/call", {"name": "recall_memory", "arguments": [1]}), raw_key=key).json()
    assert not_object["error"]["code"] == -32602


@pytest.mark.django_db
def test_authentication_failures_are_401_with_a_jsonrpc_body(client, key):
    for raw_key, user in ((None, "u1"), ("mem_nope", "u1"), (key, None), (key, "bad user")):
        response = rpc(client, initialize(LATEST_HANDSHAKE_VERSION), raw_key=raw_key, user=user)
        assert response.status_code == 401, (raw_key, user)
        assert response["WWW-Authenticate"].startswith("Bearer")
        body = response.json()
        assert body["jsonrpc"] == "2.0" and body["id"] is None and body["error"]["code"] == -32010
    # The REST alternative header works here too: it is the same authentication.
    ok = client.post("/mcp", json.dumps(request("ping")), content_type="application/json",
                     HTTP_X_API_KEY=key, HTTP_X_MEMORY_USER="u1")
    assert ok.status_code == 200


@pytest.mark.django_db
def test_rate_limit_is_per_key_as_for_the_rest_api(client, key, monkeypatch):
    monkeypatch.setattr(ApiKeyRateThrottle, "THROTTLE_RATES", {"api_key": "2/min"})
    statuses = [rpc(client, request("ping"), raw_key=key).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]


@pytest.mark.django_db
def test_tool_results_are_text_and_structured_content(client, key):
    body = rpc(client, request("tools/call", {"name": "recall_memory", "arguments": {"query": "anything"}}),
               raw_key=key, **{"MCP-Protocol-Version": "2025-06-18"}).json()["result"]
    assert body["isError"] is False and body["structuredContent"] == {"items": [], "degraded": False,
                                                                     "degraded_reason": None}
    assert json.loads(body["content"][0]["text"]) == body["structuredContent"]
    assert "resultType" not in body  # a 2026-only field, dropped by the SDK's per-version serialiser
