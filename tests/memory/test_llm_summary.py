"""The rolling summary through an LLM: the context endpoint against the local chat-completions stub.
Only a well-formed answer is used; garbage, a 500, a timeout or a dropped connection give the
extractive summary, and the context call still answers."""
import json
import logging

import pytest

from conversations import llm_summary, summaries
from conversations.llm_summary import PROMPTS_DIR
from conversations.models import HistorySummary
from tests.conversations.api_helpers import create_conversation
from tests.memory.extraction.stub_llm_server import Reply, StubLLMServer

pytestmark = pytest.mark.django_db

FILLER = "这是一段关于配件库存、油品型号和人员排班的冗长讨论。" * 6
FIRST = "帮我安排1号收割机的保养，地点在东区维修棚。"


@pytest.fixture
def stub():
    with StubLLMServer() as server:
        yield server


@pytest.fixture
def long_conversation(api):
    conv = create_conversation(api)
    messages = [{"role": "user", "content": FIRST}]
    messages += [{"role": "user" if i % 2 else "assistant", "content": f"第{i}轮：{FILLER}"} for i in range(1, 25)]
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages/batch", {"messages": messages}, format="json")
    assert response.status_code == 201
    return conv


@pytest.fixture
def llm(stub, settings):
    # Configured only after the messages are stored, so extraction never talks to the stub.
    settings.LLM_BASE_URL, settings.LLM_MODEL, settings.SUMMARY_LLM_TIMEOUT = stub.base_url, "stub-model", 0.5
    return stub


def summary_section(api, conv, budget=800):
    response = api.post(f"/api/v1/conversations/{conv['id']}/context", {"message": "确认一下保养安排", "budget": budget},
                        format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["total_tokens"] <= budget
    return next(s for s in body["sections"] if s["name"] == "summary"), body


def test_the_llm_summary_is_used_and_stored(api, long_conversation, llm):
    llm.answer({"summary": "用户: 安排1号收割机保养，地点东区维修棚。"})

    section, body = summary_section(api, long_conversation)

    row = HistorySummary.objects.get()
    assert row.produced_by == "llm:stub-model:summary_v1"
    assert row.text == "用户: 安排1号收割机保养，地点东区维修棚。" and row.text in section["text"]
    [request] = llm.requests
    assert request.body["model"] == "stub-model" and request.body["response_format"] == {"type": "json_object"}
    assert request.messages[0]["content"] == (PROMPTS_DIR / "summary_v1.md").read_text(encoding="utf-8")
    payload = request.user_payload
    assert payload["messages"][0] == {"role": "user", "content": FIRST}
    assert payload["previous_summary"] is None and 0 < payload["max_tokens"] < 800
    # The next turn reuses the stored row: no second request.
    again, _ = summary_section(api, long_conversation)
    assert again["included"][0]["reused"] is True and len(llm.requests) == 1


def test_an_overlong_llm_summary_is_cut_to_its_budget(api, long_conversation, llm):
    llm.answer({"summary": "用户: 东区维修棚。" * 400})
    section, _ = summary_section(api, long_conversation)
    row = HistorySummary.objects.get()
    assert row.produced_by.startswith("llm:") and row.token_count <= llm.requests[0].user_payload["max_tokens"]


@pytest.mark.parametrize("reply", [
    Reply(content="Sure! Here is a summary: the user wants maintenance."),  # prose, not the JSON asked for
    Reply(content=json.dumps({"text": "wrong key"})),
    Reply(content=json.dumps({"summary": "   "})),
    Reply(raw_body=b"<html>bad gateway</html>"),
    Reply(status=500),
    Reply(content=json.dumps({"summary": "too late"}), delay=3.0),  # beyond SUMMARY_LLM_TIMEOUT
    Reply(drop=True),
], ids=["prose", "wrong-key", "blank", "bad-envelope", "http-500", "timeout", "dropped"])
def test_a_failing_llm_falls_back_to_the_extractive_summary(api, long_conversation, llm, reply, caplog):
    llm.enqueue(reply)
    with caplog.at_level(logging.WARNING, logger="conversations.summaries"):
        section, body = summary_section(api, long_conversation)
    row = HistorySummary.objects.get()
    assert row.produced_by == "extractive" and len(llm.requests) == 1
    assert "东区维修棚" in json.dumps(body["messages"], ensure_ascii=False)  # the early key fact survives
    assert "llm summary unavailable" in caplog.text
    assert "东区" not in caplog.text and "冗长" not in caplog.text  # logs never carry conversation text


def test_without_an_llm_no_request_is_made(api, long_conversation, stub, settings):
    settings.LLM_BASE_URL = ""
    summary_section(api, long_conversation)
    assert HistorySummary.objects.get().produced_by == "extractive" and stub.requests == []


def test_the_summary_path_is_the_real_module():
    # conversations.summaries imports it at module level: a missing or broken module fails every test that
    # assembles a context, instead of being swallowed at call time.
    assert summaries.summarize_llm is llm_summary.summarize_llm
