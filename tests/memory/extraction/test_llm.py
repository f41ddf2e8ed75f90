"""LLMExtractor against a local chat-completions stub: valid answers are mapped, anything else
falls back to the rules without failing the write and without logging text."""
import json
import logging
import time
from datetime import datetime

import pytest

from memory.extraction import ExistingMemory, ExtractionInput, get_extractor
from memory.extraction.llm import PROMPTS_DIR, LLMExtractor, load_prompt
from memory.extraction.rules import RuleExtractor
from tests.memory.extraction.stub_llm_server import Reply, StubLLMServer

AT = datetime.fromisoformat("2026-03-05T09:00:00+08:00")
FARM_OLD = ExistingMemory(short_id=1, kind="fact", content="我们农场在黑龙江佳木斯", slot_key="fact:农场.位置")
OTHER = ExistingMemory(short_id=2, kind="preference", content="我喜欢简洁的回答", slot_key="pref:回答.风格")
CORRECTION = "不对，你记错了，我们农场在黑龙江齐齐哈尔，不是佳木斯。"


@pytest.fixture
def stub():
    with StubLLMServer() as server:
        yield server


def make(stub: StubLLMServer, **kwargs) -> LLMExtractor:
    options = {"base_url": stub.base_url, "model": "stub-model", "timeout": 2.0, "retry_wait": 0.0}
    options.update(kwargs)
    return LLMExtractor(**options)


def memory(**fields):
    item = {"operation": "ADD", "kind": "fact", "content": "我们农场在黑龙江齐齐哈尔", "assertion": "user_stated",
            "slot_key": "fact:农场.位置", "scope": "user", "occurred_at": None, "supersedes": [], "change": None}
    item.update(fields)
    return item


def answer(*memories, dnr=False):
    return {"reasoning": "the user states where the farm is", "memories": list(memories), "do_not_remember": dnr}


def user_input(content=CORRECTION, existing=(FARM_OLD, OTHER)):
    return ExtractionInput(role="user", content=content, occurred_at=AT, existing=list(existing),
                           recent=[("user", "我们农场在黑龙江佳木斯。"), ("assistant", "好的，记下了。")])


def test_valid_add_is_mapped_and_request_follows_the_protocol(stub):
    stub.answer(answer(memory()))
    extractor = make(stub, api_key="sk-test")

    result = extractor.extract(user_input(existing=()))

    assert result.produced_by == "llm:stub-model:extract_v2"
    assert not result.do_not_remember
    [c] = result.candidates
    assert (c.operation, c.kind, c.assertion, c.scope) == ("ADD", "fact", "user_stated", "user")
    assert c.content == "我们农场在黑龙江齐齐哈尔"
    assert c.slot_key == "fact:农场.位置"
    assert c.supersedes == []
    [req] = stub.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test"
    assert req.body["model"] == "stub-model"
    assert req.body["temperature"] == 0
    assert req.body["response_format"] == {"type": "json_object"}
    # The system prompt is the versioned prompt file, verbatim.
    assert req.messages[0] == {"role": "system", "content": (PROMPTS_DIR / "extract_v2.md").read_text(encoding="utf-8")}
    payload = req.user_payload
    assert payload["message"] == {"role": "user", "content": CORRECTION, "time": AT.isoformat(), "weekday": "Thursday"}
    assert payload["recent"][0] == {"role": "user", "content": "我们农场在黑龙江佳木斯。"}


def test_update_maps_supersedes_and_shows_existing_with_short_ids(stub):
    stub.answer(answer(memory(operation="UPDATE", supersedes=[1], change="correction")))

    result = make(stub).extract(user_input())

    [c] = result.candidates
    assert (c.operation, c.supersedes, c.change) == ("UPDATE", [1], "correction")
    assert c.importance > 0.8  # corrections rank above ordinary facts
    existing = stub.requests[0].user_payload["existing"]
    assert existing == [
        {"id": 1, "kind": "fact", "content": "我们农场在黑龙江佳木斯", "slot_key": "fact:农场.位置"},
        {"id": 2, "kind": "preference", "content": "我喜欢简洁的回答", "slot_key": "pref:回答.风格"},
    ]


