from conversations.summarize import summarize_extractive
from conversations.tokens import count_tokens
from conversations.window import WindowMessage

FILLER_SENTENCE = "这是一段关于配件库存、油品型号和人员排班的冗长讨论"


def _window_budget_01() -> list[WindowMessage]:
    """The messages of scenario window-budget-01 (eval/scenarios-zh.jsonl)."""
    messages = [WindowMessage(0, "user", "帮我安排1号收割机的保养，地点在东区维修棚。")]
    for turn in range(1, 25):
        role = "user" if turn % 2 else "assistant"
        messages.append(WindowMessage(turn, role, f"第{turn}轮补充说明：" + f"{FILLER_SENTENCE}。" * 6))
    messages.append(WindowMessage(25, "user", "时间改到明天下午三点。"))
    return messages


def _english_conversation() -> list[WindowMessage]:
    filler = [
        "That sounds good to me.",
        "Let me know if there is anything else you would like to discuss today.",
        "I think we covered most of the general topics already, thanks for the patience.",
        "Sure, we can keep talking about the weather and the general situation on the farm.",
    ]
    messages = [WindowMessage(1, "user", "Hi there, I would like to talk about the farm for a while.")]
    for i in range(2, 40):
        messages.append(WindowMessage(i, "user" if i % 2 else "assistant", " ".join(filler)))
        if i == 17:
            messages.append(WindowMessage(100, "user",
                                          "Please book the harvester inspection for 12 April 2026 at 10:30. "
                                          "It was a long week."))
    return messages


def test_zh_summary_keeps_the_place_and_drops_repeated_filler():
    history = _window_budget_01()[:-1]

    summary = summarize_extractive(history, budget_tokens=150)

    assert "东区维修棚" in summary
    assert summary.count(FILLER_SENTENCE) <= 1
    assert count_tokens(summary) <= 150
    assert summary.startswith("用户: 帮我安排1号收割机的保养")


def test_en_summary_keeps_the_sentence_with_a_date_and_number():
    summary = summarize_extractive(_english_conversation(), budget_tokens=60)

    assert "12 April 2026 at 10:30" in summary
    assert summary.count("That sounds good to me.") <= 1
    assert count_tokens(summary) <= 60
    assert "user: Please book the harvester inspection" in summary


def test_correction_survives_a_tight_budget():
    history = _window_budget_01()

    summary = summarize_extractive(history, budget_tokens=40)

    assert "明天下午三点" in summary
    assert count_tokens(summary) <= 40


def test_summary_rolls_forward_with_the_previous_one():
    messages = _window_budget_01()
    first = summarize_extractive(messages[:10], budget_tokens=80)

    second = summarize_extractive(messages[10:], budget_tokens=80, previous_summary=first)

    assert "东区维修棚" in second  # only the previous summary knew about it
    assert "明天下午三点" in second
    assert second.index("东区维修棚") < second.index("明天下午三点")  # older material first
    assert second.count(FILLER_SENTENCE) <= 1
    assert count_tokens(second) <= 80


def test_previous_summary_without_role_prefix_is_kept_as_is():
    summary = summarize_extractive([WindowMessage(1, "user", "好的")], budget_tokens=50,
                                   previous_summary="The customer's site is the North Barn, gate 4.")

    assert "The customer's site is the North Barn, gate 4." in summary


def test_tool_output_is_only_mentioned():
    messages = [
        WindowMessage(1, "user", "查一下1号收割机的保养记录。"),
        WindowMessage(2, "assistant", "", tool_calls=[
            {"id": "call_1", "name": "get_maintenance_records", "arguments": {"asset_id": "A-1001"}}]),
        WindowMessage(3, "tool", '[{"date":"2025-01-15","item":"常规保养0","cost":300}]' * 40,
                      tool_call_id="call_1"),
    ]

    summary = summarize_extractive(messages, budget_tokens=200)

    assert "常规保养0" not in summary
    assert "get_maintenance_records 返回了结果" in summary
    assert "A-1001" in summary  # the call's arguments carry the id


def test_empty_inputs_and_budgets():
    messages = [WindowMessage(1, "user", "帮我安排1号收割机的保养，地点在东区维修棚。")]

    assert summarize_extractive([], budget_tokens=100) == ""
    assert summarize_extractive(messages, budget_tokens=0) == ""
    assert summarize_extractive(messages, budget_tokens=-1) == ""


def test_a_sentence_longer_than_the_budget_is_hard_truncated_not_lost():
    messages = [WindowMessage(1, "user", "帮我安排1号收割机的保养，地点在东区维修棚。")]

    summary = summarize_extractive(messages, budget_tokens=8)

    assert summary.startswith("用户: 帮我")
    assert 0 < count_tokens(summary) <= 8
