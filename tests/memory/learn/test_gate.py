"""The learned gate (memory/learn/gate.py, D25), read directly (it is not wired into extraction yet):
closed classes decide first, the model keeps the statements people make about themselves, their
organisation, people, places and things."""
import numpy as np
import pytest

from memory.learn.gate import KEEP_KINDS, get_gate
from memory.learn.signals import SIGNALS, closed_class


@pytest.mark.parametrize("text, closed", [
    ("你们周末营业吗？", "question"),
    ("What time does the clinic open?", "question"),
    ("谢谢！", "ack"),
    ("好的，收到", "ack"),
    ("Thanks!", "ack"),
    ("这个别记", "do_not_remember"),
    ("Don't remember this.", "do_not_remember"),
    ("这次先发Word版", "task"),
    ("For this order, round the totals up.", "task"),
    ("我对花生过敏。", None),
    ("Our expense claims go through Concur.", None),
])
def test_closed_classes(text, closed):
    assert closed_class(text) == closed


# Typed by hand in issue 39: every one is a standing statement the rule extractor drops.
ISSUE_STATEMENTS = [
    "我对花生过敏。", "我们团队现在用Jira管需求。", "我爸今年七十了，住在老家绵阳。", "儿子的篮球训练在周三晚上。",
    "我们店周一不营业。", "老婆不吃香菜。", "公司报销走的是钉钉审批。", "三号冷库的温度设在零下十八度。",
    "I'm allergic to penicillin.", "My wife doesn't eat cilantro.", "Our expense claims go through Concur.",
]


def test_the_issues_statements_are_kept():
    gate = get_gate()
    readings = gate.read(ISSUE_STATEMENTS)
    assert [r.keep for r in readings] == [True] * len(ISSUE_STATEMENTS)
    assert all(r.label in KEEP_KINDS and r.p >= gate.threshold for r in readings)


def test_questions_thanks_and_one_time_instructions_are_not_kept():
    texts = ["你们周末营业吗？", "Can you check the weather for tomorrow?", "谢谢你，辛苦了！", "Thanks a lot!",
             "这次报告先不用放图表。", "Just for today, skip the summary section."]
    assert [r.keep for r in get_gate().read(texts)] == [False] * len(texts)


def test_the_gate_reads_the_vectors_it_is_given():
    # A caller may hand its own vectors: with a vector pointing nowhere the reading changes, so the
    # model does read them (and does not encode the sentence again).
    gate = get_gate()
    text = "三号冷库的温度设在零下十八度。"
    [own] = gate.read([text])
    [blank] = gate.read([text], np.zeros((1, gate.mean.shape[0] - len(SIGNALS)), dtype=np.float32))
    assert own.keep and own.p != blank.p
