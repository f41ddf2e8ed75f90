"""Signals that know when they are weak (memory/recall/ranking.py, memory/recall/query.py)."""
import numpy as np
import pytest

from memory.recall.keyword import TermIndex
from memory.recall.query import is_conversation, keyword_text, shape
from memory.recall.ranking import confident_seed, keyword_relevance, keyword_trust
from tests.memory.test_recall import recall, remember


def test_a_short_multi_turn_query_is_a_conversation_read_by_its_last_turn():
    query = "用户：今天好冷\n助手：注意保暖。\n用户：那次去看冰灯她冻哭了"
    assert is_conversation(query) and shape(query).long
    assert shape(query).focus.endswith("那次去看冰灯她冻哭了")
    assert "保暖" not in keyword_text(query)  # the assistant's turn is context, not keyword evidence
    plain = "今天好冷\n那次去看冰灯她冻哭了"  # newline-separated turns without speaker labels
    assert is_conversation(plain)
    assert not is_conversation("那次去看冰灯她冻哭了")


def test_conversation_reading_can_be_turned_off(settings):
    settings.RECALL_CONFIDENCE = {**settings.RECALL_CONFIDENCE, "conversation_turns": 0}
    assert not shape("用户：今天好冷\n助手：注意保暖。\n用户：那次去看冰灯她冻哭了").long


def test_the_mass_of_a_query_is_the_idf_of_its_known_terms():
    index = TermIndex([np.array([1, 2]), np.array([1, 3]), np.array([1, 4])], k1=0.9, b=0.3)
    common, rare = index.mass(np.array([1])), index.mass(np.array([2]))
    assert rare > common > 0
    assert index.mass(np.array([1, 2, 99])) == common + rare  # an unknown term adds nothing
    assert index.mass(np.array([], dtype=np.int64)) == 0.0


def test_a_partial_keyword_match_of_a_long_query_weighs_less_than_a_full_one(settings):
    raw = {1: 2.0, 2: 1.0}
    settings.RECALL_CONFIDENCE = {**settings.RECALL_CONFIDENCE, "keyword_norm": "top_or_mass"}
    assert keyword_relevance(raw, [1, 2, 3], mass=1.5) == {1: 1.0, 2: 0.5, 3: 0.0}  # full match: as "top"
    assert keyword_relevance(raw, [1, 2], mass=20.0) == {1: 0.1, 2: 0.05}  # a small share of many terms
    settings.RECALL_CONFIDENCE = {**settings.RECALL_CONFIDENCE, "keyword_norm": "top"}
    assert keyword_relevance(raw, [1, 2], mass=20.0) == {1: 1.0, 2: 0.5}
    assert keyword_relevance({}, [1], mass=3.0) == {}


def test_keyword_evidence_yields_to_a_sure_embedder_only_when_it_is_shared(settings):
    settings.RECALL_CONFIDENCE = {**settings.RECALL_CONFIDENCE, "semantic_lead": [0.05, 0.15], "keyword_agree": 0.5}
    distinct = lambda a, b: False  # noqa: E731
    cosines = {1: 0.51, 2: 0.29, 3: 0.27, 4: 0.25}  # the embedder's top leads by 0.22
    shared = {2: 1.0, 3: 0.98, 4: 0.95}  # one common word: several memories reach the keyword top
    assert keyword_trust(cosines, shared, distinct) == pytest.approx(0.02)
    assert keyword_trust(cosines, {2: 1.0, 3: 0.2}, distinct) == pytest.approx(0.8)  # a keyword top that stands alone
    assert keyword_trust(cosines, {1: 0.9, 2: 1.0, 3: 1.0}, distinct) == 1.0  # the signals agree
    assert keyword_trust({1: 0.51, 2: 0.49, 3: 0.2}, shared, distinct) == 1.0  # no clear semantic lead
    assert keyword_trust(cosines, {}, distinct) == 1.0
    # The runner-up is the next different piece of evidence: the top's own episode does not count.
    assert keyword_trust({1: 0.51, 5: 0.50, 2: 0.29}, shared, lambda a, b: {a, b} == {1, 5}) < 0.1
    settings.RECALL_CONFIDENCE = {**settings.RECALL_CONFIDENCE, "semantic_lead": [0.0, 0.0]}
    assert keyword_trust(cosines, shared, distinct) == 1.0  # off


def test_the_second_look_needs_a_pool_and_a_leading_seed(settings):
    cosines = {1: 0.8, 2: 0.7, 3: 0.5, 4: 0.45}
    settings.RECALL_CONFIDENCE = {**settings.RECALL_CONFIDENCE, "second_look_needs_pool": True, "second_look_margin": 0.0}
    assert not confident_seed(cosines, 2, corpus_size=18, limit=40)  # every memory is a candidate already
    assert confident_seed(cosines, 2, corpus_size=500, limit=40)
    settings.RECALL_CONFIDENCE = {**settings.RECALL_CONFIDENCE, "second_look_margin": 0.25}
    assert confident_seed(cosines, 2, corpus_size=500, limit=40)  # 0.8 - 0.5 >= 0.25
    assert not confident_seed({1: 0.8, 2: 0.75, 3: 0.7}, 2, corpus_size=500, limit=40)


def test_a_small_corpus_is_ranked_without_the_second_look(api, settings):
    for text in ["My grandfather turned 88 last spring; the party was at the Peace Hotel",
                 "Grandpa lives with my uncle in Xuhui district", "My grandmother passed away in 2019",
                 "I lent my bike to my neighbour Ben"]:
        remember(api, text)
    settings.RECALL_SECOND_LOOK = {**settings.RECALL_SECOND_LOOK, "weight": 0.4}
    body = recall(api, "Where was grandpa's 88th birthday party?", k=4, explain=True)
    assert not any("second_look" in item["score_parts"] for item in body["items"])
    settings.RECALL_CONFIDENCE = {**settings.RECALL_CONFIDENCE, "second_look_needs_pool": False}
    body = recall(api, "Where was grandpa's 88th birthday party?", k=4, explain=True)
    assert all("second_look" in item["score_parts"] for item in body["items"])


@pytest.mark.django_db
def test_a_conversation_keeps_its_parts_for_the_best_match(settings):
    from memory.recall.query_vectors import start_query_vectors
    from memory.vectors import active_embedder

    embedder = active_embedder()
    conversation = start_query_vectors("用户：修车的学徒今天换机油\n助手：要注意什么？\n用户：上次出了什么问题来着", embedder)()
    assert len(conversation.parts) == 2  # the whole and the focus, from the encodes the blend needs anyway
    assert not start_query_vectors("上次换机油出了什么问题", embedder)().parts
