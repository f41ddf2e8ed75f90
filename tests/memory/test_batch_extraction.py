"""/messages/batch extracts its messages together (memory/services/extraction.py with extraction_batch.py): one encoder
call per model and bulk episode writes, with the decisions of appending the messages one by one."""
import sys

import pytest

from conversations.models import Message
from memory.models import Memory, MemoryConflict
from memory.vectors import active_embedder
from tests.conftest import make_client
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db

# One user's session: statements, an update and a correction of the same slot, an exact and a near
# restatement, a temporary instruction, a do-not-remember, a tool round trip, assistant suggestions
# and questions, in both languages.
SESSION = [
    {"role": "user", "content": "维保计划默认给我看未来两周的。"},
    {"role": "assistant", "content": "好的，之后维保计划默认显示未来两周。"},
    {"role": "user", "content": "我们农场在黑龙江佳木斯。"},
    {"role": "user", "content": "I prefer short answers without tables."},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "name": "get_asset_status",
                                                          "arguments": {"asset": 3}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"asset\": 3, \"hours\": 1240, \"status\": \"ok\"}"},
    {"role": "assistant", "content": "建议下周安排对3号收割机做一次割台保养。"},
    {"role": "user", "content": "以后维保计划默认改成看未来一个月的。"},
    {"role": "user", "content": "我们农场在黑龙江佳木斯。"},
    {"role": "user", "content": "这次只看本周的就行。"},
    {"role": "user", "content": "我的身份证号是330106199001011234，这个别记下来，只是这次填表用。"},
    {"role": "user", "content": "不对，你记错了，我们农场在黑龙江齐齐哈尔，不是佳木斯。"},
    {"role": "user", "content": "What did the last inspection of harvester no. 3 find?"},
    {"role": "user", "content": "Our main depot is in Harbin."},
    {"role": "assistant", "content": "I suggest checking the hydraulic hoses of harvester no. 3 before the season."},
    {"role": "user", "content": "Actually our main depot moved to Qiqihar last spring."},
]


def _timed(messages):
    out = []
    for i, m in enumerate(messages):
        out.append({**m, "occurred_at": f"2026-03-{1 + i:02d}T09:00:00+08:00"})
    return out


def _snapshot(user: str) -> list[tuple]:
    """Every memory of the user as what it says and how it stands, plus where it came from (by
    message seq) and what replaced it (by content): ids differ between the two runs, meaning must not."""
    rows = list(Memory.objects.filter(user_id=user).prefetch_related("versions", "sources__message"))
    content = {m.id: m.content for m in rows}
    out = []
    for m in rows:
        out.append((m.kind, m.content, m.status, m.scope, m.assertion, m.slot_key or "",
                    content.get(m.superseded_by_id, "") if m.superseded_by_id else "", m.access_count,
                    m.version, m.importance, tuple(sorted((v.n, v.reason) for v in m.versions.all())),
                    tuple(sorted(s.message.seq for s in m.sources.all() if s.message_id)),
                    m.invalid_reason or "", str(m.valid_to is not None), m.projected_version == m.version))
    return sorted(out)


def _conflicts(user: str) -> list[tuple]:
    return sorted((c.older.content, c.newer.content, c.status)
                  for c in MemoryConflict.objects.filter(user_id=user).select_related("older", "newer"))


def _messages(user: str) -> list[tuple]:
    return [(m.seq, m.extracted_at is not None, m.do_not_remember)
            for m in Message.objects.filter(user_id=user).order_by("seq")]


def test_batch_gives_the_memories_of_one_by_one(org):
    batched, single = make_client(org, "batch-user"), make_client(org, "single-user")
    messages = _timed(SESSION)
    conv = create_conversation(batched, "b")
    response = batched.post(f"/api/v1/conversations/{conv['id']}/messages/batch", {"messages": messages},
                            format="json")
    assert response.status_code == 201, response.content
    conv = create_conversation(single, "s")
    i = 0
    while i < len(messages):  # one by one, except a tool call with its result (the API needs the pair)
        j = i + 1
        while j < len(messages) and messages[j]["role"] == "tool":
            j += 1
        if j - i == 1:
            response = single.post(f"/api/v1/conversations/{conv['id']}/messages", messages[i], format="json")
        else:
            response = single.post(f"/api/v1/conversations/{conv['id']}/messages/batch",
                                   {"messages": messages[i:j]}, format="json")
        assert response.status_code == 201, response.content
        i = j

    got, want = _snapshot("batch-user"), _snapshot("single-user")
    assert got == want
    # The session exercises what the semantics are about (a vacuous equality would pass anything).
    statuses = {row[2] for row in want}
    assert {"active", "superseded"} <= statuses, want
    assert any(row[6] for row in want), "some memory is superseded by another"
    assert any(row[0] == "episode" for row in want) and any(row[3] == "task" for row in want)
    assert any(row[7] > 0 for row in want), "a restatement touched a memory"
    assert _conflicts("batch-user") == _conflicts("single-user")
    assert _messages("batch-user") == _messages("single-user")
    assert all(extracted for _, extracted, _ in _messages("batch-user"))


