import json
from itertools import count

from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from conversations.tokens import count_tokens
from conversations.window import (
    WindowMessage,
    WindowPlan,
    message_tokens,
    normalize_tool_call,
    select_window,
    truncate_tool_result,
)

FILLER = "这是一段关于配件库存、油品型号和人员排班的冗长讨论。" * 6


def _records_json(n: int = 120) -> str:
    # Same shape as the tool-pairs-01 scenario: a long JSON array of maintenance records.
    return json.dumps(
        [{"date": f"2025-{i % 12 + 1:02d}-15", "item": f"常规保养{i}", "cost": 300 + i} for i in range(n)],
        ensure_ascii=False, separators=(",", ":"),
    )


def _tool_conversation() -> list[WindowMessage]:
    return [
        WindowMessage(1, "user", "查一下1号收割机的保养记录。"),
        WindowMessage(2, "assistant", "", tool_calls=[
            {"id": "call_1", "name": "get_maintenance_records", "arguments": {"asset_id": "A-1001"}},
        ]),
        WindowMessage(3, "tool", _records_json(), tool_call_id="call_1"),
        WindowMessage(4, "assistant", "1号收割机共有120条保养记录，最近一次是常规保养。"),
        WindowMessage(5, "user", "那最贵的一次是多少钱？"),
    ]


# ---------------------------------------------------------------------------
# WindowMessage.to_openai
# ---------------------------------------------------------------------------


def test_to_openai_renders_flat_tool_calls_in_openai_shape():
    message = WindowMessage(1, "assistant", "", tool_calls=[
        {"id": "call_1", "name": "lookup", "arguments": {"asset_id": "A-1001", "名称": "收割机"}},
        {"id": "call_2", "name": "lookup", "arguments": '{"asset_id":"A-1002"}'},
    ])

    assert message.to_openai() == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "lookup", "arguments": '{"asset_id":"A-1001","名称":"收割机"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "lookup", "arguments": '{"asset_id":"A-1002"}'}},
        ],
    }


def test_to_openai_keeps_openai_shaped_calls_and_tool_call_id():
    call = {"id": "c9", "type": "function", "function": {"name": "f", "arguments": '{"x":1}'}}

    assert normalize_tool_call(call) == call
    assert WindowMessage(1, "tool", "ok", tool_call_id="c9").to_openai() == {
        "role": "tool", "content": "ok", "tool_call_id": "c9",
    }
    assert WindowMessage(2, "user", "hi").to_openai() == {"role": "user", "content": "hi"}


# ---------------------------------------------------------------------------
# select_window
# ---------------------------------------------------------------------------


def test_budget_zero_or_negative_gives_an_empty_window():
    messages = [WindowMessage(1, "user", "hello"), WindowMessage(2, "assistant", "hi")]

    for budget in (0, -5):
        result = select_window(messages, budget)
        assert result.included == [] and result.tokens == 0
        assert [m.id for m in result.dropped] == [1, 2]


def test_large_budget_includes_everything_in_order():
    messages = [WindowMessage(i, "user" if i % 2 else "assistant", f"message {i}") for i in range(1, 6)]

    result = select_window(messages, 10_000)

    assert [m.id for m in result.included] == [1, 2, 3, 4, 5]
    assert result.dropped == []
    assert result.tokens == sum(message_tokens(m) for m in messages)


def test_long_history_keeps_the_newest_messages_within_budget():
    messages = [WindowMessage(0, "user", "帮我安排1号收割机的保养，地点在东区维修棚。")]
    messages += [WindowMessage(i, "user" if i % 2 else "assistant", f"第{i}轮补充说明：{FILLER}") for i in range(1, 25)]
    messages.append(WindowMessage(25, "user", "时间改到明天下午三点。"))

    result = select_window(messages, 800, query="确认一下保养安排")

    assert result.tokens <= 800
    assert result.included[-1].id == 25
    assert [m.id for m in result.dropped] == list(range(0, result.included[0].id))
    assert result.tokens == sum(message_tokens(m) for m in result.included)


def test_window_is_contiguous_a_big_message_blocks_older_ones():
    messages = [
        WindowMessage(1, "user", "short old"),
        WindowMessage(2, "assistant", "word " * 500),
        WindowMessage(3, "user", "short new"),
    ]

    result = select_window(messages, 60)

    assert [m.id for m in result.included] == [3]
    assert [m.id for m in result.dropped] == [1, 2]


