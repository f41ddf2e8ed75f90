"""Fault 4: the system of record becomes unreachable, then comes back.

Service profile: the test routes Django's connection through a loopback TCP proxy in front of
MariaDB and cuts it (listener closed, open connections reset) - the database keeps running, the
service cannot reach it. Embedded profile: the SQLite path becomes unopenable (the in-memory test
database is kept alive by a second handle meanwhile, so it is all there when the path returns).

Holds: recall, context, append, memory writes/reads and MCP recall answer 503 with the clear
`database_unavailable` error (readyz says so too), never vector hits served unchecked - also when the
database disappears between the vector search and the MySQL back-check; nothing rejected is stored;
and everything works again once the database is back (rejected writes retried once: stored once).
"""
import json
import sqlite3

import pytest
from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper

from conversations.models import Message
from memory.models import Memory
from tests.conversations.api_helpers import create_conversation
from tests.faults.conftest import FACTS, post, server_client

pytestmark = pytest.mark.django_db(transaction=True)

MCP_HEADERS = {"HTTP_ACCEPT": "application/json", "HTTP_MCP_PROTOCOL_VERSION": "2025-06-18"}


class MysqlOutage:
    """Django's connection goes through a proxy the test can cut."""

    def __init__(self, make_proxy) -> None:
        self.saved = (connection.settings_dict["HOST"], connection.settings_dict["PORT"])
        self.proxy = make_proxy(int(self.saved[1] or 3306))
        connection.close()
        connection.settings_dict["HOST"], connection.settings_dict["PORT"] = "127.0.0.1", str(self.proxy.port)
        self.how = "TCP proxy to MariaDB cut"

    def cut(self) -> None:
        self.proxy.cut()

    def restore(self) -> None:
        self.proxy.restore()

    def close(self) -> None:
        connection.close()
        connection.settings_dict["HOST"], connection.settings_dict["PORT"] = self.saved


class SqliteOutage:
    """The database path cannot be opened; a second handle keeps the in-memory test database alive."""

    UNOPENABLE = "/nonexistent-faults-dir/memory.sqlite3"

    def __init__(self) -> None:
        self.name = connection.settings_dict["NAME"]
        self.keeper = sqlite3.connect(self.name, uri=True) if connection.is_in_memory_db() else None
        self.how = "SQLite path unopenable"

    def cut(self) -> None:
        connection.settings_dict["NAME"] = self.UNOPENABLE
        BaseDatabaseWrapper.close(connection)  # SQLite's close() keeps an in-memory database open

    def restore(self) -> None:
        BaseDatabaseWrapper.close(connection)
        connection.settings_dict["NAME"] = self.name

    def close(self) -> None:
        if connection.settings_dict["NAME"] != self.name:
            self.restore()
        if self.keeper is not None:
            self.keeper.close()


@pytest.fixture
def outage(tcp_proxy):
    if connection.vendor == "mysql":
        handle = MysqlOutage(tcp_proxy)
    elif connection.vendor == "sqlite":
        handle = SqliteOutage()
    else:
        pytest.skip(f"no honest way to take {connection.vendor} away here")
    yield handle
    handle.close()


def mcp_recall(api, query: str):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "recall_memory", "arguments": {"query": query}}}
    return api.post("/mcp", json.dumps(body), content_type="application/json", **MCP_HEADERS)


