"""Where a thing is sent (issue 15): the channel or destination is the value, the thing sent is the
attribute. The wording here is not in the pair set or the scenario files."""
import pytest

from memory.models import Memory
from memory.subjects.match import pair_features
from memory.subjects.parts import parse
from tests.conversations.api_helpers import create_conversation
from tests.memory.test_subject_supersede import say, standing


def _features(older: str, newer: str):
    return pair_features(parse(older), parse(newer), masked=0.5, full=0.5)


# ---------------------------------------------------------------------------- parsing
def test_an_adverb_never_heads_the_attribute():
    parts = parse("以后体检报告都直接存到医院的系统里。")
    assert parts.heads == frozenset({"报告"}) and "直接" not in parts.terms


def test_a_delivery_verb_and_its_recipient_mark_the_channel():
    # jieba glues 后 to 发 here, and tags 微信 a verb in other sentences: the recipient decides.
    assert parse("体检报告出来后发我微信就行。").values == ("微信",)
    assert parse("报价单先发我微信。").values == ("微信",)
    assert parse("周报就发我钉钉吧。").values == ("钉钉",)
    assert parse("体检报告出来后发我微信就行。").heads == frozenset({"报告"})


def test_a_place_owned_by_someone_is_one_value():
    assert parse("以后体检报告都直接上传到医院的小程序里。").values == ("医院的小程序",)
    assert parse("账单寄给我家里。").values == ("家里",)


def test_english_delivery_names_the_thing_sent():
    text_me = parse("Text me the gate code.")
    assert text_me.values == ("text",) and text_me.heads == frozenset({"code"})
    portal = parse("Upload the scans to the clinic portal.")
    assert portal.values == ("clinicportal",) and portal.heads == frozenset({"scan"})
    goes = parse("Lab results go straight into the patient app now.")
    assert goes.values == ("patientapp",) and goes.heads == frozenset({"result"})


def test_a_noun_that_can_be_a_verb_is_no_delivery():
    assert "dest" not in parse("Use my work email for invoices.").preds


def test_when_a_thing_is_sent_is_no_destination():
    assert "dest" not in parse("Send the summary on Friday afternoons.").preds


def test_two_things_sent_to_two_places_name_two_attributes():
    f = _features("合同扫描件发到法务的邮箱。", "发票寄到财务部。")
    assert f.head == 0.0 and f.heads_differ


def test_a_thing_and_an_attribute_of_it_meet_only_on_one_value():
    same = _features("冷库的温控器用的是合力的。", "我们冷库装的温控器品牌是合力。")
    assert same.head == 0.5 and same.value_same
    # The thing alone does not say which attribute: another value stays another attribute.
    other = _features("我们仓库在嘉兴。", "我们仓库的面积是两千平。")
    assert other.head == 0.0


# ---------------------------------------------------------------------------- write path

@pytest.mark.django_db
@pytest.mark.parametrize("first,then,new_word", [
    ("以后体检报告出来后发我微信就行。", "以后体检报告都直接上传到医院的小程序里，不用再单独发给我了。", "小程序"),
    ("Email me the monthly bank statements.",
     "From now on just put the monthly bank statements in the family folder, no need to email them to me.", "family folder"),
], ids=["zh", "en"])
def test_a_new_destination_replaces_the_old(api, first, then, new_word):
    s1, s2 = create_conversation(api, "s1"), create_conversation(api, "s2")
    say(api, s1, first, "2026-03-01T09:00:00+08:00")
    [old] = standing()
    say(api, s2, then, "2026-04-01T09:00:00+08:00")
    [current] = standing()
    assert new_word in current.content
    old.refresh_from_db()
    assert old.status == "superseded" and old.superseded_by_id == current.id


@pytest.mark.django_db
def test_two_destinations_for_two_things_coexist(api):
    s1, s2 = create_conversation(api, "s1"), create_conversation(api, "s2")
    say(api, s1, "以后合同扫描件都发到法务的邮箱。", "2026-03-01T09:00:00+08:00")
    say(api, s2, "以后发票都寄到财务部。", "2026-04-01T09:00:00+08:00")
    assert not standing("superseded") and len(standing()) == 2


@pytest.mark.django_db
def test_an_adverb_that_is_also_a_style_word_keys_no_reply_style(api):
    # "直接传到" says how to send, not how to answer: it must not replace the reply style.
    s1, s2 = create_conversation(api, "s1"), create_conversation(api, "s2")
    say(api, s1, "以后回答尽量简洁一点。", "2026-03-01T09:00:00+08:00")
    say(api, s2, "以后合同都直接传到法务的钉钉群里。", "2026-04-01T09:00:00+08:00")
    assert not standing("superseded")
    assert Memory.objects.filter(status="active", content__contains="简洁").exists()
