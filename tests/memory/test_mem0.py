"""The Mem0-compatible surface (memory/mem0/, docs/mem0.md), driven over HTTP by the real
`mem0ai` MemoryClient against the live test server."""
import os
import time

os.environ.setdefault("MEM0_TELEMETRY", "False")  # the client would otherwise report to PostHog

import httpx
import pytest
from mem0 import MemoryClient
from mem0.exceptions import MemoryError as Mem0Error

from memory.models import ForgetRule, Memory
from tenancy.models import SCOPE_MEM0_COMPAT, AuditEvent
from tenancy.services import api_key_create

live = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _mem0_home(tmp_path, monkeypatch):
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0"))


def compat_key(org) -> str:
    return api_key_create(org=org, name="mem0", scopes=[SCOPE_MEM0_COMPAT])[1]


@pytest.fixture
def client(live_server, org) -> MemoryClient:
    return MemoryClient(api_key=compat_key(org), host=live_server.url)


@pytest.fixture
def other_client(live_server, other_org) -> MemoryClient:
    return MemoryClient(api_key=compat_key(other_org), host=live_server.url)


def wait_event(client: MemoryClient, event_id: str, timeout: float = 30) -> dict:
    """Poll the add's event as a Mem0 user would, until extraction finished."""
    deadline = time.monotonic() + timeout
    while True:
        body = client.client.get(f"/v1/event/{event_id}/").json()
        if body["status"] in ("SUCCEEDED", "FAILED") or time.monotonic() > deadline:
            return body
        time.sleep(0.2)


def add(client: MemoryClient, messages, **kwargs) -> dict:
    answer = client.add(messages, **kwargs)
    assert answer["event_id"] and answer["status"] in ("PENDING", "RUNNING", "SUCCEEDED"), answer
    event = wait_event(client, answer["event_id"])
    assert event["status"] == "SUCCEEDED", event
    return event


def contents(page: dict) -> list[str]:
    return [m["memory"] for m in page["results"]]


@live
def test_add_with_inference_extracts_chinese_memories_with_metadata(client):
    event = add(client, "我对花生过敏，请记住。", user_id="u1", metadata={"source": "onboarding"})
    added = [r for r in event["results"] if r["event"] == "ADD"]
    assert added, event
    page = client.get_all(filters={"user_id": "u1"})
    assert page["count"] == len(page["results"]) >= 1
    memory = next(m for m in page["results"] if "花生" in m["memory"])
    assert isinstance(memory["id"], str) and memory["user_id"] == "u1"
    assert memory["metadata"] == {"source": "onboarding"}
    assert client.get(memory["id"])["memory"] == memory["memory"]
    found = client.search("我有什么过敏？", filters={"user_id": "u1"})
    assert found["results"] and "花生" in found["results"][0]["memory"], found
    assert found["results"][0]["id"] == memory["id"] and "score" in found["results"][0]