def test_database_outage_answers_503_and_recovers(org, own_index, outage, monkeypatch, tally):
    api = server_client(org)
    conversation = create_conversation(api)
    memory_ids = [post(api, "/api/v1/memories", {"kind": "fact", "content": FACTS[i]}).json()["memory"]["id"]
                  for i in range(6)]
    assert post(api, f"/api/v1/conversations/{conversation['id']}/messages",
                {"role": "user", "content": FACTS[6]}).status_code == 201
    query = FACTS[2]
    warm = post(api, "/api/v1/recall", {"query": query, "k": 3}).json()  # caches warm, vector hits exist
    assert memory_ids[2] in [item["id"] for item in warm["items"]] and not warm["degraded"]
    messages_before, memories_before = Message.objects.count(), Memory.objects.count()

    requests = tally(f"database unreachable ({outage.how}): requests")
    unchecked, wrong = [], []

    def during(name: str, response, *, mcp: bool = False) -> None:
        requests.attempted += 1
        if mcp:
            body = response.json()
            ok = response.status_code == 503 and body.get("error", {}).get("code") == -32012
            leaked = "result" in body
        elif name == "readyz":
            body = response.json()
            ok = response.status_code == 503 and body["checks"]["database"]["status"] == "down"
            leaked = False
        else:
            body = response.json() if response.get("Content-Type", "").startswith("application/json") else {}
            ok = response.status_code == 503 and body.get("code") == "database_unavailable" and \
                "unavailable" in body.get("detail", "")
            leaked = bool(body.get("items"))
        requests.succeeded += ok
        if leaked:
            unchecked.append(name)
        if not ok:
            wrong.append((name, response.status_code, response.content[:200]))

    # ---------------------------------------------------------------- the database goes away
    outage.cut()
    rejected_writes = []
    for round_ in range(2):
        during("recall", post(api, "/api/v1/recall", {"query": query, "k": 3}))
        during("context", post(api, f"/api/v1/conversations/{conversation['id']}/context", {"message": query}))
        ref = f"db-down-{round_}"
        during("append", post(api, f"/api/v1/conversations/{conversation['id']}/messages",
                              {"role": "user", "content": FACTS[10 + round_], "external_ref": ref}))
        rejected_writes.append(("append", ref, FACTS[10 + round_]))
        during("memory create", post(api, "/api/v1/memories", {"kind": "fact", "content": FACTS[20 + round_]}))
        rejected_writes.append(("memory", None, FACTS[20 + round_]))
        during("memory list", api.get("/api/v1/memories"))
        during("mcp recall_memory", mcp_recall(api, query), mcp=True)
        during("readyz", api.get("/readyz"))
    outage.restore()

    # ---------------------------------------------------------------- gone between vector search and back-check
    from memory.recall import pipeline as recall_pipeline

    original = recall_pipeline.semantic_candidates
    vector_hits = []

    def search_then_lose_the_database(*args, **kwargs):
        hits = original(*args, **kwargs)
        vector_hits.append(len(hits))
        outage.cut()
        return hits

    monkeypatch.setattr(recall_pipeline, "semantic_candidates", search_then_lose_the_database)
    during("recall, database lost after the vector search", post(api, "/api/v1/recall", {"query": query, "k": 3}))
    during("context, database lost after the vector search",
           post(api, f"/api/v1/conversations/{conversation['id']}/context", {"message": query}))
    monkeypatch.setattr(recall_pipeline, "semantic_candidates", original)
    outage.restore()
    assert vector_hits and all(vector_hits), "the vector search did return hits before the database went away"

    # ---------------------------------------------------------------- back
    recovered = tally(f"database unreachable ({outage.how}): after recovery")
    stored_while_down = (Message.objects.count() - messages_before, Memory.objects.count() - memories_before)
    for kind, ref, content in rejected_writes:  # the client retries what was answered 503
        recovered.attempted += 1
        if kind == "append":
            response = post(api, f"/api/v1/conversations/{conversation['id']}/messages",
                            {"role": "user", "content": content, "external_ref": ref})
            recovered.succeeded += response.status_code == 201
            recovered.lost += not Message.objects.filter(external_ref=ref, extracted_at__isnull=False).exists()
            recovered.duplicated += max(0, Message.objects.filter(external_ref=ref).count() - 1)
        else:
            response = post(api, "/api/v1/memories", {"kind": "fact", "content": content})
            recovered.succeeded += response.status_code == 201
            copies = Memory.objects.filter(content=content, status="active").count()
            recovered.lost += copies == 0
            recovered.duplicated += max(0, copies - 1)
    for name, response in (("recall", post(api, "/api/v1/recall", {"query": query, "k": 3})),
                           ("context", post(api, f"/api/v1/conversations/{conversation['id']}/context",
                                            {"message": query})),
                           ("mcp", mcp_recall(api, query)), ("readyz", api.get("/readyz"))):
        recovered.attempted += 1
        recovered.succeeded += response.status_code == 200
    back = post(api, "/api/v1/recall", {"query": query, "k": 3}).json()

    requests.lost = stored_while_down[0] + stored_while_down[1]  # a rejected write must not half-happen
    requests.extra.update(unchecked_vector_hits_served=len(unchecked), other_answers=len(wrong))
    assert not unchecked, unchecked
    assert not wrong, wrong
    assert requests.succeeded == requests.attempted
    assert stored_while_down == (0, 0)
    assert recovered.succeeded == recovered.attempted
    assert recovered.lost == 0 and recovered.duplicated == 0
    assert back["items"][0]["id"] == memory_ids[2] and not back["degraded"]
