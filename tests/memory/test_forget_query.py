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


def test_the_episode_a_memory_came_from_is_no_rival_of_its_clear_lead(settings):
    """A forget by query whose best match leads every other memory: the message it came from says it
    again (its episode, with other sentences) and must not count as the runner-up."""
    from types import SimpleNamespace

    from memory.services.forget import _clear_lead

    def item(content, cosine):
        return SimpleNamespace(memory=SimpleNamespace(content=content), parts={"cosine": cosine})

    settings.FORGET_PREVIEW_LEAD_COSINE, settings.FORGET_PREVIEW_LEAD_MARGIN = 0.2, 0.15
    card = item("对账的时候会用到我支付宝绑的那张卡，尾号6392", 0.40)
    episode = item("我在做冷制手工皂，椰子油一直从恒丰拿货。对账的时候会用到我支付宝绑的那张卡，尾号6392。", 0.38)
    other = item("椰子油改从东莞的润田贸易进货了", 0.10)
    assert _clear_lead([card, episode, other]) is card
    rival = item("我的信用卡尾号是1234", 0.38)
    assert _clear_lead([card, rival, other]) is None
