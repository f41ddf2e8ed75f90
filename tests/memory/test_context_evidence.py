"""The caller's evidence in the context, the priority order and what every section reports."""
import json

import pytest
from django.conf import settings
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from conversations.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    REPLY_PRIMING_TOKENS,
    count_message_tokens,
    count_messages_tokens,
    count_tokens,
)
from memory.context.evidence import EVIDENCE_HEADER, Evidence, evidence_tokens, evidence_units, render_evidence
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db

SYSTEM = "你是农机维保助手。引用证据时用 [n]。"
PASSAGES = [
    {"id": "manual-4.2", "text": "液压油每工作500小时或每年更换一次，以先到者为准。", "source": "维保手册 4.2", "score": 0.62},
    {"id": "manual-4.3", "text": "更换液压油时必须同时更换回油滤芯。", "source": "维保手册 4.3", "score": 0.91},
    {"id": "bulletin-17", "text": "S780 机型 2025 年起改用 HV46 低温液压油。", "source": "技术通报 17", "score": 0.48},
]


def post_batch(api, conv, messages):
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages/batch", {"messages": messages}, format="json")
    assert response.status_code == 201, response.content


def context(api, conv, message, **body):
    response = api.post(f"/api/v1/conversations/{conv['id']}/context", {"message": message, **body}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def sections(ctx):
    return {s["name"]: s for s in ctx["sections"]}


def test_evidence_follows_the_system_prompt_ranked_and_numbered_while_memories_are_not(api):
    old = create_conversation(api, "old")
    post_batch(api, old, [{"role": "user", "content": "我喜欢简洁的回答，不要长篇大论。"}])
    conv = create_conversation(api, "now")
    post_batch(api, conv, [{"role": "user", "content": "1号收割机的液压油该换了吗？"}])

    ctx = context(api, conv, "液压油多久换一次？", system=SYSTEM, evidence=PASSAGES, budget=2000)

    by_name = sections(ctx)
    evidence = by_name["evidence"]
    assert [s["name"] for s in ctx["sections"]][:2] == ["system", "evidence"]
    assert evidence["included"] == ["manual-4.3", "manual-4.2", "bulletin-17"]  # by score, best first
    assert evidence["dropped"] == [] and evidence["truncated"] == []
    assert ctx["messages"][1] == {"role": "system", "content": evidence["text"]}
    assert evidence["text"].splitlines() == [
        EVIDENCE_HEADER,
        "[1] 更换液压油时必须同时更换回油滤芯。 (source: 维保手册 4.3)",
        "[2] 液压油每工作500小时或每年更换一次，以先到者为准。 (source: 维保手册 4.2)",
        "[3] S780 机型 2025 年起改用 HV46 低温液压油。 (source: 技术通报 17)",
    ]
    memories = by_name["memories"]["text"]
    assert "简洁" in memories and "[1]" not in memories and memories.startswith("Long-term memory")
    assert all(line.startswith("- [") and not line[3].isdigit() for line in memories.splitlines()[1:])
    assert ctx["total_tokens"] == count_messages_tokens(ctx["messages"]) <= 2000


def test_without_scores_the_callers_order_is_the_rank(api):
    conv = create_conversation(api)
    unscored = [{k: v for k, v in p.items() if k != "score"} for p in PASSAGES]
    ctx = context(api, conv, "液压油多久换一次？", evidence=unscored)
    assert sections(ctx)["evidence"]["included"] == [p["id"] for p in PASSAGES]
    assert ctx["messages"][0]["content"].startswith(EVIDENCE_HEADER)  # first, when there is no system prompt


def test_a_tight_budget_drops_the_lowest_ranked_evidence_first_and_says_so(api):
    conv = create_conversation(api)
    post_batch(api, conv, [{"role": "user", "content": f"第{i}条：收割机的保养记录和配件更换情况。" * 3} for i in range(12)])
    passages = [{"id": f"p{i}", "text": f"第{i}段：" + "液压系统检查步骤与注意事项。" * 12, "source": f"手册 {i}",
                 "score": 1.0 - i / 10} for i in range(8)]
    ctx = context(api, conv, "液压系统怎么检查？", system=SYSTEM, evidence=passages, budget=600)
    evidence = sections(ctx)["evidence"]
    kept = len(evidence["included"])
    assert 0 < kept < 8
    assert evidence["included"] == [f"p{i}" for i in range(kept)]  # top-K, in rank order
    assert evidence["dropped"] == [f"p{i}" for i in range(kept, 8)]
    assert ctx["total_tokens"] <= 600
    # The recent messages kept only their own share while evidence was cut.
    room = 600 - REPLY_PRIMING_TOKENS - sections(ctx)["system"]["tokens"] - sections(ctx)["message"]["tokens"]
    recent_share = int(room * settings.CONTEXT_SECTION_BUDGETS["recent"])
    assert sections(ctx)["recent"]["tokens"] <= recent_share + count_tokens(passages[kept]["text"])


def test_an_overlong_passage_is_cut_and_reported_truncated(api, settings):
    settings.CONTEXT_EVIDENCE_MAX_TOKENS = 40
    conv = create_conversation(api)
    long = {"id": "long", "text": "滤芯更换周期说明。" * 60, "source": "手册 9", "score": 0.99}
    ctx = context(api, conv, "滤芯多久换？", evidence=[long, PASSAGES[0]])
    evidence = sections(ctx)["evidence"]
    assert evidence["included"] == ["long", "manual-4.2"] and evidence["truncated"] == ["long"]
    first = evidence["text"].splitlines()[1]
    assert first.startswith("[1] 滤芯更换周期说明。") and "[…]" in first and count_tokens(first) < 60


@pytest.mark.parametrize("evidence,problem", [
    ([{"id": "a", "text": "x"}], "source"),
    ([{"id": "a", "text": "", "source": "s"}], "text"),
    ([{"id": "a", "text": "   ", "source": "s"}], "text"),
    ([{"id": "a", "text": "x" * 8001, "source": "s"}], "8000"),
    ([{"id": "a", "text": "x", "source": "s", "url": "u"}], "url"),
    ([{"id": "a", "text": "x", "source": "s"}, {"id": "a", "text": "y", "source": "s"}], "unique"),
    ([{"id": f"a{i}", "text": "x", "source": "s"} for i in range(51)], "50"),
    ("not a list", "list"),
])
def test_invalid_evidence_is_a_400_naming_the_field(api, evidence, problem):
    conv = create_conversation(api)
    response = api.post(f"/api/v1/conversations/{conv['id']}/context", {"message": "x", "evidence": evidence},
                        format="json")
    assert response.status_code == 400 and "evidence" in response.json()
    assert problem in json.dumps(response.json(), ensure_ascii=False)


def test_shares_must_not_add_up_to_more_than_the_budget(api):
    conv = create_conversation(api)
    response = api.post(f"/api/v1/conversations/{conv['id']}/context",
                        {"message": "x", "section_budgets": {"evidence": 0.9}}, format="json")
    assert response.status_code == 400 and "section_budgets" in response.json()
    ok = context(api, conv, "x", section_budgets={"evidence": 0.2, "recent": 0.46})
    assert ok["total_tokens"] <= settings.CONTEXT_DEFAULT_BUDGET


@pytest.mark.parametrize("budget", [64, 120, 200])
def test_small_budget_in_a_new_conversation_keeps_memories_when_room_is_left(api, budget):
    # Empty sections (no evidence, no history, no summary) give their shares to the memories.
    old = create_conversation(api, "old")
    post_batch(api, old, [{"role": "user", "content": "我喜欢简洁的回答。"}])
    conv = create_conversation(api, "new")
    ctx = context(api, conv, "怎么回答我", budget=budget)
    memories = sections(ctx)["memories"]
    assert memories["included"] and "简洁" in memories["text"], ctx
    assert ctx["total_tokens"] <= budget


def test_the_messages_carry_exactly_the_sections(api):
    old = create_conversation(api, "old")
    post_batch(api, old, [{"role": "user", "content": "我们农场在黑龙江齐齐哈尔。"}])
    conv = create_conversation(api, "now")
    api.put(f"/api/v1/conversations/{conv['id']}/tasks/plan-1", {"kind": "plan", "state": "draft", "data": {"step": 1}},
            format="json")
    post_batch(api, conv, [{"role": "user", "content": f"第{i}轮：农场在哪里？{'冗长的讨论。' * 30}"} for i in range(20)])
    ctx = context(api, conv, "我们农场在哪？", system=SYSTEM, evidence=PASSAGES, budget=1500)
    texts = [s for s in ctx["sections"] if s["name"] not in ("recent", "message") and s["text"]]
    assert [m["content"] for m in ctx["messages"][:len(texts)]] == [s["text"] for s in texts]
    assert [m["role"] for m in ctx["messages"][:len(texts)]] == ["system"] * len(texts)
    recent = sections(ctx)["recent"]
    window = ctx["messages"][len(texts):-1]
    assert len(window) == len(recent["included"]) > 0 and recent["dropped"]
    assert sum(s["tokens"] for s in ctx["sections"]) + REPLY_PRIMING_TOKENS == ctx["total_tokens"]
    assert ctx["messages"][-1] == {"role": "user", "content": "我们农场在哪？"}


# --------------------------------------------------------------------------- property

LOWER_THAN_EVIDENCE = {"task_state": ["task_state"], "memories": ["preferences", "memories"], "episodes": ["episodes"],
                       "summary": ["summary"], "recent": ["recent"]}

passage = st.tuples(st.integers(5, 400), st.one_of(st.none(), st.floats(0, 1)))
turn = st.one_of(st.tuples(st.just("msg"), st.integers(1, 300)), st.tuples(st.just("tools"), st.integers(1, 2)))


@hsettings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.integers(150, 4000), passages=st.lists(passage, max_size=12), plan=st.lists(turn, max_size=10),
       system=st.booleans())
