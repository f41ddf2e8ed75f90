"""More classifiers after a demonstrative ("那批"), a modifier before the pointer ("黑色那辆车"), an attribute value
opening the sentence as a possessor ("柯基的疫苗"), the entity a word heads rather than modifies ("卡罗拉" is the car,
not 卡罗拉车险), a learnt label's head character after a pointer ("哪只桶"). Pure resolver, no DB; a registry (a
brewery and a family's cars) that no labelled file uses."""
from datetime import datetime, timezone

from entities.matcher import EntityRef
from entities.resolver import MentionEvidence, resolve
from tests.entities.registry_fixture import build_matcher

LOT_A = EntityRef(1, "lot", "L-A", "2025世涛A批")
LOT_B = EntityRef(2, "lot", "L-B", "2025世涛B批")
LOT_C = EntityRef(3, "lot", "L-C", "2025小麦啤")
KEG_1 = EntityRef(4, "keg", "K-1", "不锈钢酒桶01")
KEG_2 = EntityRef(5, "keg", "K-2", "橡木酒桶02")
CAR_W = EntityRef(6, "car", "C-W", "白色帕萨特")
CAR_R = EntityRef(7, "car", "C-R", "红色飞度")
CAR_K = EntityRef(8, "car", "C-K", "黑色雅阁")  # hidden from the user
POLICY = EntityRef(9, "policy", "P-1", "帕萨特车险")
DOG_1 = EntityRef(10, "pet", "D-1", "豆豆")
DOG_2 = EntityRef(11, "pet", "D-2", "团子")
BREWER = EntityRef(12, "staff", "S-1", "何建明")
ROOM = EntityRef(13, "room", "R-1", "灌装间")
FILLER = EntityRef(14, "device", "M-1", "六头灌装机")
REGISTRY = {r.id: r for r in (LOT_A, LOT_B, LOT_C, KEG_1, KEG_2, CAR_W, CAR_R, CAR_K, POLICY, DOG_1, DOG_2, BREWER, ROOM, FILLER)}
ATTRIBUTES = {DOG_1.id: {"breed": "柴犬"}, DOG_2.id: {"breed": "萨摩耶"}}
RELATIONS = [(LOT_A, "aging_in", KEG_1), (LOT_A, "brewed_by", BREWER), (LOT_B, "aging_in", KEG_2), (POLICY, "covers", CAR_W),
             (FILLER, "located_in", ROOM)]
T0 = datetime(2026, 11, 8, 1, 0, tzinfo=timezone.utc)


def got(text, **kwargs):
    m = build_matcher(REGISTRY.values(), ATTRIBUTES, RELATIONS)
    res = resolve(text, matcher=m, entities=REGISTRY, allowed=lambda i: i != CAR_K.id, **kwargs)
    return res.status, res.entity_id if res.status == "resolved" else sorted(res.candidates)


def test_a_demonstrative_with_the_classifier_for_batches_picks_the_one_just_discussed():
    recent = [MentionEvidence(LOT_B.id, T0, 1)]
    assert got("那批世涛这周要过滤吗") == ("ambiguous", [LOT_A.id, LOT_B.id])
    assert got("那批世涛这周要过滤吗", recent=recent) == ("resolved", LOT_B.id)


def test_a_modifier_before_the_pointer_must_be_carried():
    assert got("白色那辆车停哪了") == ("resolved", CAR_W.id)
    assert got("黑色那辆车停哪了") == ("none", [])  # only the hidden car is black


def test_a_value_opening_the_sentence_as_a_possessor_names_its_holder():
    assert got("柴犬的疫苗打了吗") == ("resolved", DOG_1.id)
    assert got("明天约一下柴犬美容") == ("none", [])  # mid-sentence, no pointer: not a mention of the dog


def test_a_word_names_the_entity_it_heads_not_one_it_modifies():
    assert got("帕萨特的雨刮该换了") == ("resolved", CAR_W.id)
    assert got("帕萨特车险什么时候到期") == ("resolved", POLICY.id)


def test_a_learnt_labels_head_character_after_a_pointer_stands_for_its_type():
    # "酒桶" is every keg's label; "哪只桶" asks for a keg, here the one the named batch ages in (not its brewer).
    assert got("2025世涛A批在哪只桶里？") == ("resolved", KEG_1.id)


def test_a_name_before_a_pointer_for_another_kind_qualifies_what_it_points_at():
    assert got("灌装间那台的密封圈换了吗") == ("resolved", FILLER.id)  # 台: a machine, the one in that room
    assert got("灌装间那边今天消毒了吗") == ("resolved", ROOM.id)  # 那边 asks for no kind: the room itself


def test_a_generic_noun_opening_the_sentence_as_a_possessor_asks_for_its_kind():
    assert got("狗狗的驱虫药还有吗") == ("ambiguous", [DOG_1.id, DOG_2.id])
    assert got("今天遛狗狗了吗") == ("none", [])  # the sentence's object: no mention
