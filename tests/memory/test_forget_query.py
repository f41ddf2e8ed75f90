"""What a forget-by-query request is about (memory/services/forget_query.py): the words of the act
are taken off the search, and the turn that asked is not mistaken for its target."""
import pytest

from memory.services.forget_query import is_request_turn, query_subject


@pytest.mark.parametrize("query, subject", [
    ("孩子在哪上学那条删掉", "孩子在哪上学"),
    ("把我家门牌号那条删了", "我家门牌号"),
    ("别记着我去哪儿出差了", "我去哪儿出差"),
    ("forget where I said we're moving", "where we're moving"),
    ("Forget what I said about my ex", "my ex"),
    ("delete the note about my salary", "my salary"),
])
def test_the_words_of_the_act_are_taken_off(query, subject):
    assert query_subject(query) == subject


def test_a_query_of_only_the_act_is_kept_whole():
    assert query_subject("删掉吧") == "删掉吧"


def test_the_request_turn_is_recognised_and_the_statement_is_not():
    query = "孩子在哪上学那条删掉"
    assert is_request_turn("孩子在哪上学那条删掉吧。", query)
    assert not is_request_turn("我儿子在杭州学军小学读三年级，每天四点放学。", query)
    # Speaking of deleting is not enough: the turn must hold the query's subject.
    assert not is_request_turn("我把旧电脑里的照片都删掉了。", query)
    assert is_request_turn("Forget where I said we're moving, it's not settled.", "forget where I said we're moving")