def test_oversized_tool_result_is_cut_and_the_pair_stays_intact():
    result = select_window(_tool_conversation(), 1200, query="最贵的一次是多少钱")

    assert [m.id for m in result.included] == [1, 2, 3, 4, 5]
    assert result.truncated_ids == [3]
    assert result.tokens <= 1200
    tool = next(m for m in result.included if m.role == "tool")
    assert count_tokens(tool.content) <= 300
    assert "tokens of tool output omitted …]" in tool.content
    assert tool.content.startswith('[{"date"')  # the kept items are still a JSON array on the first line
    json.loads(tool.content.splitlines()[0])


def test_tool_group_is_atomic():
    messages = _tool_conversation()
    # Room for the last two messages but not for the call + its (cut) result.
    budget = message_tokens(messages[3]) + message_tokens(messages[4]) + 20

    result = select_window(messages, budget)

    assert [m.id for m in result.included] == [4, 5]
    assert [m.id for m in result.dropped] == [1, 2, 3]


def test_parallel_calls_and_interleaved_messages_form_one_unit():
    messages = [
        WindowMessage(1, "user", "old"),
        WindowMessage(2, "assistant", "", tool_calls=[{"id": "a", "name": "f", "arguments": {}},
                                                       {"id": "b", "name": "g", "arguments": {}}]),
        WindowMessage(3, "tool", "result a", tool_call_id="a"),
        WindowMessage(4, "user", "still waiting?"),
        WindowMessage(5, "tool", "result b", tool_call_id="b"),
        WindowMessage(6, "user", "new"),
    ]
    unit_and_last = sum(message_tokens(m) for m in messages[1:])

    assert [m.id for m in select_window(messages, unit_and_last).included] == [2, 3, 4, 5, 6]
    assert [m.id for m in select_window(messages, unit_and_last - 1).included] == [6]


def test_orphaned_tool_result_is_never_sent():
    messages = [
        WindowMessage(1, "tool", "result of a call we never saw", tool_call_id="gone"),
        WindowMessage(2, "user", "hello"),
        WindowMessage(3, "tool", "answers nothing", tool_call_id="also-gone"),
    ]

    result = select_window(messages, 1000)

    assert [m.id for m in result.included] == [2]
    assert result.dropped == []
    assert result.orphaned_ids == [1, 3]


def test_unanswered_call_is_stripped_from_the_included_copy():
    calls = [{"id": "done", "name": "f", "arguments": {}}, {"id": "pending", "name": "g", "arguments": {}}]
    messages = [
        WindowMessage(1, "assistant", "checking", tool_calls=calls),
        WindowMessage(2, "tool", "ok", tool_call_id="done"),
    ]

    result = select_window(messages, 1000)

    assert [c["id"] for c in result.included[0].to_openai()["tool_calls"]] == ["done"]
    assert result.unanswered_call_ids == ["pending"]
    assert messages[0].tool_calls == calls  # the caller's object is untouched


def test_reused_call_id_without_a_new_result_is_stripped():
    call = {"id": "x", "name": "f", "arguments": {}}
    messages = [
        WindowMessage(1, "assistant", "", tool_calls=[call]),
        WindowMessage(2, "tool", "first answer", tool_call_id="x"),
        WindowMessage(3, "assistant", "again", tool_calls=[call]),
    ]

    result = select_window(messages, 1000)

    assert [m.id for m in result.included] == [1, 2, 3]
    assert "tool_calls" in result.included[0].to_openai()
    assert "tool_calls" not in result.included[2].to_openai()
    assert result.unanswered_call_ids == ["x"]


def test_truncate_tool_result_keeps_the_lines_matching_the_query():
    lines = [f"2025-01-{i:02d} 收割机 A-{1000 + i} 正常运行，无告警" for i in range(1, 29)]
    lines[20] = "2025-01-21 收割机 A-1021 液压泵 压力异常，需要更换密封圈"
    content = "\n".join(lines * 4)

    cut = truncate_tool_result(content, 80, query="液压泵压力异常")

    assert "液压泵" in cut
    assert cut.splitlines()[0].startswith("2025-01-21")
    assert cut.splitlines()[-1].startswith("[… ") and "tokens of tool output omitted" in cut
    assert count_tokens(cut) <= 80


