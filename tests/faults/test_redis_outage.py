"""Fault 1: the Redis cache dies (SIGKILL) during a mixed write/recall load and comes back empty.

Holds: no write fails or is lost, recall and context keep answering from MySQL (and find what was
just written), nothing is duplicated, and once Redis is back the per-user hash of standing memories
(memory/cache.py, read by context assembly) follows MySQL again: no stale entry for an invalidated
memory, no outdated version, nothing missing.

A second test cuts the network to a Redis that keeps running (a partition, not a restart), so the
cache comes back holding what it had before the outage.
"""
import pytest

from conversations.models import Message
from memory.cache import memory_cache
from memory.models import Memory
from tests.conftest import make_client
from tests.conversations.api_helpers import create_conversation
from tests.faults.conftest import FACTS, duplicates, post

pytestmark = pytest.mark.django_db

STEPS = 22
KILL_AT, RESTART_AT = 7, 15


def hash_vs_mysql(org, user_id: str) -> dict:
    """The cached hash of standing memories against MySQL; present=False when there is no hash."""
    cached = memory_cache.get_all(org.id, user_id)
    if cached is None:
        return {"present": False}
    active = dict(Memory.objects.filter(org=org, user_id=user_id, status="active").exclude(kind="episode")
                  .values_list("id", "version"))
    return {"present": True,
            "stale": sorted(i for i in cached if i not in active),
            "outdated": sorted(i for i, data in cached.items() if i in active and data["version"] != active[i]),
            "missing": sorted(i for i in active if i not in cached)}


def hash_summary(check: dict) -> str:
    if not check["present"]:
        return "absent"
    return f"stale={len(check['stale'])}/outdated={len(check['outdated'])}/missing={len(check['missing'])}"


def memories_in_context(api, conversation_id: int, message: str) -> tuple[int, set[int], bool]:
    response = post(api, f"/api/v1/conversations/{conversation_id}/context", {"message": message, "budget": 4000})
    if response.status_code != 200:
        return response.status_code, set(), False
    body = response.json()
    section = next(s for s in body["sections"] if s["name"] == "memories")
    return 200, set(section["included"]), body["recall_degraded"]


class Load:
    """The mixed load: explicit writes (every third one a preference), message appends (extracted into
    an episode and usually a fact), invalidations, updates, recalls and context requests."""

    def __init__(self, api, conversation_id: int, writes, reads) -> None:
        self.api, self.conversation_id = api, conversation_id
        self.writes, self.reads = writes, reads
        self.explicit: dict[int, tuple[str, str]] = {}  # id -> (kind, content it must have at the end)
        self.invalidated: set[int] = set()
        self.refs: list[str] = []
        self.down = False
        self.during = {"writes": 0, "reads": 0}

    def _write(self, response, expected=(200, 201)) -> bool:
        self.writes.attempted += 1
        self.during["writes"] += self.down
        ok = response.status_code in expected
        self.writes.succeeded += ok
        return ok

    def _read(self, ok: bool, found: bool) -> None:
        self.reads.attempted += 1
        self.during["reads"] += self.down
        self.reads.succeeded += ok
        self.reads.lost += ok and not found  # answered, but without the memory just acknowledged

    def step(self, i: int, content: str, message: str) -> None:
        api = self.api
        kind = "preference" if i % 3 == 0 else "fact"
        response = post(api, "/api/v1/memories", {"kind": kind, "content": content})
        if self._write(response):
            assert response.json()["action"] == "added", response.json()
            self.explicit[response.json()["memory"]["id"]] = (kind, content)
        ref = f"fault-{i}"
        response = post(api, f"/api/v1/conversations/{self.conversation_id}/messages",
                        {"role": "user", "content": message, "external_ref": ref})
        if self._write(response, (201,)):
            self.refs.append(ref)
        ids = list(self.explicit)
        if i % 4 == 3:  # invalidate the memory written two steps ago
            target = ids[-3]
            if self._write(post(api, f"/api/v1/memories/{target}/invalidate", {"reason": "wrong"})):
                self.invalidated.add(target)
        if i % 5 == 4:  # update the memory written one step ago
            target = ids[-2]
            kind_, old = self.explicit[target]
            if self._write(api.patch(f"/api/v1/memories/{target}", {"content": old + ", as confirmed"}, format="json")):
                self.explicit[target] = (kind_, old + ", as confirmed")

        latest = ids[-1]
        response = post(api, "/api/v1/recall", {"query": content, "k": 5})
        found = response.status_code == 200 and latest in [item["id"] for item in response.json()["items"]]
        self._read(response.status_code == 200, found)
        if response.status_code == 200:
            assert not response.json()["degraded"]
        status, included, degraded = memories_in_context(api, self.conversation_id, content)
        self._read(status == 200, latest in included)
        assert not degraded

    def active_preferences(self) -> set[int]:
        return {i for i, (kind, _) in self.explicit.items() if kind == "preference" and i not in self.invalidated}

    def count_end_state(self, org) -> None:
        active = dict(Memory.objects.filter(org=org, user_id="u1", status="active").values_list("id", "content"))
        for memory_id, (_, content) in self.explicit.items():
            if memory_id in self.invalidated:
                self.writes.lost += memory_id in active
            elif active.get(memory_id) != content:
                self.writes.lost += 1
        extracted = set(Message.objects.filter(org=org, external_ref__in=self.refs, extracted_at__isnull=False)
                        .values_list("external_ref", flat=True))
        self.writes.lost += len(set(self.refs) - extracted)
        self.writes.duplicated = duplicates(org, "u1")


