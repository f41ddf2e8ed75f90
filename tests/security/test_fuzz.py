"""Schema-driven fuzzing of the REST API with schemathesis (issue "Reliability and security", item 2).

Every operation of `/api/schema/` (drf-spectacular) is called in-process through the WSGI app with a
valid API key and X-Memory-User header, on a database seeded with one object of each kind, so
generated path ids often hit real rows. Checks: no 5xx, the response matches its documented
schema, status code and content type.

The fuzz runs against the schema as served (error responses included), plus request examples
that hit the seeded rows. The served-schema tests below pin the defects the fuzz once found
(docs/security.md #6-#13): error responses, list envelopes, nullable keys, the history envelope,
deep nesting, lone surrogates and ids beyond 64 bits.

Bounded for CI: FUZZ_EXAMPLES (default 10) examples per operation in the fuzzing phase, plus
schemathesis' examples and coverage phases; derandomized, fixed seed, no example database.
Long run: `FUZZ_EXAMPLES=300 FUZZ_REPORT=var/fuzz-report.json .venv/bin/pytest tests/security -k fuzz`.
"""
import copy
import json
import os
from urllib.parse import unquote, urlsplit

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from django.test import Client
from django.urls import Resolver404, resolve
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tenancy.models import ApiKey, Org
from tenancy.services import api_key_revoke, org_get_or_create
from tests.conftest import make_client
from tests.security.helpers import FUZZ_FAILURES, FUZZ_STATUS, auth_headers, on_commit_runs

# Django's own WSGI app, not config/wsgi.py: that module also warms the models up and, with a real
# broker, starts the web process's vector-queue consumer, a Celery worker that would then run inside
# the test process (and take over its logging) for the rest of the session.
application = get_wsgi_application()

FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "10"))
FUZZ_SEED = int(os.environ.get("FUZZ_SEED", "20260601"))

CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance, content_type_conformance,
          response_headers_conformance]
# Not used, on purpose:
# - negative_data_rejection: DRF coerces some wrongly typed values instead of refusing them
#   (`limit=0.5` → default page size, `external_id: 0` → "0", `include_episodes: 0` → false);
#   harmless, listed in docs/security.md.
# - positive_data_acceptance: the schema does not express every rule (unknown fields are a 400,
#   `conversation_id` must be readable, ...), so schema-valid bodies are legitimately refused.
# - ignored_auth: X-Memory-User is declared as a security scheme, but it names the acting user and
#   any well-formed value is valid, so "invalid credentials" are accepted by design. Auth is
#   checked below instead (test_fuzz_every_operation_refuses_missing_and_revoked_keys).

config = schemathesis.Config.from_dict({
    "seed": FUZZ_SEED,
    "generation": {"deterministic": True, "max-examples": FUZZ_EXAMPLES, "database": "none"},
})


LIST_OPERATIONS = [("/api/v1/conversations", "get"), ("/api/v1/conversations/{conversation_id}/messages", "get"),
                   ("/api/v1/memories", "get"), ("/api/v1/entities", "get")]


# Request examples that hit the seeded rows (schemathesis' examples phase sends them first): random
# text rarely recalls anything, and a response's items are only validated when there are some.
REQUEST_EXAMPLES = {
    ("/api/v1/recall", "post"): {"query": "combine harvesters", "k": 5, "explain": True, "include_episodes": True},
    ("/api/v1/forget/preview", "post"): {"query": "combine harvesters"},
    ("/api/v1/entities/resolve", "post"): {"text": "1号收割机下周保养吗"},
    ("/api/v1/conversations/{conversation_id}/context", "post"): {"message": "维保建议怎么排序", "budget": 600},
    ("/api/v1/memories", "post"): {"kind": "fact", "content": "The farm has a 40 kW irrigation pump.",
                                   "entities": ["asset:A-1001"]},
}


def _add_request_examples(raw: dict) -> dict:
    for (path, method), example in REQUEST_EXAMPLES.items():
        raw["paths"][path][method]["requestBody"]["content"]["application/json"]["example"] = example
    return raw


served_schema = schemathesis.openapi.from_wsgi("/api/schema/", application, config=config)
schema = schemathesis.openapi.from_dict(_add_request_examples(copy.deepcopy(served_schema.raw_schema)), config=config)
schema.app = application  # call the WSGI app in-process, as from_wsgi does
schema.location = "/api/schema/"