def test_a_query_sharing_no_term_with_the_result_cuts_it_as_no_query_does():
    lines = [f"2025-01-{i:02d} pump P-{100 + i} pressure normal, no alarm" for i in range(1, 29)]
    lines[7] = "2025-01-08 pump P-108 seal leaking, replace the gasket"
    content = "\n".join(lines * 3)

    plain = truncate_tool_result(content, 60)
    unrelated = truncate_tool_result(content, 60, query="收割机 天气 明天")
    matching = truncate_tool_result(content, 60, query="which gasket is leaking")

    assert unrelated == plain and plain.startswith("2025-01-01")
    assert matching != plain and matching.startswith("2025-01-08")
    assert all(count_tokens(cut) <= 60 for cut in (plain, unrelated, matching))


def test_truncate_tool_result_single_line_falls_back_to_the_head():
    content = "x" * 5000

    cut = truncate_tool_result(content, 50)

    assert cut.startswith("xxx") and count_tokens(cut) <= 50 and "omitted" in cut


# ---------------------------------------------------------------------------
# Property: budget, pairing and coverage hold for any conversation
# ---------------------------------------------------------------------------

_ALPHABET = list("abc xyz ABC 0123456789 .,\n{}[]\":") + list("的是东区维修棚收割机保养时间改到明天下午。，") + ["😀"]
_text = st.builds(
    lambda piece, times: piece * times,
    st.text(alphabet=st.sampled_from(_ALPHABET), max_size=60),
    st.integers(min_value=1, max_value=40),
)


@st.composite
def _conversations(draw) -> list[WindowMessage]:
    ids, call_numbers = count(1), count(1)
    messages: list[WindowMessage] = []
    for _ in range(draw(st.integers(min_value=0, max_value=12))):
        kind = draw(st.sampled_from(["user", "assistant", "tools", "tools", "orphan", "reused_id"]))
        used_ids = [c["id"] for m in messages for c in m.tool_calls or []]
        if kind in ("user", "assistant"):
            messages.append(WindowMessage(next(ids), kind, draw(_text)))
        elif kind == "orphan":
            call_id = draw(st.sampled_from([f"ghost_{next(call_numbers)}", None]))
            messages.append(WindowMessage(next(ids), "tool", draw(_text), tool_call_id=call_id))
        elif kind == "reused_id" and used_ids:
            # An agent that reuses an old call id and never answers it this time.
            call = {"id": draw(st.sampled_from(used_ids)), "name": "lookup", "arguments": {}}
            messages.append(WindowMessage(next(ids), "assistant", "again", tool_calls=[call]))
        elif kind == "tools":
            call_ids = [f"call_{next(call_numbers)}" for _ in range(draw(st.integers(min_value=1, max_value=3)))]
            openai_shape = draw(st.booleans())
            calls = [
                {"id": c, "type": "function", "function": {"name": "lookup", "arguments": '{"q":1}'}} if openai_shape
                else {"id": c, "name": "lookup", "arguments": {"q": draw(_text)[:20]}}
                for c in call_ids
            ]
            messages.append(WindowMessage(next(ids), "assistant", draw(st.sampled_from(["", "calling"])),
                                          tool_calls=calls))
            answered = [c for c in call_ids if draw(st.integers(min_value=0, max_value=5))]  # ~1/6 unanswered
            for position, call_id in enumerate(draw(st.permutations(answered))):
                if position and draw(st.integers(min_value=0, max_value=4)) == 0:
                    messages.append(WindowMessage(next(ids), "user", draw(_text)))  # interleaved turn
                messages.append(WindowMessage(next(ids), "tool", draw(_text), tool_call_id=call_id))
    return messages


def _orphan_ids(messages: list[WindowMessage]) -> set[int]:
    seen_calls: set[str] = set()
    orphans: set[int] = set()
    for m in messages:
        if m.role == "tool" and m.tool_call_id not in seen_calls:
            orphans.add(m.id)
        seen_calls.update(c.get("id") for c in m.tool_calls or [])
    return orphans


