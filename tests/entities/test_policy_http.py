import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from entities.policy_http import HttpCallbackPolicy

EXTERNAL = {
    1: ("asset", "A-1001"),
    2: ("asset", "A-1002"),
    3: ("asset", "A-2001"),
    5: ("workorder", "WO-2026-0012"),
}


class BusinessService:
    """A stub of the business service's access callback, on 127.0.0.1 with a free port."""

    def __init__(self) -> None:
        self.allowed: set[tuple[str, str]] = set()
        self.status = 200
        self.raw_body: bytes | None = None  # overrides the JSON answer
        self.delay = 0.0
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self.release = threading.Event()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                service.requests.append(body)
                service.headers.append(dict(self.headers))
                if service.delay:
                    service.release.wait(service.delay)
                if service.raw_body is not None:
                    payload = service.raw_body
                else:
                    asked = {(e["type"], e["id"]) for e in body["entities"]}
                    granted = sorted(asked & service.allowed)
                    answer = {"allowed": [{"type": t, "id": i} for t, i in granted]}
                    payload = json.dumps(answer).encode()
                try:
                    self.send_response(service.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up (timeout test)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/access"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def service() -> Iterator[BusinessService]:
    svc = BusinessService()
    yield svc
    svc.stop()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def policy(service: BusinessService, clock: FakeClock) -> Iterator[HttpCallbackPolicy]:
    p = HttpCallbackPolicy(service.url, timeout=0.5, cache_ttl=5.0, api_key="secret", clock=clock)
    yield p
    p.close()


def test_allows_some_and_denies_others(service, policy):
    service.allowed = {("asset", "A-1001"), ("workorder", "WO-2026-0012")}
    assert policy.allowed_ids("farmco", "u1", [1, 2, 3, 5], EXTERNAL) == {1, 5}
    [request] = service.requests
    assert request["org"] == "farmco" and request["user"] == "u1"
    assert sorted((e["type"], e["id"]) for e in request["entities"]) == sorted(
        EXTERNAL[i] for i in (1, 2, 3, 5)
    )
    assert service.headers[0]["Authorization"] == "Bearer secret"


def test_ids_without_external_reference_are_denied(service, policy):
    service.allowed = {("asset", "A-1001")}
    assert policy.allowed_ids("farmco", "u1", [1, 99], EXTERNAL) == {1}


def test_answer_cannot_grant_what_was_not_asked(service, policy):
    service.raw_body = json.dumps(
        {"allowed": [{"type": "asset", "id": "A-1001"}, {"type": "asset", "id": "A-1002"}]}
    ).encode()
    assert policy.allowed_ids("farmco", "u1", [1], EXTERNAL) == {1}
    # A-1002 was never asked about, so nothing about it was cached as allowed.
    service.raw_body = json.dumps({"allowed": []}).encode()
    assert policy.allowed_ids("farmco", "u1", [2], EXTERNAL) == set()


def test_timeout_denies_and_is_not_cached(service, clock):
    service.allowed = {("asset", "A-1001")}
    service.delay = 5.0
    with HttpCallbackPolicy(service.url, timeout=0.2, clock=clock) as policy:
        assert policy.allowed_ids("farmco", "u1", [1], EXTERNAL) == set()
        service.delay = 0.0
        assert policy.allowed_ids("farmco", "u1", [1], EXTERNAL) == {1}
    assert len(service.requests) == 2


def test_server_error_denies_and_is_not_cached(service, policy):
    service.allowed = {("asset", "A-1001")}
    service.status = 500
    assert policy.allowed_ids("farmco", "u1", [1], EXTERNAL) == set()
    service.status = 200
    assert policy.allowed_ids("farmco", "u1", [1], EXTERNAL) == {1}
    assert len(service.requests) == 2


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"denied": []}',
        b'{"allowed": "A-1001"}',
        b'{"allowed": [["asset", "A-1001"]]}',
        b'{"allowed": [{"type": "asset", "id": 1001}]}',
    ],
)
def test_malformed_answer_denies(service, policy, body):
    service.raw_body = body
    assert policy.allowed_ids("farmco", "u1", [1, 2], EXTERNAL) == set()


def test_connection_refused_denies(clock):
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/access"
    with HttpCallbackPolicy(url, timeout=0.2, clock=clock) as policy:
        assert policy.allowed_ids("farmco", "u1", [1], EXTERNAL) == set()


def test_cache_hit_within_ttl_and_expiry_after(service, policy, clock):
    service.allowed = {("asset", "A-1001")}
    assert policy.allowed_ids("farmco", "u1", [1, 2], EXTERNAL) == {1}
    clock.now += 4.9
    assert policy.allowed_ids("farmco", "u1", [1, 2], EXTERNAL) == {1}
    assert len(service.requests) == 1  # both the grant and the denial were cached

    service.allowed = {("asset", "A-1002")}  # access changed in the business service
    clock.now += 0.2
    assert policy.allowed_ids("farmco", "u1", [1, 2], EXTERNAL) == {2}
    assert len(service.requests) == 2


def test_cache_is_per_org_and_user(service, policy):
    service.allowed = {("asset", "A-1001")}
    policy.allowed_ids("farmco", "u1", [1], EXTERNAL)
    policy.allowed_ids("farmco", "u2", [1], EXTERNAL)
    policy.allowed_ids("other", "u1", [1], EXTERNAL)
    assert [(r["org"], r["user"]) for r in service.requests] == [
        ("farmco", "u1"),
        ("farmco", "u2"),
        ("other", "u1"),
    ]


def test_only_uncached_entities_are_asked(service, policy):
    service.allowed = {("asset", "A-1001"), ("asset", "A-1002")}
    policy.allowed_ids("farmco", "u1", [1], EXTERNAL)
    assert policy.allowed_ids("farmco", "u1", [1, 2], EXTERNAL) == {1, 2}
    assert [e["id"] for e in service.requests[1]["entities"]] == ["A-1002"]


def test_invalidate(service, policy):
    service.allowed = {("asset", "A-1001")}
    for user in ("u1", "u2"):
        policy.allowed_ids("farmco", user, [1], EXTERNAL)
    service.allowed = set()  # revoked in the business service

    policy.invalidate(org="farmco", user_id="u1")
    assert policy.allowed_ids("farmco", "u1", [1], EXTERNAL) == set()
    assert policy.allowed_ids("farmco", "u2", [1], EXTERNAL) == {1}  # still cached

    policy.invalidate()
    assert policy.allowed_ids("farmco", "u2", [1], EXTERNAL) == set()


def test_large_requests_are_split_into_batches(service, clock):
    external = {i: ("asset", f"A-{i}") for i in range(25)}
    service.allowed = set(external.values())
    with HttpCallbackPolicy(service.url, max_batch=10, clock=clock) as policy:
        assert policy.allowed_ids("farmco", "u1", external.keys(), external) == set(external)
    assert [len(r["entities"]) for r in service.requests] == [10, 10, 5]
