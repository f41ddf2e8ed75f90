"""The learned gate (memory/learn/gate.py, D25): closed classes decide first, the model keeps the
statements people make about themselves, their organisation, people, places and things."""
from datetime import datetime

import numpy as np
import pytest

from memory.extraction import ExtractionInput
from memory.extraction.rules import RuleExtractor
from memory.learn.gate import KEEP_KINDS, get_gate
from memory.learn.signals import SIGNALS, closed_class, split_question

AT = datetime.fromisoformat("2026-03-02T09:00:00+08:00")


def candidates(text: str):
    return RuleExtractor().extract(ExtractionInput(role="user", content=text, occurred_at=AT)).candidates


def standing(text: str) -> list:
    return [c for c in candidates(text) if c.kind in ("fact", "preference") and c.scope == "user" and not c.replaces_only]


@pytest.mark.parametrize("text, closed", [
    ("你们周末营业吗？", "question"),
    ("What time does the clinic open?", "question"),
    ("谢谢！", "ack"),
    ("好的，收到", "ack"),
    ("Thanks!", "ack"),
    ("ok got it", "ack"),
    ("这个别记", "do_not_remember"),
    ("Don't remember this.", "do_not_remember"),
    ("I don't want that saved anywhere.", "do_not_remember"),
    # After any clause boundary, a Chinese comma or a dash too.
    ("会员卡号是 6222 0210，这次先用一下，don't save it 哈", "do_not_remember"),
    ("My passport number is E1234567 — don't keep it after the booking.", "do_not_remember"),
    # Please in its texting forms.
    ("the alarm code is 5512 pls dont save it", "do_not_remember"),
    ("plz don't store my card number", "do_not_remember"),
    # After a discourse word, first in its clause; a habit said with one is no request.
    ("my cell is 917-555-0148 for today. actually don't save that anywhere, it's personal", "do_not_remember"),
    ("Oh, don't keep this one.", "do_not_remember"),
    ("I actually don't keep a diary.", None),
    # Asking to forget what was said before: the sentence goes, the rest of its message stays.
    ("hey, please forget my ex's address", "forget_request"),
    ("can you delete the part about my brother's debts", "forget_request"),
    ("pls forget my old work address", "forget_request"),
    ("could you plz delete the part about my loan", "forget_request"),
    ("钥匙柜密码那条你删了吧", "forget_request"),
    ("那条关于我工资的删了吧", "forget_request"),
    # …and what only looks like it is a statement.
    ("I always forget my keys.", None),
    ("Don't forget my mom's birthday is Friday.", None),
    ("我把旧app删了", None),
    ("这次先发Word版", "task"),
    ("明天孩子要去看牙，上课推到十一点吧，就明天", "task"),
    ("Move the standup to 11, just for tomorrow.", "task"),
    ("For this order, round the totals up.", "task"),
    ("我对花生过敏。", None),
    ("Our expense claims go through Concur.", None),
])
def test_closed_classes(text, closed):
    assert closed_class(text) == closed


# Typed by hand in issue 39: every one is a standing statement the service used to drop.
ISSUE_STATEMENTS = [
    "我对花生过敏。", "我们团队现在用Jira管需求。", "我爸今年七十了，住在老家绵阳。", "儿子的篮球训练在周三晚上。",
    "我们店周一不营业。", "老婆不吃香菜。", "公司报销走的是钉钉审批。", "三号冷库的温度设在零下十八度。",
    "I'm allergic to penicillin.", "My wife doesn't eat cilantro.", "Our expense claims go through Concur.",
]


@pytest.mark.parametrize("text", ISSUE_STATEMENTS)
def test_the_issues_statements_are_remembered(text):
    kept = standing(text)
    assert len(kept) == 1, candidates(text)
    assert kept[0].gate["p"] >= get_gate().threshold
    assert kept[0].gate["model"] == get_gate().version


@pytest.mark.parametrize("text", [
    "你们周末营业吗？", "Can you check the weather for tomorrow?", "谢谢你，辛苦了！", "Thanks a lot!",
    "这次报告先不用放图表。", "Just for today, skip the summary section.", "好的",
])
def test_questions_thanks_and_one_time_instructions_are_not_standing(text):
    assert standing(text) == []


@pytest.mark.parametrize("text, parts", [
    ("我的TSH是5.2，这个正常吗？", ["我的TSH是5.2", "这个正常吗？"]),
    ("my son is 7, is that too young for a tablet?", ["my son is 7", "is that too young for a tablet?"]),
    ("I'm allergic to penicillin, is amoxicillin ok?", ["I'm allergic to penicillin", "is amoxicillin ok?"]),
    # A clause that only supposes or asks, a name or topic alone, and a question first stay whole.
    ("如果明天下雨，比赛还办吗？", ["如果明天下雨，比赛还办吗？"]),
    ("If the courier is late, should I call them?", ["If the courier is late, should I call them?"]),
    ("我想问一下，报销怎么走？", ["我想问一下，报销怎么走？"]),
    ("老王，你那边进度怎么样？", ["老王，你那边进度怎么样？"]),
    ("这个正常吗，我的TSH是5.2", ["这个正常吗，我的TSH是5.2"]),
    ("Is it bad that my cat sleeps 18 hours a day?", ["Is it bad that my cat sleeps 18 hours a day?"]),
    # Not a question: a statement is one part.
    ("我们店周一不营业。", ["我们店周一不营业。"]),
])
def test_a_question_splits_off_the_statement_it_opens_with(text, parts):
    assert split_question(text) == parts


@pytest.mark.parametrize("text, value", [
    ("我家宝宝两个月大，蟑螂胶饵放厨房安全吗？", "两个月"),
    ("My partner works at Shopify, is it weird to apply there?", "Shopify"),
])
def test_a_statement_before_a_question_is_remembered(text, value):
    kept = standing(text)
    assert len(kept) == 1 and value in kept[0].content, candidates(text)
    assert "?" not in kept[0].content and "？" not in kept[0].content


def test_an_instruction_opened_by_a_when_clause_is_no_question():
    # A wh-word first asks only in a one-clause sentence without a question mark.
    assert closed_class("When you explain code, show me the diff, not the whole file") is None
    assert closed_class("when does the clinic open") == "question"


def test_a_one_time_instruction_is_task_scoped():
    [c] = candidates("这次报告先不用放图表。")
    assert (c.kind, c.scope) == ("context", "task")


def test_assistant_turns_never_yield_facts():
    out = RuleExtractor().extract(ExtractionInput(role="assistant", content="您对花生过敏，我记下了。", occurred_at=AT))
    assert [c for c in out.candidates if c.kind in KEEP_KINDS] == []


def test_the_gate_reads_the_vectors_it_is_given():
    # The write path hands its own vectors: with a vector pointing nowhere the reading changes, so
    # the model does read them (and does not encode the sentence again).
    gate = get_gate()
    text = "三号冷库的温度设在零下十八度。"
    [own] = gate.read([text])
    [blank] = gate.read([text], np.zeros((1, gate.mean.shape[0] - len(SIGNALS)), dtype=np.float32))
    assert own.keep and own.p != blank.p