def test_property_placement(api, budget, passages, plan, system):
    conv = create_conversation(api)
    messages, call = [], 0
    for kind, size in plan:
        if kind == "msg":
            messages.append({"role": "user", "content": "保养" * size})
        else:
            ids = [f"c{call + i}" for i in range(size)]
            call += size
            messages.append({"role": "assistant", "content": "", "tool_calls": [{"id": i, "name": "f", "arguments": {}} for i in ids]})
            messages += [{"role": "tool", "tool_call_id": i, "content": "记录" * 200} for i in ids]
    if messages:
        post_batch(api, conv, messages)
    evidence = [{"id": f"e{i}", "text": "证据" * size, "source": f"doc {i}", "score": score}
                for i, (size, score) in enumerate(passages)]
    ctx = context(api, conv, "保养记录", budget=budget, evidence=evidence, system=SYSTEM if system else "")
    by_name = sections(ctx)

    # Total ≤ budget, exactly counted.
    assert ctx["total_tokens"] == count_messages_tokens(ctx["messages"]) <= budget
    # Evidence right after the system prompt.
    if by_name["evidence"]["included"]:
        assert ctx["messages"][1 if system else 0]["content"] == by_name["evidence"]["text"]
    assert sorted(by_name["evidence"]["included"] + by_name["evidence"]["dropped"]) == sorted(e["id"] for e in evidence)
    # Tool calls paired.
    open_calls: set = set()
    for message in ctx["messages"]:
        if message["role"] == "assistant":
            assert not open_calls
            open_calls = {c["id"] for c in message.get("tool_calls") or []}
        elif message["role"] == "tool":
            assert message["tool_call_id"] in open_calls
            open_calls.discard(message["tool_call_id"])
    assert not open_calls
    # Priority: a dropped passage never fits in what lower sections got beyond their own shares plus
    # what is left (a few tokens of slack: sections are priced line by line, then counted whole).
    room = budget - REPLY_PRIMING_TOKENS - by_name["system"]["tokens"] - by_name["message"]["tokens"]
    shares = {name: int(room * f) for name, f in settings.CONTEXT_SECTION_BUDGETS.items()}
    excess = sum(max(0, by_name[name]["tokens"] - sum(shares[p] for p in parts))
                 for name, parts in LOWER_THAN_EVIDENCE.items())
    slack = budget - ctx["total_tokens"]
    units = sum(len(s["included"]) for s in ctx["sections"]) + 4
    frame = 0 if by_name["evidence"]["included"] else MESSAGE_OVERHEAD_TOKENS + count_tokens(EVIDENCE_HEADER)
    for dropped in by_name["evidence"]["dropped"]:
        text = next(e for e in evidence if e["id"] == dropped)["text"]
        assert count_tokens(text) + frame + 8 > excess + slack - units, (dropped, excess, slack)