def test_update_without_change_defaults_to_update_and_noop_replaces_nothing(stub):
    stub.answer(answer(memory(operation="UPDATE", supersedes=[1, 1])))
    [c] = make(stub).extract(user_input()).candidates
    assert (c.change, c.supersedes) == ("update", [1])

    stub.answer(answer(memory(operation="NOOP", supersedes=[1])))
    [c] = make(stub).extract(user_input()).candidates
    assert (c.operation, c.supersedes) == ("NOOP", [])


def test_event_time_is_parsed_aware(stub):
    event = memory(kind="event", assertion="confirmed_event", content="1号收割机2026年3月5日液压系统漏油停机了",
                   slot_key="event:1号收割机.液压系统@2026-03-05", occurred_at="2026-03-05T00:00:00")
    stub.answer(answer(event))

    [c] = make(stub).extract(user_input(content="1号收割机今天液压系统漏油停机了。", existing=())).candidates

    assert c.occurred_at == datetime.fromisoformat("2026-03-05T00:00:00+08:00")


def test_model_do_not_remember_drops_every_candidate(stub):
    stub.answer(answer(memory(), dnr=True))
    result = make(stub).extract(user_input(content="我的车牌是浙A12345，用完就算了。", existing=()))
    assert result.do_not_remember and result.candidates == []


def test_explicit_do_not_remember_never_reaches_the_model(stub):
    result = make(stub).extract(user_input(content="我的身份证号是330106199001011234，这个别记下来，只是这次填表用。"))
    assert result.do_not_remember and result.candidates == []
    assert stub.requests == []


def _assert_fell_back(result, inp, caplog, reason):
    assert result.produced_by == "rules-fallback"
    expected = RuleExtractor().extract(inp)
    assert result.candidates == expected.candidates
    assert result.do_not_remember == expected.do_not_remember
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and r.name == "memory.extraction.llm"]
    assert warnings, "a fallback must be logged"
    logged = " ".join(r.getMessage() for r in warnings)
    assert reason in logged
    assert "齐齐哈尔" not in logged and "佳木斯" not in logged  # never the message or memory text


def test_garbage_falls_back_to_rules(stub, caplog):
    stub.answer_text("好的！我记住了：你们农场在齐齐哈尔。")
    inp = user_input()

    result = make(stub).extract(inp)

    _assert_fell_back(result, inp, caplog, "invalid:not_json")
    [c] = result.candidates  # the rules still catch the correction
    assert (c.content, c.change, c.supersedes) == ("我们农场在黑龙江齐齐哈尔", "correction", [1])


def test_invalid_supersedes_id_falls_back(stub, caplog):
    stub.answer(answer(memory(operation="UPDATE", supersedes=[7])))
    inp = user_input()

    result = make(stub).extract(inp)

    _assert_fell_back(result, inp, caplog, "supersedes_unknown_id")
    assert "'bad_ids': [7]" in " ".join(r.getMessage() for r in caplog.records)  # ids are fine to log


@pytest.mark.parametrize(
    "bad",
    [
        answer(memory(kind="opinion")),
        answer(memory(operation="MERGE")),
        answer(memory(assertion="rumour")),
        answer(memory(supersedes=["1"])),
        answer(memory(supersedes=[True])),
        answer(memory(content=42)),
        answer(memory(content="  ")),
        answer(memory(scope="forever")),
        answer(memory(slot_key=["fact", "农场"])),
        answer(memory(occurred_at="last tuesday")),
        answer(memory(change="rewrite")),
        answer(memory(operation="UPDATE", supersedes=[])),
        answer(memory(kind="preference", scope="task")),
        answer(memory(kind="suggestion")),  # a suggestion must be a model_suggestion
        {"reasoning": "x", "memories": {"0": memory()}, "do_not_remember": False},
        {"memories": [memory()], "do_not_remember": False},
        {"reasoning": "x", "memories": [memory()], "do_not_remember": "no"},
        [memory()],
    ],
    ids=["kind", "operation", "assertion", "supersedes-str", "supersedes-bool", "content-type", "content-empty",
         "scope", "slot-type", "occurred-at", "change", "update-without-ids", "task-preference", "suggestion-assertion",
         "memories-type", "no-reasoning", "dnr-type", "not-object"],
)
def test_invalid_shapes_fall_back(stub, caplog, bad):
    stub.answer(bad)
    inp = user_input()
    _assert_fell_back(make(stub).extract(inp), inp, caplog, "invalid:")


