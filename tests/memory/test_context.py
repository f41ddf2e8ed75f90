import json

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from conversations.models import HistorySummary
from conversations.tokens import count_messages_tokens
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db


def post_batch(api, conv, messages):
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages/batch", {"messages": messages}, format="json")
    assert response.status_code == 201, response.content


def context(api, conv, message, **body):
    response = api.post(f"/api/v1/conversations/{conv['id']}/context", {"message": message, **body}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def section(ctx, name):
    return next(s for s in ctx["sections"] if s["name"] == name)


def test_sections_in_order_and_total_within_budget(api):
    old = create_conversation(api, "old")
    post_batch(api, old, [{"role": "user", "content": "以后给我的维保建议请按紧急程度从高到低排序。",
                           "occurred_at": "2026-03-01T09:00:00+08:00"}])
    conv = create_conversation(api, "now")
    api.put(f"/api/v1/conversations/{conv['id']}/tasks/plan-1", {"kind": "plan", "state": "draft", "data": {"step": 1}},
            format="json")
    post_batch(api, conv, [{"role": "user", "content": "把这周的维保建议列一下。"}])
    ctx = context(api, conv, "维保建议怎么排序", budget=1000, system="你是农机维保助手。")
    roles = [m["role"] for m in ctx["messages"]]
    assert roles[0] == "system" and roles[-1] == "user"
    contents = [m["content"] for m in ctx["messages"]]
    task_index = next(i for i, c in enumerate(contents) if c.startswith("Task state"))
    memory_index = next(i for i, c in enumerate(contents) if c.startswith("Long-term memory"))
    recent_index = next(i for i, c in enumerate(contents) if c == "把这周的维保建议列一下。")
    assert 0 < task_index < memory_index < recent_index
    assert "紧急程度" in section(ctx, "memories")["text"]
    assert count_messages_tokens(ctx["messages"]) == ctx["total_tokens"] <= 1000


def test_recent_only_mode_has_no_long_term_sections(api):
    old = create_conversation(api, "old")
    post_batch(api, old, [{"role": "user", "content": "我喜欢简洁的回答，不要长篇大论。"}])
    conv = create_conversation(api, "now")
    ctx = context(api, conv, "我喜欢什么样的回答", recent_only=True)
    assert section(ctx, "memories")["text"] == "" and section(ctx, "episodes")["text"] == ""
    assert "简洁" not in json.dumps(ctx["messages"], ensure_ascii=False)


def test_old_history_becomes_a_reused_summary(api):
    conv = create_conversation(api)
    filler = "这是一段关于配件库存、油品型号和人员排班的冗长讨论。" * 6
    messages = [{"role": "user", "content": "帮我安排1号收割机的保养，地点在东区维修棚。"}]
    messages += [{"role": "user" if i % 2 else "assistant", "content": f"第{i}轮：{filler}"} for i in range(1, 25)]
    post_batch(api, conv, messages)
    first = context(api, conv, "确认一下保养安排", budget=800)
    assert first["total_tokens"] <= 800
    assert "东区维修棚" in json.dumps(first["messages"], ensure_ascii=False)
    assert HistorySummary.objects.count() == 1
    second = context(api, conv, "确认一下保养安排", budget=800)
    assert HistorySummary.objects.count() == 1  # reused, not recomputed
    assert section(second, "summary")["included"][0]["reused"] is True


def test_oversized_tool_result_is_cut_and_pairs_stay_intact(api):
    conv = create_conversation(api)
    records = json.dumps([{"date": f"2025-{m % 12 + 1:02d}-15", "item": f"常规保养{m}", "cost": 300 + m} for m in range(120)],
                         ensure_ascii=False)
    post_batch(api, conv, [
        {"role": "user", "content": "查一下1号收割机的保养记录。"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "name": "get_records", "arguments": {"a": 1}}]},
        {"role": "tool", "content": records, "tool_call_id": "call_1"},
        {"role": "assistant", "content": "共有120条保养记录。"},
    ])
    ctx = context(api, conv, "最贵的一次是多少钱", budget=1200)
    assert ctx["total_tokens"] <= 1200
    tool = [m for m in ctx["messages"] if m["role"] == "tool"]
    calls = [m for m in ctx["messages"] if m.get("tool_calls")]
    assert len(tool) == len(calls) == 1
    assert "omitted" in tool[0]["content"]
    assert ctx["messages"].index(calls[0]) < ctx["messages"].index(tool[0])


def test_tiny_budget_is_still_a_hard_cap_and_a_cut_message_is_flagged(api):
    conv = create_conversation(api)
    post_batch(api, conv, [{"role": "user", "content": "你好" * 200}])
    ctx = context(api, conv, "很长的问题" * 100, budget=64, system="系统提示")
    assert count_messages_tokens(ctx["messages"]) <= 64
    assert ctx["messages"][0] == {"role": "system", "content": "系统提示"}  # the system prompt is never cut
    message = section(ctx, "message")
    assert ctx["message_truncated"] is True and message["truncated"] == ["message"]
    assert ctx["messages"][-1]["content"] == message["text"] and ("很长的问题" * 100).startswith(message["text"])
    assert len(message["text"]) > 0
    whole = context(api, conv, "很长的问题", budget=64, system="系统提示")
    assert whole["message_truncated"] is False and section(whole, "message")["truncated"] == []


