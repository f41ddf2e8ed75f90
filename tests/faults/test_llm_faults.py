"""Fault 5: the LLM endpoint is slow, failing or answering garbage.

LLM_BASE_URL points at a programmable OpenAI-compatible stub (real HTTP on loopback) and messages
are appended through the API as in production (autocommit, eager extraction in the request).
Holds, for every fault: the append answers 201, the message is extracted (extracted_at set, never
left NULL), the rule extractor answers instead (each standing memory's version says
`rules-fallback`), the memories the rules find are all there, once, and the endpoint really was
asked (so the fallback is the thing under test).
"""
import json

import pytest
from django.db.models import Count

from conversations.models import Message
from memory.extraction import ExtractionInput
from memory.extraction.rules import RuleExtractor
from memory.models import Memory, MemoryVersion
from tests.conversations.api_helpers import create_conversation
from tests.faults.conftest import FACTS, post, server_client
from tests.memory.extraction.stub_llm_server import Reply, StubLLMServer

pytestmark = pytest.mark.django_db(transaction=True)

PER_MODE = 2
TIMEOUT = 0.5


def _valid_memory(content: str, **extra) -> dict:
    return {"operation": "ADD", "kind": "fact", "assertion": "user_stated", "content": content, **extra}


# name -> how to program the stub for the next PER_MODE requests
MODES = {
    "slow (3 s, timeout 0.5 s)": lambda stub: stub.slow(3.0),
    "HTTP 500": lambda stub: stub.fail(500),
    "HTTP 429": lambda stub: stub.fail(429),
    "connection dropped": lambda stub: stub.drop(),
    "prose instead of JSON": lambda stub: stub.answer_text("Sure! I will remember that the user likes tractors."),
    "JSON of the wrong shape": lambda stub: stub.answer({"reasoning": "ok", "memories": "all of them"}),
    "unknown memory kind": lambda stub: stub.answer({"reasoning": "r", "memories": [
        _valid_memory("The user likes tractors", kind="opinion")], "do_not_remember": False}),
    "supersedes an id never shown": lambda stub: stub.answer({"reasoning": "r", "memories": [
        _valid_memory("The user likes tractors", operation="UPDATE", supersedes=[99])], "do_not_remember": False}),
    "not a chat.completion envelope": lambda stub: stub.enqueue(*[Reply(raw_body=b'{"choices": []}')] * PER_MODE),
    "truncated body": lambda stub: stub.enqueue(*[Reply(raw_body=b'{"choices": [{"message": {"cont')] * PER_MODE),
}


def rule_contents(content: str) -> list[str]:
    from django.utils import timezone

    result = RuleExtractor().extract(ExtractionInput(role="user", content=content, occurred_at=timezone.now(),
                                                     existing=[], recent=[]))
    return [c.content for c in result.candidates]


def standing_from(message_id: int):
    return Memory.objects.filter(sources__message_id=message_id).exclude(kind="episode").distinct()


def test_llm_faults_fall_back_to_rules_and_lose_no_message(org, own_index, settings, tally):
    api = server_client(org)
    conversation = create_conversation(api)
    total = tally("LLM slow/failing/garbage: appends")
    per_mode = {}
    with StubLLMServer() as stub:
        settings.LLM_BASE_URL, settings.LLM_MODEL, settings.LLM_TIMEOUT = stub.base_url, "stub-model", TIMEOUT
        facts = iter([f for f in FACTS if rule_contents(f) and f != "I am allergic to penicillin"])

        # Control: a well-formed answer is used as is (the LLM path is live, not silently the rules).
        stub.answer({"reasoning": "r", "memories": [_valid_memory("The user is allergic to penicillin")],
                     "do_not_remember": False})
        response = post(api, f"/api/v1/conversations/{conversation['id']}/messages",
                        {"role": "user", "content": "I am allergic to penicillin"})
        assert response.status_code == 201
        control = standing_from(response.json()["id"]).get()
        assert control.versions.get().actor.startswith("llm:stub-model:")  # e.g. llm:stub-model:extract_v2

        for mode, program in MODES.items():
            asked_before = len(stub.requests)
            program(stub)
            t = per_mode[mode] = {"attempted": 0, "succeeded": 0, "lost": 0, "fallback": 0, "asked": 0}
            for _ in range(PER_MODE):
                content = next(facts)
                t["attempted"] += 1
                response = post(api, f"/api/v1/conversations/{conversation['id']}/messages",
                                {"role": "user", "content": content, "external_ref": f"llm-{content[:20]}"})
                if response.status_code != 201:
                    continue
                t["succeeded"] += 1
                message = Message.objects.get(id=response.json()["id"])
                standing = list(standing_from(message.id))
                expected = rule_contents(content)
                found = {m.content for m in standing}
                t["lost"] += (message.extracted_at is None) + len([c for c in expected if c not in found])
                t["fallback"] += (MemoryVersion.objects.filter(memory__in=standing, actor="rules-fallback")
                                  .values("memory").distinct().count())
            t["asked"] = len(stub.requests) - asked_before

    duplicated = (Memory.objects.filter(org=org, status="active").exclude(kind="episode")
                  .values("kind", "content_hash").annotate(n=Count("id")).filter(n__gt=1).count()
                  + Memory.objects.filter(org=org, kind="episode").values("sources__message_id")
                  .annotate(n=Count("id", distinct=True)).filter(n__gt=1).count())
    total.attempted = sum(t["attempted"] for t in per_mode.values())
    total.succeeded = sum(t["succeeded"] for t in per_mode.values())
    total.lost = sum(t["lost"] for t in per_mode.values()) + Message.objects.filter(extracted_at__isnull=True).count()
    total.duplicated = duplicated
    total.extra.update(modes=len(MODES), fallback_memories=sum(t["fallback"] for t in per_mode.values()))
    for mode, t in per_mode.items():
        print(f"  {mode}: {json.dumps(t)}")

    for mode, t in per_mode.items():
        assert t["succeeded"] == t["attempted"], (mode, t)
        assert t["lost"] == 0, (mode, t)
        assert t["asked"] >= PER_MODE, (mode, t)  # the endpoint was really asked, once or twice per message
        assert t["fallback"] >= PER_MODE, (mode, t)  # every message gave at least one rules-fallback memory
    assert total.lost == 0 and total.duplicated == 0
    # Every standing memory written while the endpoint misbehaved came from the rules.
    actors = set(MemoryVersion.objects.filter(memory__org=org).exclude(memory__kind="episode")
                 .exclude(memory=control).values_list("actor", flat=True))
    assert actors == {"rules-fallback"}, actors


@pytest.mark.parametrize("when", ["9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00"])
def test_llm_answer_with_an_out_of_range_date_does_not_lose_the_message(when, org, own_index, settings, tally):
    api = server_client(org)
    conversation = create_conversation(api)
    t = tally(f"LLM date {when}: appends")
    with StubLLMServer() as stub:
        settings.LLM_BASE_URL, settings.LLM_MODEL, settings.LLM_TIMEOUT = stub.base_url, "stub-model", TIMEOUT
        stub.answer({"reasoning": "r", "memories": [_valid_memory("The user keeps invoices", valid_to=when)],
                     "do_not_remember": False})
        t.attempted = 1
        response = post(api, f"/api/v1/conversations/{conversation['id']}/messages",
                        {"role": "user", "content": "I keep every invoice for ten years"})
    t.succeeded = int(response.status_code == 201)
    t.lost = Message.objects.filter(extracted_at__isnull=True).count()
    assert response.status_code == 201
    assert t.lost == 0