def test_assistant_turn_can_only_yield_suggestions(stub, caplog):
    stub.answer(answer(memory(content="已安排下周割台保养")))
    inp = ExtractionInput(role="assistant", content="建议下周安排对1号收割机做一次割台保养。", occurred_at=AT)

    result = make(stub).extract(inp)

    assert result.produced_by == "rules-fallback"
    [c] = result.candidates
    assert (c.kind, c.assertion) == ("suggestion", "model_suggestion")


def test_timeout_falls_back_without_retry(stub, caplog):
    stub.slow(30.0)  # answers only after 30 s (or when the stub stops)
    inp = user_input()

    started = time.monotonic()
    result = make(stub, timeout=0.3).extract(inp)

    assert time.monotonic() - started < 10  # liveness: the client's timeout ended the call, not the stub's answer
    _assert_fell_back(result, inp, caplog, "reason=timeout")
    assert len(stub.requests) == 1  # a slow model is not asked twice


def test_http_500_falls_back(stub, caplog):
    stub.fail(500)
    inp = user_input()
    _assert_fell_back(make(stub).extract(inp), inp, caplog, "status")
    assert len(stub.requests) == 1


def test_bad_envelope_falls_back(stub, caplog):
    stub.enqueue(Reply(raw_body=b'{"choices": []}'))
    inp = user_input()
    _assert_fell_back(make(stub).extract(inp), inp, caplog, "bad_envelope")


def test_transport_error_is_retried_once(stub):
    stub.enqueue(Reply(drop=True))
    stub.answer(answer(memory()))

    result = make(stub).extract(user_input(existing=()))

    assert result.produced_by == "llm:stub-model:extract_v2"
    assert len(stub.requests) == 2


def test_transport_error_twice_falls_back(stub, caplog):
    stub.drop()
    inp = user_input()
    _assert_fell_back(make(stub).extract(inp), inp, caplog, "reason=transport")
    assert len(stub.requests) == 2  # one try plus at most one retry


def test_unreachable_endpoint_falls_back(caplog):
    with StubLLMServer() as gone:
        url = gone.base_url
    inp = user_input()
    result = LLMExtractor(base_url=url, model="m", timeout=1.0, retry_wait=0.0).extract(inp)
    _assert_fell_back(result, inp, caplog, "reason=transport")


def test_prompt_file_is_versioned_and_asks_for_reasoning_first():
    prompt = load_prompt()
    assert prompt.version == "extract_v2"
    assert prompt.text == (PROMPTS_DIR / "extract_v2.md").read_text(encoding="utf-8")
    schema_line = next(line for line in prompt.text.splitlines() if line.startswith('{"reasoning"'))
    parsed = json.loads(schema_line)
    assert list(parsed)[0] == "reasoning"
    assert set(parsed["memories"][0]) >= {"operation", "kind", "content", "assertion", "slot_key", "scope",
                                          "supersedes"}
    for word in ("short integer `id`", "do_not_remember", "model_suggestion", '"task"'):
        assert word in prompt.text


def test_get_extractor_follows_settings(settings, stub):
    settings.LLM_BASE_URL = ""
    assert isinstance(get_extractor(), RuleExtractor)
    settings.LLM_BASE_URL = stub.base_url
    settings.LLM_MODEL = "configured-model"
    settings.LLM_TIMEOUT = 3
    extractor = get_extractor()
    assert isinstance(extractor, LLMExtractor)
    assert (extractor.base_url, extractor.model, extractor.timeout) == (stub.base_url, "configured-model", 3.0)
    assert extractor.produced_by == "llm:configured-model:extract_v2"