def test_a_system_prompt_larger_than_the_budget_is_400_naming_it(api):
    conv = create_conversation(api)
    response = api.post(f"/api/v1/conversations/{conv['id']}/context",
                        {"message": "问题", "budget": 64, "system": "系统提示" * 100}, format="json")
    assert response.status_code == 400 and "system" in response.json()
    assert "budget is 64" in response.json()["system"][0]
    # Tool schemas count with the system prompt, and the message says so.
    tools = [{"type": "function", "function": {"name": f"tool_{i}", "description": "查询设备状态" * 5}} for i in range(5)]
    response = api.post(f"/api/v1/conversations/{conv['id']}/context",
                        {"message": "问题", "budget": 100, "system": "短", "tools": tools}, format="json")
    assert response.status_code == 400 and "tool schemas" in response.json()["system"][0]


def test_context_of_unreadable_conversation_is_404(api, api_u2):
    conv = create_conversation(api)
    response = api_u2.post(f"/api/v1/conversations/{conv['id']}/context", {"message": "x"}, format="json")
    assert response.status_code == 404


@pytest.mark.parametrize("body,field", [({"message": "x", "budget": 10}, "budget"), ({"message": "x", "budget": 10**9}, "budget"),
                                        ({}, "message"), ({"message": "x", "section_budgets": {"memories": 0.95}}, "section_budgets"),
                                        ({"message": "x", "section_budgets": {"bogus": 0.1}}, "section_budgets")])
def test_invalid_context_requests_are_400(api, body, field):
    conv = create_conversation(api)
    response = api.post(f"/api/v1/conversations/{conv['id']}/context", body, format="json")
    assert response.status_code == 400 and field in response.json()


tool_group = st.tuples(st.integers(1, 3), st.integers(0, 3000))


@hsettings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=st.lists(st.one_of(st.tuples(st.just("msg"), st.integers(1, 1500)), st.tuples(st.just("tools"), tool_group)),
                     min_size=1, max_size=12),
       budget=st.integers(64, 3000))
def test_property_budget_never_exceeded_and_tool_pairs_never_broken(api, plan, budget):
    conv = create_conversation(api)
    messages, call = [], 0
    for kind, spec in plan:
        if kind == "msg":
            messages.append({"role": "user", "content": "维保" * (spec // 2) or "x"})
        else:
            calls, size = spec
            ids = [f"c{call + i}" for i in range(calls)]
            call += calls
            messages.append({"role": "assistant", "content": "", "tool_calls": [{"id": i, "name": "f", "arguments": {}} for i in ids]})
            messages += [{"role": "tool", "tool_call_id": i, "content": "[" + ",".join(['{"k":"值"}'] * (size // 8)) + "]"}
                         for i in ids]
    post_batch(api, conv, messages)
    ctx = context(api, conv, "问题", budget=budget)
    assert count_messages_tokens(ctx["messages"]) <= budget
    open_calls = set()
    for message in ctx["messages"]:
        if message["role"] == "assistant":
            assert not open_calls  # every call answered before the next assistant turn
            open_calls = {c["id"] for c in message.get("tool_calls") or []}
        elif message["role"] == "tool":
            assert message["tool_call_id"] in open_calls
            open_calls.discard(message["tool_call_id"])
    assert not open_calls


def test_standing_preferences_join_every_context_but_respect_revocation(api):
    old = create_conversation(api, "old")
    post_batch(api, old, [{"role": "user", "content": "我喜欢简洁的回答，不要长篇大论。"}])
    conv = create_conversation(api, "now")
    ctx = context(api, conv, "3号拖拉机下次什么时候保养")  # unrelated to the preference
    assert "简洁" in section(ctx, "memories")["text"]
    api.post(f"/api/v1/conversations/{old['id']}/access/revoke", {"user": "u1"}, format="json")
    ctx = context(api, conv, "3号拖拉机下次什么时候保养")
    assert "简洁" not in json.dumps(ctx["messages"], ensure_ascii=False)


def test_task_state_section_lists_this_conversations_states_newest_first(api):
    conv, other = create_conversation(api, "tasks"), create_conversation(api, "other-tasks")
    for key, data in (("plan-a", {"step": 1, "备注": "先检修"}), ("draft-b", {"lines": 3})):
        response = api.put(f"/api/v1/conversations/{conv['id']}/tasks/{key}", {"kind": "plan", "state": "draft",
                                                                                "data": data}, format="json")
        assert response.status_code in (200, 201), response.content
    api.put(f"/api/v1/conversations/{other['id']}/tasks/elsewhere", {"kind": "plan", "state": "x", "data": {}},
            format="json")
    # plan-a is updated last, so it leads even though it was created first.
    api.put(f"/api/v1/conversations/{conv['id']}/tasks/plan-a",
            {"kind": "plan", "state": "in_progress", "data": {"step": 2, "备注": "先检修"}}, format="json")
    ctx = context(api, conv, "下一步做什么", budget=2000)
    tasks = section(ctx, "task_state")
    assert tasks["included"] == ["plan-a", "draft-b"]
    assert "state=in_progress" in tasks["text"] and '"备注": "先检修"' in tasks["text"]
    assert "elsewhere" not in tasks["text"]