@pytest.fixture(autouse=True)
def _keep_the_test_connection():
    """schemathesis calls the real WSGIHandler, whose request_started/finished signals close "obsolete"
    connections, and a connection inside the test's transaction looks obsolete (autocommit off): on
    MySQL that kills the transaction. Django's own test client disconnects the same handler."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


# --------------------------------------------------------------------------- seeded data
SEED_ORG = "fuzz-seed"


@pytest.fixture(scope="module")
def seeded(django_db_setup, django_db_blocker):
    """One of everything for u1 in org `fuzz-seed`, made once per module through the API and committed;
    each test runs in its own transaction on top, so what a test changes is rolled back. Removed at
    the end of the module (rows, vectors, audit rows)."""
    with django_db_blocker.unblock():
        try:
            data = _seed()
        except BaseException:
            _remove_org(SEED_ORG)
            raise
    yield data
    with django_db_blocker.unblock():
        _remove_org(SEED_ORG)


def _seed() -> dict:
    org = org_get_or_create(slug=SEED_ORG)
    api = make_client(org, "u1")

    def ok(response):
        assert response.status_code < 300, (response.status_code, response.content[:300])
        return response.json() if response.content else None

    entity = ok(api.post("/api/v1/entities", {"type": "asset", "external_id": "A-1001", "name": "1号收割机",
                                              "aliases": ["老收割机"]}, format="json"))
    conversation = ok(api.post("/api/v1/conversations", {"external_id": "fuzz", "title": "维保"}, format="json"))
    cid = conversation["id"]
    messages = ok(api.post(f"/api/v1/conversations/{cid}/messages/batch", {"messages": [
        {"role": "user", "content": "以后给我的维保建议请按紧急程度从高到低排序。1号收割机下周保养。"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call-1", "name": "lookup",
                                                              "arguments": {"id": "A-1001"}}]},
        {"role": "tool", "tool_call_id": "call-1", "content": "{\"status\": \"ok\"}"},
        {"role": "user", "content": "I prefer short answers, and our farm is in Qiqihar."},
    ]}, format="json"))
    ok(api.put(f"/api/v1/conversations/{cid}/tasks/plan", {"kind": "plan", "state": "draft",
                                                            "data": {"steps": [1]}}, format="json"))
    keyed = ok(api.post("/api/v1/memories", {"kind": "fact", "content": "The farm runs three combine harvesters.",
                                             "key": "farm.harvesters", "entities": ["asset:A-1001"]}, format="json"))
    plain = ok(api.post("/api/v1/memories", {"kind": "preference", "content": "Reports as bullet points."},
                        format="json"))
    doomed = ok(api.post("/api/v1/memories", {"kind": "event", "content": "Sold the old tractor in March."},
                         format="json"))
    forget = ok(api.post("/api/v1/forget", {"memory_ids": [doomed["memory"]["id"]]}, format="json"))
    ok(api.post("/api/v1/entities", {"type": "workorder", "external_id": "WO-1", "name": "工单1"}, format="json"))
    relation = ok(api.post("/api/v1/relations", {"from": {"type": "workorder", "external_id": "WO-1"}, "type": "about",
                                                 "to": {"type": entity["type"], "external_id": entity["external_id"]}},
                           format="json"))
    return {
        "org_id": org.id, "headers": auth_headers(api),
        "conversation_id": cid, "message_id": messages[0]["id"], "task_key": "plan",
        "memory_ids": [keyed["memory"]["id"], plain["memory"]["id"]], "request_id": forget["id"],
        "entity": (entity["type"], entity["external_id"]), "relation_id": relation["id"],
    }


def _remove_org(slug: str) -> None:
    from memory.models import Memory
    from memory.vector_index import VectorIndexUnavailable, get_vector_index
    from tenancy.models import AuditEvent, Org

    org = Org.objects.filter(slug=slug).first()
    if org is None:
        return
    ids = list(Memory.objects.filter(org=org).values_list("id", flat=True))
    try:
        index = get_vector_index()
        for name in index.collections():
            index.delete(ids, collection=name)
    except VectorIndexUnavailable:
        pass
    org.delete()
    AuditEvent.objects.filter(org_slug=slug).delete()


def _aim(case, seeded) -> None:
    """Point most generated ids at the seeded rows (deterministically, from the generated value), so
    the deep paths run; the rest stay as generated and exercise the 404s."""
    params = case.path_parameters
    if not params:
        return

    def as_id(value):  # the coverage phase sends ids as strings ("0")
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        return int(value) if isinstance(value, str) and value.isascii() and value.isdigit() else None

    for name in ("conversation_id", "message_id", "request_id", "memory_id"):
        value = as_id(params.get(name))
        if value is not None and value % 4 != 3:
            params[name] = seeded["memory_ids"][value % 2] if name == "memory_id" else seeded[name]
    if isinstance(params.get("key"), str) and len(params["key"]) % 3 != 2:
        params["key"] = seeded["task_key"]
    if isinstance(params.get("external_id"), str) and len(params["external_id"]) % 3 != 2:
        params["type"], params["external_id"] = seeded["entity"]


# --------------------------------------------------------------------------- the fuzz
def _routed(response) -> bool:
    try:
        resolve(unquote(urlsplit(response.request.url).path))
    except Resolver404:
        return False
    return True


@schema.parametrize()
@hsettings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True, database=None, print_blob=False,
           suppress_health_check=list(HealthCheck))
@pytest.mark.django_db
def test_fuzz_api(case, seeded):
    _aim(case, seeded)
    with on_commit_runs():  # extraction and projections run, so their errors surface here too
        response = case.call(headers=seeded["headers"])
    FUZZ_STATUS[case.operation.label][response.status_code] += 1
    checks = CHECKS
    if not _routed(response):
        # A path segment the URL patterns refuse (a negative or non-numeric id) never reaches the API:
        # Django's plain HTML 404 answers it. Everything else must still hold.
        checks = [check for check in CHECKS if check is not content_type_conformance]
    try:
        case.validate_response(response, checks=checks, headers=seeded["headers"])
    except BaseException as exc:
        FUZZ_FAILURES.append(f"{case.operation.label}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
        raise


# --------------------------------------------------------------------------- auth on every operation
def _operations(which):
    return [pytest.param(op.ok(), id=op.ok().label) for op in which.get_all_operations()]


def _concrete_path(operation, seeded) -> str:
    values = {"conversation_id": seeded["conversation_id"], "message_id": seeded["message_id"],
              "memory_id": seeded["memory_ids"][0], "request_id": seeded["request_id"], "key": seeded["task_key"],
              "type": seeded["entity"][0], "external_id": seeded["entity"][1], "conflict_id": seeded.get("conflict_id", 1),
              "relation_id": seeded["relation_id"]}
    return operation.path.format(**values)


@pytest.mark.django_db
@pytest.mark.parametrize("operation", _operations(served_schema))
def test_fuzz_every_operation_refuses_missing_and_revoked_keys(operation, seeded, other_org):
    """Replaces schemathesis' ignored_auth: no key → 401, revoked key → 401, another org's key → 404
    for seeded objects (never 403: existence is not revealed)."""
    path, method = _concrete_path(operation, seeded), operation.method.lower()
    client = Client()
    body = json.dumps({})

    def send(**headers):
        if method == "get":
            return client.get(path, **headers)
        return getattr(client, method)(path, body, content_type="application/json", **headers)

    assert send(HTTP_X_MEMORY_USER="u1").status_code == 401
    assert send(HTTP_AUTHORIZATION="Bearer mk_000000000000_forged", HTTP_X_MEMORY_USER="u1").status_code == 401
    revoked = make_client(Org.objects.get(id=seeded["org_id"]), "u1")
    api_key_revoke(key=ApiKey.objects.get(prefix=revoked.raw_key.split("_")[1]))
    assert send(HTTP_AUTHORIZATION=f"Bearer {revoked.raw_key}", HTTP_X_MEMORY_USER="u1").status_code == 401
    if "{" in operation.path:
        stranger = make_client(other_org, "u1")
        response = send(HTTP_AUTHORIZATION=f"Bearer {stranger.raw_key}", HTTP_X_MEMORY_USER="u1")
        assert response.status_code == 404, (response.status_code, response.content[:200])


# --------------------------------------------------------------------------- the served schema's defects
def _served_case(path: str, method: str, seeded, **kwargs):
    return served_schema[path][method.upper()].Case(**kwargs)


def _call_served(case, seeded):
    with on_commit_runs():
        return case.call(headers=seeded["headers"])


@pytest.mark.django_db
def test_fuzz_served_schema_documents_error_responses(seeded):
    missing = []
    for operation in (op.ok() for op in served_schema.get_all_operations()):
        documented = set(operation.definition.raw.get("responses", {}))
        needed = {"400", "401", "429"} | ({"404"} if "{" in operation.path else set())
        if not (needed <= documented or "4XX" in documented):
            missing.append(f"{operation.label}: {sorted(needed - documented)}")
    assert not missing, "\n".join(missing)


@pytest.mark.django_db
@pytest.mark.parametrize("path,method", LIST_OPERATIONS, ids=[f"{m.upper()} {p}" for p, m in LIST_OPERATIONS])
def test_fuzz_served_schema_list_envelope(path, method, seeded):
    case = _served_case(path, method, seeded, path_parameters={"conversation_id": seeded["conversation_id"]}
                        if "{" in path else {})
    response = _call_served(case, seeded)
    assert response.status_code == 200
    case.validate_response(response, checks=[response_schema_conformance], headers=seeded["headers"])


@pytest.mark.django_db
def test_fuzz_served_schema_memory_key_nullable(seeded):
    case = _served_case("/api/v1/memories/{memory_id}", "get", seeded,
                        path_parameters={"memory_id": seeded["memory_ids"][1]})
    response = _call_served(case, seeded)
    assert response.status_code == 200 and response.json()["key"] is None
    case.validate_response(response, checks=[response_schema_conformance], headers=seeded["headers"])


@pytest.mark.django_db
def test_fuzz_served_schema_memory_history(seeded):
    case = _served_case("/api/v1/memories/{memory_id}/history", "get", seeded,
                        path_parameters={"memory_id": seeded["memory_ids"][0]})
    response = _call_served(case, seeded)
    assert response.status_code == 200
    case.validate_response(response, checks=[response_schema_conformance], headers=seeded["headers"])


# --------------------------------------------------------------------------- inputs schemathesis never generates
# Its generators stick to valid UTF-8 and shallow JSON; these two shapes cost an attacker ~100 kB.
def _send_raw(method: str, path: str, raw: str, seeded):
    client = Client(raise_request_exception=False)
    return client.generic(method, path, raw, content_type="application/json", HTTP_ACCEPT="application/json",
                          HTTP_AUTHORIZATION=seeded["headers"]["Authorization"],
                          HTTP_X_MEMORY_USER=seeded["headers"]["X-Memory-User"])


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/recall", "/api/v1/memories", "/mcp"])
def test_fuzz_deeply_nested_json_is_a_400(path, seeded):
    response = _send_raw("POST", path, "[" * 50_000 + "]" * 50_000, seeded)
    assert response.status_code == 400, response.status_code
    assert "nested deeper than" in response.content.decode(), response.content[:200]


@pytest.mark.django_db
def test_fuzz_json_nested_beyond_the_bound_names_the_field(seeded):
    """Below the parser's recursion limit but beyond MAX_JSON_DEPTH (MySQL's JSON columns stop at 100)."""
    data = {"note": 1}
    for _ in range(80):
        data = {"n": data}
    raw = json.dumps({"state": "ok", "data": data})
    response = _send_raw("PUT", f"/api/v1/conversations/{seeded['conversation_id']}/tasks/deep", raw, seeded)
    assert response.status_code == 400 and "data" in response.json(), response.content[:200]


SURROGATES = [  # a lone UTF-16 surrogate inside a free-form JSON value, and the field the 400 must name
    ("PUT", "/api/v1/conversations/{cid}/tasks/surrogate", '{"state": "ok", "data": {"note": "\\ud800"}}', "data"),
    ("POST", "/api/v1/entities",
     '{"type": "asset", "external_id": "S-1", "name": "n", "attributes": {"k": "\\ud800"}}', "attributes"),
    ("POST", "/api/v1/conversations/{cid}/messages",
     '{"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "f", "arguments": {"a": "\\ud800"}}]}',
     "tool_calls"),
    ("POST", "/api/v1/conversations/{cid}/context", '{"message": "hi", "tools": [{"name": "\\ud800"}]}', "tools"),
    ("POST", "/mcp", '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
                     '"params": {"name": "recall_memory", "arguments": {"query": "\\ud800"}}}', "params.arguments.query"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("method,path,raw,field", SURROGATES, ids=["task data", "entity attributes",
                                                                   "tool_call arguments", "context tools", "mcp"])
def test_fuzz_lone_surrogate_in_json_values_is_a_400(method, path, raw, field, seeded):
    response = _send_raw(method, path.format(cid=seeded["conversation_id"]), raw, seeded)
    assert response.status_code == 400, (response.status_code, response.content[:200])
    assert field in response.content.decode(), response.content[:200]


@pytest.mark.django_db
def test_fuzz_forget_with_an_id_beyond_64_bits_is_a_400(seeded):
    response = _send_raw("POST", "/api/v1/forget", json.dumps({"memory_ids": [2 ** 63]}), seeded)
    assert response.status_code == 400, response.status_code
