"""Long queries (a dialogue before the turn that needs a memory) and the dense baseline of memory_eval."""
import json

import pytest
from django.core.management import call_command

from memory.recall.query import focus_of, keyword_text, shape
from tests.memory.test_recall import recall, remember

SMALL_TALK = ("用户：今天天气真热，出门走两步就一身汗。\n助手：天气热记得多喝水，出门带把伞防晒。\n"
              "用户：楼上装修好几天了，电钻声吵得不行。\n助手：听起来确实挺辛苦的，注意多休息。\n") * 4


def test_short_queries_are_left_alone():
    assert not shape("我家狗对什么过敏").long
    assert keyword_text("我家狗对什么过敏") == "我家狗对什么过敏"


def test_a_dialogue_is_read_as_its_last_speakers_turn():
    query = SMALL_TALK + "用户：我想给豆豆买点零食，有什么它不能碰的吗"
    assert shape(query).long
    assert shape(query).focus.endswith("有什么它不能碰的吗")
    assert "天气" not in keyword_text(query) and "防晒" not in keyword_text(query)  # older turns, assistant
    english = "User: hi\nAssistant: " + "hello there. " * 30 + "\nUser: which hotel did we stay at in Kyoto?"
    assert focus_of(english, 40).endswith("which hotel did we stay at in Kyoto?")


def test_a_paragraph_without_speakers_is_read_as_its_last_sentences():
    paragraph = "最近工作特别忙，每天加班到很晚，周末也没怎么休息。" * 12 + "对了，我那台途观上次保养是在哪做的？"
    focus = shape(paragraph).focus
    assert focus.endswith("我那台途观上次保养是在哪做的？") and len(focus) < 80


def test_long_dialogue_finds_the_memory_its_last_turn_needs(api):
    remember(api, "豆豆对鸡肉过敏，吃了会呕吐，买零食要避开", kind="event")
    for text in ["夏天出门要带伞防晒，多喝水", "车险在平安买的，五月到期", "每周三晚上去游泳馆游一个小时"]:
        remember(api, text, kind="event")
    body = recall(api, SMALL_TALK + "用户：我想给豆豆买点零食，有什么它不能碰的吗", k=1)
    assert "鸡肉" in body["items"][0]["content"]


@pytest.mark.django_db(transaction=True)
def test_dense_baseline_ranks_by_cosine_only(tmp_path):
    case = {"id": "dense-1", "org": "o", "user": "u1", "entities": [], "steps": [
        {"op": "memory", "label": "a", "kind": "fact", "content": "用户的狗叫豆豆，是一只柯基", "at": "2026-01-01T09:00:00+08:00"},
        {"op": "memory", "label": "b", "kind": "fact", "content": "用户每周三晚上去游泳", "at": "2026-01-01T09:01:00+08:00"},
        {"op": "memory", "label": "c", "kind": "fact", "content": "以后写的东西不再需要了", "at": "2026-03-01T09:00:00+08:00"},
        {"op": "probe", "label": "p1", "at": "2026-02-01T10:00:00+08:00", "session": "s1", "query": "我家的狗是什么品种",
         "k": 1, "expect": {"labels": ["a"]}},
        {"op": "probe", "label": "p2", "at": "2026-02-01T10:01:00+08:00", "session": "s1", "query": "我什么时候去游泳",
         "k": 1, "expect": {"labels": ["a"]}}]}
    path = tmp_path / "case.jsonl"
    path.write_text(json.dumps(case, ensure_ascii=False) + "\n", encoding="utf-8")
    out = tmp_path / "report.json"
    call_command("memory_eval", str(path), "--in-place", "--quiet", "--baseline", "dense", "--json", str(out))
    report = json.loads(out.read_text())
    assert report["baseline"] == "dense"
    assert [p["passed"] for p in report["cases"][0]["probes"]] == [True, False]  # p2 expects the wrong label


def test_second_look_raises_what_the_top_hits_are_about(api, settings):
    # The question names Caroline's plan; the memory that says where the plan stands does not
    # name the plan's words, only what the top hit is about (the adoption agency).
    # The learned judge reads the call back as a possible change of the plan (a possible conflict: the
    # newer ranks first); this test is about the second look alone.
    settings.MEMORY_LEARNED_REPLACE = {**settings.MEMORY_LEARNED_REPLACE, "enabled": False}
    remember(api, "Caroline plans to adopt a child through the Sunrise adoption agency")
    remember(api, "The Sunrise agency called Caroline back about the home visit next month")
    for text in ["Melanie paints sunsets at the lake", "Melanie's son plays soccer on Saturdays",
                 "Caroline went hiking with friends last week", "The weather was cold in March"]:
        remember(api, text)
    settings.RECALL_SECOND_LOOK = {"seeds": 2, "weight": 0.4}
    settings.RECALL_CONFIDENCE = {**settings.RECALL_CONFIDENCE, "second_look_needs_pool": False}  # six memories
    body = recall(api, "What are Caroline's plans for a family?", k=6, explain=True)
    bonus = {item["content"]: item["score_parts"]["second_look"] for item in body["items"]}
    assert "adopt" in body["items"][0]["content"]
    assert bonus["The Sunrise agency called Caroline back about the home visit next month"] > \
        bonus.get("Melanie paints sunsets at the lake", 0.0)
    settings.RECALL_SECOND_LOOK = {"seeds": 2, "weight": 0.0}
    body = recall(api, "What are Caroline's plans for a family?", k=3, explain=True)
    assert not any("second_look" in item["score_parts"] for item in body["items"])


def test_chinese_bigrams_are_extra_terms_only_when_enabled(settings):
    from memory.recall.keyword import bigrams, terms

    assert bigrams("上回保养 ok 换机油") == ["\u2082上回", "\u2082回保", "\u2082保养", "\u2082换机", "\u2082机油"]
    settings.KEYWORD_ZH_BIGRAMS = False
    assert not any(t.startswith("\u2082") for t in terms("上回保养"))
    settings.KEYWORD_ZH_BIGRAMS = True
    assert "\u2082回保" in terms("上回保养")


def test_second_look_seeds_are_different_turns():
    """A live memory ranks right above the episode it came from: both are one turn, one seed."""
    from memory.recall.rerank import _distinct_top

    ranked = [(1, 0.9, {}), (2, 0.89, {}), (3, 0.5, {}), (4, 0.4, {})]
    sources = {1: [{"message_id": 10}], 2: [{"message_id": 10}], 3: [{"message_id": 10}, {"message_id": 11}],
               4: [{"message_id": 12}]}
    assert _distinct_top(ranked, sources, 2) == [1, 4]
    assert _distinct_top(ranked, {}, 2) == [1, 2]  # no known sources: nothing to tell apart