@hypothesis_settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=_conversations(),
    budget=st.integers(min_value=-10, max_value=3000),
    tool_limit=st.integers(min_value=1, max_value=400),
    query=st.sampled_from(["", "东区维修棚", "abc 123", "明天下午"]),
)
def test_window_invariants(messages, budget, tool_limit, query):
    result = select_window(messages, budget, query=query, tool_result_max_tokens=tool_limit)

    # Budget: never exceeded, and the reported count is the real one.
    assert result.tokens <= max(budget, 0)
    assert result.tokens == sum(message_tokens(m) for m in result.included)
    if budget <= 0:
        assert result.included == []

    # Coverage: every message except orphaned tool results is included or dropped, once.
    orphans = _orphan_ids(messages)
    included_ids = [m.id for m in result.included]
    dropped_ids = [m.id for m in result.dropped]
    assert set(result.orphaned_ids) == orphans
    assert sorted(included_ids + dropped_ids) == sorted(m.id for m in messages if m.id not in orphans)

    # Contiguous and chronological: dropped is the older part, both in input order.
    order = {m.id: i for i, m in enumerate(messages)}
    assert [order[i] for i in dropped_ids + included_ids] == sorted(order[i] for i in dropped_ids + included_ids)

    # Pairs: each included result follows its call, each included call has all its results.
    calls_so_far: set[str] = set()
    pending: set[str] = set()
    for m in result.included:
        if m.role == "tool":
            assert m.tool_call_id in calls_so_far
            pending.discard(m.tool_call_id)
        for call in m.to_openai().get("tool_calls", []):
            calls_so_far.add(call["id"])
            pending.add(call["id"])
    assert pending == set()


def test_window_plan_grows_one_unit_at_a_time_like_select_window():
    messages = [WindowMessage(i, "user", FILLER, seq=i) for i in range(1, 4)] + \
        [dataclass_copy(m, seq=10 + m.id) for m in _tool_conversation()]
    plan = WindowPlan(messages, query="最贵", tool_result_max_tokens=100)
    assert len(plan) == 7  # three fillers, user, the call with its result, assistant, user: 8 messages, 7 units
    for budget in (0, 30, 200, 400, 10_000):
        n = plan.fitting(budget)
        expected = select_window(messages, budget, query="最贵", tool_result_max_tokens=100)
        assert plan.result(n).included == expected.included == plan.newest(n)
        assert plan.result(n).tokens == expected.tokens == sum(plan.cost(i) for i in range(n))
        assert plan.newest_dropped_seq(n) == max((m.seq for m in expected.dropped), default=0)


def test_priced_units_are_every_unit_a_window_within_the_budget_holds_and_the_next():
    messages = [WindowMessage(i, "user", FILLER, seq=i) for i in range(1, 4)] + \
        [dataclass_copy(m, seq=10 + m.id) for m in _tool_conversation()]
    for budget in (0, 30, 200, 400, 10_000):
        plan = WindowPlan(messages, query="最贵", tool_result_max_tokens=100)
        units = plan.priced(budget)
        n = plan.fitting(budget)
        assert len(units) == min(n + 1, len(plan))  # the one that ends the window is priced too
        assert [u.tokens for u in units] == [plan.cost(i) for i in range(len(units))]
        assert [m for u in reversed(units[:n]) for m in u.messages] == plan.newest(n)
        assert sum(u.tokens for u in units[:n]) <= budget
        assert n == len(plan) or sum(u.tokens for u in units) > budget


@hypothesis_settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=_conversations(), cut=st.integers(min_value=0, max_value=40), query=st.sampled_from(["", "东区维修棚"]))
def test_plan_after_a_seq_is_the_plan_of_the_later_messages(messages, cut, query):
    for seq, message in enumerate(messages, start=1):
        message.seq = seq
    plan = WindowPlan(messages, query=query, tool_result_max_tokens=30)
    plan.result(len(plan))  # every unit prepared: the later plan reuses what it can
    later = plan.after(cut)
    fresh = WindowPlan([m for m in messages if m.seq > cut], query=query, tool_result_max_tokens=30)
    assert len(later) == len(fresh)
    for n in range(len(fresh) + 1):
        assert later.result(n) == fresh.result(n)


def dataclass_copy(message, **changes):
    import dataclasses

    return dataclasses.replace(message, **changes)