def _append_one_by_one(api, conv_id: int, messages: list[dict]) -> None:
    i = 0
    while i < len(messages):  # a tool call travels with its result (the API needs the pair)
        j = i + 1
        while j < len(messages) and messages[j]["role"] == "tool":
            j += 1
        path = "messages" if j - i == 1 else "messages/batch"
        body = messages[i] if j - i == 1 else {"messages": messages[i:j]}
        assert api.post(f"/api/v1/conversations/{conv_id}/{path}", body, format="json").status_code == 201
        i = j


def test_batch_shows_the_extractor_what_one_by_one_shows(org, monkeypatch):
    """What the batch reads once (the memories shown, the recent turns) stays in step with its own
    writes: every message's extractor input is the one-by-one input, in order."""
    from memory.extraction.rules import RuleExtractor
    from memory.services.extraction_batch import Batch

    seen: dict[str, list] = {"batch": [], "single": []}
    original_batch, original_rules = Batch.extract, RuleExtractor.extract

    def batch_extract(self, message, inp, extractor):
        seen["batch"].append(inp)
        return original_batch(self, message, inp, extractor)

    def rules_extract(self, inp):
        if mode == "single":
            seen["single"].append(inp)
        return original_rules(self, inp)

    monkeypatch.setattr(Batch, "extract", batch_extract)
    monkeypatch.setattr(RuleExtractor, "extract", rules_extract)
    messages = _timed(SESSION + FRESH)
    mode = "batch"
    api = make_client(org, "inputs-batch")
    conv = create_conversation(api, "ib")
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages/batch", {"messages": messages}, format="json")
    assert response.status_code == 201, response.content
    mode = "single"
    api = make_client(org, "inputs-single")
    conv = create_conversation(api, "is")
    _append_one_by_one(api, conv["id"], messages)
    assert seen["batch"] == seen["single"]
    assert any(inp.existing for inp in seen["single"]) and any(inp.recent for inp in seen["single"])


def _from_subject_matching() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("memory.subjects"):
            return True
        frame = frame.f_back
    return False


def _record_part_calls(monkeypatch) -> dict[str, list[list[str]]]:
    """The texts of every encode() call, per model of the live embedder, except subject matching's
    value-masked forms (memory/subjects: a few short texts per standing write, cached per text)."""
    embedder = active_embedder()
    parts = getattr(embedder, "parts", (embedder,))
    calls: dict[str, list[list[str]]] = {part.model_id: [] for part in parts}
    for part in parts:
        original = part.encode

        def recorded(texts, _original=original, _id=part.model_id):
            if not _from_subject_matching():
                calls[_id].append(list(texts))
            return _original(texts)

        monkeypatch.setattr(part, "encode", recorded)
    return calls


FRESH = [  # distinct subjects, no restatement: every candidate is a new memory
    {"role": "user", "content": "我们合作社有12台拖拉机。"},
    {"role": "assistant", "content": "建议在春播前检查播种机的排种器。"},
    {"role": "user", "content": "I prefer reports in the morning."},
    {"role": "user", "content": "Our agronomist is called Wang Fang."},
    {"role": "assistant", "content": "I suggest servicing the sprayer pump next week."},
    {"role": "user", "content": "以后请用微信提醒我。"},
]




def test_batch_embeds_its_texts_in_two_calls_per_model(org, monkeypatch):
    api = make_client(org, "enc-batch")
    conv = create_conversation(api, "enc-b")
    active_embedder().encode_one("warm")  # the live collection and lazy loads before counting
    calls = _record_part_calls(monkeypatch)
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages/batch", {"messages": _timed(FRESH)},
                        format="json")
    assert response.status_code == 201, response.content
    contents = set(Memory.objects.filter(user_id="enc-batch").values_list("content", flat=True))
    assert len(contents) > len(FRESH), "episodes and extracted memories were written"
    for model, model_calls in calls.items():
        # Two calls: the messages and the sentences the gate reads (D25), then the candidates' texts
        # not among them; every memory's content is in one of them, and no text is encoded twice.
        assert len(model_calls) == 2, model
        texts = [t for call in model_calls for t in call]
        assert contents <= set(texts), model
        assert len(texts) == len(set(texts)), model

    # The same messages one by one: a call per message and per extracted memory.
    api = make_client(org, "enc-single")
    conv = create_conversation(api, "enc-s")
    for model_calls in calls.values():
        model_calls.clear()
    for message in _timed(FRESH):
        assert api.post(f"/api/v1/conversations/{conv['id']}/messages", message, format="json").status_code == 201
    single = set(Memory.objects.filter(user_id="enc-single").values_list("content", flat=True))
    assert single == contents
    for model, model_calls in calls.items():
        assert len(model_calls) >= len(single), model
