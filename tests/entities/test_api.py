import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from entities.models import Entity
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db

FLEET = [
    {"type": "asset", "external_id": "A-1001", "name": "1号收割机", "aliases": ["东区收割机"], "attributes": {"model": "S780"}},
    {"type": "asset", "external_id": "A-1002", "name": "2号收割机", "aliases": ["西区收割机"]},
    {"type": "asset", "external_id": "A-2001", "name": "3号拖拉机", "aliases": ["大拖"]},
    {"type": "asset_model", "external_id": "MODEL-S780", "name": "S780 联合收割机", "aliases": ["S780"]},
    {"type": "workorder", "external_id": "WO-2026-0012", "name": "工单0012", "aliases": ["0012号工单"]},
]


@pytest.fixture
def fleet(api):
    response = api.post("/api/v1/entities/bulk", {"entities": FLEET}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def resolve(api, text, conversation_id=None):
    body = {"text": text}
    if conversation_id:
        body["conversation_id"] = conversation_id
    response = api.post("/api/v1/entities/resolve", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_upsert_is_idempotent_and_types_are_separate(api):
    first = api.post("/api/v1/entities", {"type": "asset", "external_id": "X-1", "name": "甲"}, format="json")
    again = api.post("/api/v1/entities", {"type": "asset", "external_id": "X-1", "name": "乙"}, format="json")
    other_type = api.post("/api/v1/entities", {"type": "vehicle", "external_id": "X-1", "name": "丙"}, format="json")
    assert (first.status_code, again.status_code, other_type.status_code) == (201, 200, 201)
    assert Entity.objects.count() == 2 and Entity.objects.get(type="asset").name == "乙"


def test_list_search_and_deactivate(api, fleet):
    names = [e["external_id"] for e in api.get("/api/v1/entities?type=asset").json()["results"]]
    assert names == ["A-1001", "A-1002", "A-2001"]
    assert [e["external_id"] for e in api.get("/api/v1/entities?search=拖拉机").json()["results"]] == ["A-2001"]
    assert api.post("/api/v1/entities/asset/A-2001/deactivate", {}, format="json").status_code == 200
    assert resolve(api, "3号拖拉机怎么了")["status"] == "none"


def test_external_ids_with_slashes_reach_every_route(api):
    from urllib.parse import quote

    assert api.post("/api/v1/entities", {"type": "workorder", "external_id": "WO/2024/7", "name": "工单七"},
                    format="json").status_code == 201
    for path in ("WO/2024/7", quote("WO/2024/7", safe="")):
        assert api.get(f"/api/v1/entities/workorder/{path}").json()["external_id"] == "WO/2024/7"
    assert api.post("/api/v1/entities/workorder/WO/2024/7/access/grant", {"user": "u2"},
                    format="json").status_code == 204
    assert api.post("/api/v1/entities/workorder/WO/2024/7/deactivate", {}, format="json").json()["active"] is False


def test_external_ids_ending_with_an_action_suffix_are_refused(api):
    for external_id in ("X/deactivate", "X/access/grant", "X/access/revoke"):
        response = api.post("/api/v1/entities", {"type": "asset", "external_id": external_id, "name": "n"}, format="json")
        assert response.status_code == 400 and "external_id" in response.json(), response.content
    assert api.post("/api/v1/entities", {"type": "asset", "external_id": "deactivate", "name": "n"},
                    format="json").status_code == 201


def test_other_org_cannot_see_entities(api_other_org, fleet):
    assert api_other_org.get("/api/v1/entities").json()["results"] == []
    assert api_other_org.get("/api/v1/entities/asset/A-1001").status_code == 404
    assert resolve(api_other_org, "1号收割机")["status"] == "none"


def test_resolution_rules_through_the_api(api, fleet):
    assert resolve(api, "A-1002 的保养记录")["entity"]["external_id"] == "A-1002"
    assert resolve(api, "工单0012现在什么进度")["entity"]["external_id"] == "WO-2026-0012"
    assert resolve(api, "S780这个机型常见什么故障")["entity"]["external_id"] == "MODEL-S780"
    ambiguous = resolve(api, "那台收割机的保养到期了吗")
    assert ambiguous["status"] == "ambiguous"
    assert sorted(c["external_id"] for c in ambiguous["candidates"]) == ["A-1001", "A-1002"]
    conv = create_conversation(api)
    api.post(f"/api/v1/conversations/{conv['id']}/messages", {"role": "user", "content": "查一下3号拖拉机的维保记录。"},
             format="json")
    assert resolve(api, "它为什么停机了", conv["id"])["entity"]["external_id"] == "A-2001"
    later = create_conversation(api, "later")
    assert resolve(api, "上次那台拖拉机修好了吗", later["id"])["entity"]["external_id"] == "A-2001"


def test_revocation_takes_effect_immediately_everywhere(api, fleet):
    conv = create_conversation(api)
    api.post(f"/api/v1/conversations/{conv['id']}/messages",
             {"role": "user", "content": "3号拖拉机的变速箱上周大修过，花了两万三。"}, format="json")
    assert "两万三" in json.dumps(api.post("/api/v1/recall", {"query": "大修花了多少钱"}, format="json").json(),
                                ensure_ascii=False)
    assert api.post("/api/v1/entities/asset/A-2001/access/revoke", {"user": "u1"}, format="json").status_code == 204
    assert resolve(api, "3号拖拉机大修花了多少钱")["status"] == "none"
    recall = api.post("/api/v1/recall", {"query": "大修花了多少钱"}, format="json").json()
    ctx = api.post(f"/api/v1/conversations/{create_conversation(api, 'x')['id']}/context",
                   {"message": "大修花了多少钱"}, format="json").json()
    assert "两万三" not in json.dumps(recall, ensure_ascii=False) + json.dumps(
        [s for s in ctx["sections"] if s["name"] in ("memories", "episodes", "summary")], ensure_ascii=False)
    assert api.get("/api/v1/entities/asset/A-2001").status_code == 404
    api.post("/api/v1/entities/asset/A-2001/access/grant", {"user": "u1"}, format="json")
    assert resolve(api, "3号拖拉机大修花了多少钱")["entity"]["external_id"] == "A-2001"


def test_ambiguous_candidates_are_capped_and_say_so(api, fleet, settings):
    more = [{"type": "asset", "external_id": f"A-100{i}", "name": f"{i}号收割机"} for i in range(3, 8)]
    assert api.post("/api/v1/entities/bulk", {"entities": more}, format="json").status_code == 201
    body = resolve(api, "那台收割机的保养到期了吗")
    assert (body["status"], len(body["candidates"]), body["candidates_truncated"]) == ("ambiguous", 7, False)
    settings.RESOLVE_MAX_CANDIDATES = 3
    body = resolve(api, "那台收割机的保养到期了吗")
    assert body["status"] == "ambiguous" and body["candidates_truncated"] is True
    assert [c["external_id"] for c in body["candidates"]] == ["A-1001", "A-1002", "A-1003"]
    assert resolve(api, "1号收割机")["candidates_truncated"] is False


def test_grants_restrict_to_listed_users(api, api_u2):
    api.post("/api/v1/entities", {"type": "asset", "external_id": "S-1", "name": "保密烘干机", "grants": ["u2"]}, format="json")
    assert resolve(api, "保密烘干机")["status"] == "none"
    assert resolve(api_u2, "保密烘干机")["entity"]["external_id"] == "S-1"


@pytest.mark.parametrize("body,field", [
    ({"type": "Asset!", "external_id": "x", "name": "n"}, "type"),
    ({"type": "asset", "name": "n"}, "external_id"),
    ({"type": "asset", "external_id": "x", "name": "n", "grants": ["bad user"]}, "grants"),
    ({"type": "asset", "external_id": "x", "name": "n", "org": "other"}, "org"),
])
def test_invalid_entities_are_400(api, body, field):
    response = api.post("/api/v1/entities", body, format="json")
    assert response.status_code == 400 and field in response.json()


class _Policy(BaseHTTPRequestHandler):
    delay = 0.0
    allowed: set = set()
    asked: list = []  # external ids of each request

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.asked.append([e["id"] for e in body["entities"]])
        time.sleep(self.delay)
        answer = {"allowed": [e for e in body["entities"] if e["id"] in self.allowed]}
        payload = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        try:
            self.wfile.write(payload)
        except BrokenPipeError:  # the client gave up (the timeout case): expected
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def policy_server(settings, monkeypatch):
    from entities import policy

    monkeypatch.setattr(policy, "_policy", None)  # an adapter of an earlier test points at its own server
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Policy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.ENTITY_ACCESS_POLICY = "http"
    settings.ENTITY_POLICY_URL = f"http://127.0.0.1:{server.server_address[1]}/access"
    settings.ENTITY_POLICY_TIMEOUT = 0.3
    settings.ENTITY_POLICY_CACHE_TTL = 0.0
    yield _Policy
    server.shutdown()
    _Policy.delay, _Policy.allowed, _Policy.asked = 0.0, set(), []


def test_http_policy_allows_denies_and_fails_closed(api, fleet, policy_server):
    policy_server.allowed = {"A-1001"}
    assert resolve(api, "1号收割机")["entity"]["external_id"] == "A-1001"
    assert resolve(api, "2号收割机")["status"] == "none"
    policy_server.delay = 1.0  # slower than the timeout: deny
    assert resolve(api, "1号收割机")["status"] == "none"


def test_http_policy_is_asked_only_about_the_candidates_returned(api, fleet, policy_server, settings):
    more = [{"type": "asset", "external_id": f"A-10{i:02d}", "name": f"{i}号收割机"} for i in range(3, 41)]
    assert api.post("/api/v1/entities/bulk", {"entities": more}, format="json").status_code == 201
    settings.RESOLVE_MAX_CANDIDATES = 2
    policy_server.allowed = {"A-1001", "A-1003", "A-1004"}
    body = resolve(api, "收割机的保养计划")
    assert [c["external_id"] for c in body["candidates"]] == ["A-1001", "A-1003"] and body["candidates_truncated"]
    asked = {i for request in policy_server.asked for i in request}
    assert asked <= {f"A-10{i:02d}" for i in range(1, 9)}  # the first few, not the 40 harvesters
    policy_server.delay = 1.0  # slower than the timeout: deny, whatever the candidates
    assert resolve(api, "收割机的保养计划")["status"] == "none"