def test_the_summary_never_swallows_what_the_recent_share_holds(api):
    # Rolling the summary ahead (for reuse) used to cover the whole window of a short conversation.
    conv = create_conversation(api)
    post_batch(api, conv, [
        {"role": "user", "content": "1号收割机今天干了多少小时？"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "name": "get_hours", "arguments": {"asset": "A-1001"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"asset\":\"A-1001\",\"engine_hours\":498}"},
        {"role": "assistant", "content": "1号收割机累计 498 小时。"},
    ])
    ctx = context(api, conv, "液压油该换了吗？", budget=110, system=SYSTEM,
                  section_budgets={"evidence": 0.05, "recent": 0.25, "summary": 0.4})
    by_name = sections(ctx)
    # The older messages did not fit: summarised.
    assert by_name["summary"]["included"], [(s["name"], s["tokens"], s["included"], s["dropped"]) for s in ctx["sections"]][-2:]
    assert by_name["summary"]["included"][0]["covers_until_seq"] < 4
    assert {"role": "assistant", "content": "1号收割机累计 498 小时。"} in ctx["messages"]
    assert ctx["total_tokens"] <= 110


def test_a_tool_result_without_its_call_is_reported_dropped_not_sent(api):
    conv = create_conversation(api)
    post_batch(api, conv, [{"role": "user", "content": "查一下工时。"},
                           {"role": "tool", "tool_call_id": "ghost", "content": "{\"engine_hours\": 498}"},
                           {"role": "assistant", "content": "好的。"}])
    ids = [m["id"] for m in api.get(f"/api/v1/conversations/{conv['id']}/messages").json()["results"]]
    ctx = context(api, conv, "多少小时？")
    recent = sections(ctx)["recent"]
    assert recent["included"] == [ids[0], ids[2]] and recent["dropped"] == [ids[1]]
    assert all(m["role"] != "tool" for m in ctx["messages"])


_EDGES = list("ab Z9 0\n\r\t.,;:!?()[]/-#。，液压油😀é'") + ["'s", "  ", "\n\n", " \n", "kb/doc-12#3"]
_edge_text = st.lists(st.sampled_from(_EDGES), max_size=25).map("".join)


@hsettings(max_examples=300, deadline=None)
@given(items=st.lists(st.tuples(_edge_text, _edge_text), min_size=1, max_size=12), data=st.data(),
       cap=st.sampled_from([2, 6, 1000]))
def test_evidence_tokens_is_the_count_of_the_rendered_message(items, data, cap):
    units = evidence_units([Evidence(id=str(i), text=t, source=s) for i, (t, s) in enumerate(items)],
                           max_passage_tokens=cap)
    taken = data.draw(st.lists(st.sampled_from(range(len(items))), unique=True))
    text = render_evidence(units, taken)
    assert evidence_tokens(units, taken) == (count_message_tokens({"role": "system", "content": text}) if text else 0)