def test_redis_killed_during_mixed_load_and_restarted(org, redis_server, cache_on, own_index, tally, settings):
    from memory.tasks import projections_reconcile_task

    # The messages are remembered too (the gate, D25), some as preferences: the always-included
    # preferences are not capped here, so the check is about the restart, not about the cap.
    settings.CONTEXT_MAX_PREFERENCES = 1000
    cache_on(redis_server.url(1))
    api = make_client(org, "u1")
    conversation = create_conversation(api)
    writes, reads = tally("redis killed+restarted: writes"), tally("redis killed+restarted: recall+context")
    load = Load(api, conversation["id"], writes, reads)
    checks = {}
    for i in range(STEPS):
        if i == KILL_AT:
            checks["before_kill"] = hash_vs_mysql(org, "u1")
            redis_server.kill()
            load.down = True
        if i == RESTART_AT:
            redis_server.start()
            load.down = False
            checks["at_restart"] = hash_vs_mysql(org, "u1")
        load.step(i, FACTS[i], FACTS[STEPS + i])
        if i == KILL_AT:  # what the 5-minute reconcile beat job does while Redis is down
            reconcile_while_down = projections_reconcile_task()
    checks["end"] = hash_vs_mysql(org, "u1")
    _, included, _ = memories_in_context(api, conversation["id"], "What do you know about me?")
    load.count_end_state(org)
    missing_prefs = load.active_preferences() - included

    writes.extra.update(during_outage=load.during["writes"],
                        **{f"hash_{k}": hash_summary(v) for k, v in checks.items()},
                        reconcile_task_while_down=reconcile_while_down.get("skipped", "ran"))
    reads.extra.update(during_outage=load.during["reads"], preferences_missing_from_context=len(missing_prefs))
    assert load.during["writes"] > 0 and load.during["reads"] > 0
    assert writes.succeeded == writes.attempted, "a write failed while Redis was down"
    assert writes.lost == 0 and writes.duplicated == 0
    assert reads.succeeded == reads.attempted and reads.lost == 0
    assert checks["before_kill"]["present"] and checks["at_restart"] == {"present": False}  # restarted empty
    for label in ("before_kill", "end"):
        check = checks[label]
        assert check["present"], label
        assert check["stale"] == [] and check["outdated"] == [] and check["missing"] == [], (label, check)
    assert not missing_prefs, "a standing preference did not join the context after the restart"


PARTITION_AT, HEAL_AT, PARTITION_STEPS = 2, 9, 13


def test_redis_partition_heals_without_stale_cache(org, redis_server, tcp_proxy, cache_on, own_index, tally):
    """Same load, but Redis stays up behind a proxy that is cut and restored: on heal the cache holds
    what it had before the partition. After the heal and one reconcile run, the hash must again match
    MySQL and every active preference must join the context."""
    from memory.projections.reconcile import projections_reconcile

    proxy = tcp_proxy(redis_server.port)
    cache_on(f"redis://127.0.0.1:{proxy.port}/1")
    api = make_client(org, "u1")
    conversation = create_conversation(api)
    writes, reads = tally("redis partition: writes"), tally("redis partition: recall+context")
    load = Load(api, conversation["id"], writes, reads)
    for i in range(PARTITION_STEPS):
        if i == PARTITION_AT:
            proxy.cut()
            load.down = True
        if i == HEAL_AT:
            proxy.restore()
            load.down = False
        load.step(i, FACTS[i], FACTS[PARTITION_STEPS + i])
    projections_reconcile()
    check = hash_vs_mysql(org, "u1")
    _, included, _ = memories_in_context(api, conversation["id"], "What do you know about me?")
    load.count_end_state(org)
    missing_prefs = load.active_preferences() - included
    writes.extra.update(during_outage=load.during["writes"], hash_after_heal_and_reconcile=hash_summary(check))
    reads.extra.update(during_outage=load.during["reads"], preferences_missing_from_context=len(missing_prefs))

    assert writes.succeeded == writes.attempted and writes.lost == 0 and writes.duplicated == 0
    assert reads.succeeded == reads.attempted
    assert check["present"]
    assert check["stale"] == [] and check["outdated"] == [] and check["missing"] == [], check
    assert not missing_prefs
