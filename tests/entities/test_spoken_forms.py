"""How people type and say what the registry spells otherwise (issue 41): a code without its joiners ("沪C8M215" for plate
沪C·8M215), a brand the segmenter cuts badly said by its own two characters ("途安" of 银色大众途安L, cut 大众 / 途 / 安L
or similar), a bare demonstrative before a one-character noun ("那车" for "那辆车"), and "它" never the person who spoke
of the thing in the same turn. Pure resolver, no DB; the registry is a driving-range club no labelled file uses."""
from datetime import datetime, timezone

from entities.matcher import EntityRef
from entities.name_parts import rare_word, unknown_words
from entities.resolver import MentionEvidence, resolve
from tests.entities.registry_fixture import build_matcher

VAN = EntityRef(1, "vehicle", "CAR-1", "白色五菱宏光")
SEDAN = EntityRef(2, "vehicle", "CAR-2", "黑色大众朗逸")
MOWER = EntityRef(3, "machine", "MW-1", "草坪修剪机")
COACH = EntityRef(4, "person", "P-1", "赵海燕")
REGISTRY = {r.id: r for r in (VAN, SEDAN, MOWER, COACH)}
ATTRIBUTES = {VAN.id: {"plate": "沪C·8M215", "serial": "LZW-6407"}, SEDAN.id: {"plate": "沪C·8M251"},
              MOWER.id: {"model": "GR-220"}}
T0 = datetime(2026, 7, 1, 1, 0, tzinfo=timezone.utc)


def got(text, recent=()):
    res = resolve(text, matcher=build_matcher(REGISTRY.values(), ATTRIBUTES), entities=REGISTRY,
                  recent=[MentionEvidence(i, T0, 1) for i in recent])
    return res.status, res.entity_id if res.status == "resolved" else sorted(res.candidates)


def test_a_code_typed_without_its_joiners_names_what_carries_it():
    assert got("沪C8M251那个车违章了") == ("resolved", SEDAN.id)
    assert got("沪C·8M251那个车违章了") == ("resolved", SEDAN.id)
    assert got("LZW6407的保养记录") == ("resolved", VAN.id)
    # The look-alike plate with two digits swapped is another car, never this one.
    assert got("沪C8M215停哪了") == ("resolved", VAN.id)


def test_a_brand_the_segmenter_cut_badly_is_said_by_its_own_two_characters():
    assert "菱宏光" in unknown_words(VAN.name) or "五菱宏光" in unknown_words(VAN.name)
    assert rare_word("宏光")
    assert got("宏光的保险哪天到期") == ("resolved", VAN.id)
    assert got("五菱那台车该保养了") == ("resolved", VAN.id)
    # A word jieba's dictionary holds ("批发部") is cut where it should be: nothing inside it is a new form.
    assert unknown_words("德旺面粉批发部") == set()


def test_a_demonstrative_without_its_classifier_points_at_the_one_discussed():
    assert got("那车这两天先别开了", recent=[VAN.id]) == ("resolved", VAN.id)
    assert got("这车开了几年了", recent=[SEDAN.id]) == ("resolved", SEDAN.id)
    # Nothing discussed: both cars fit.
    assert got("那车这两天先别开了") == ("ambiguous", [VAN.id, SEDAN.id])


def test_it_is_never_the_person_who_spoke_of_the_thing():
    assert got("它的刀片多久换一次", recent=[COACH.id, MOWER.id]) == ("resolved", MOWER.id)
    # A person pronoun still means the person.
    assert got("他今天来不来", recent=[COACH.id, MOWER.id]) == ("resolved", COACH.id)


def test_a_function_word_of_an_attribute_phrase_names_nothing():
    guest = EntityRef(10, "person", "P-9", "Celeste Marr")
    cams = {11: EntityRef(11, "camera", "CAM-A", "A Camera"), 12: EntityRef(12, "camera", "CAM-B", "B Camera")}
    registry = {guest.id: guest, **cams}
    attributes = {guest.id: {"role": "guest star (under NDA)"},
                  11: {"model": "ARRI Alexa Mini LF"}, 12: {"model": "ARRI Alexa Mini LF"}}
    res = resolve("is the Mini LF covered under our insurance?", matcher=build_matcher(registry.values(), attributes),
                  entities=registry)
    assert (res.status, sorted(res.candidates)) == ("ambiguous", [11, 12])


def test_a_bare_demonstrative_before_a_noun_for_no_registered_type_points_at_nothing():
    delivery = EntityRef(20, "delivery", "DH-5", "到货单DH-0520-05")
    notice = EntityRef(21, "rectification", "ZG-1", "整改单ZG-0412")
    registry = {delivery.id: delivery, notice.id: notice}
    attributes = {delivery.id: {"材料": "C35商品混凝土", "供应商": "宏达商砼"}}
    res = resolve("宏达那车C35到哪了", matcher=build_matcher(registry.values(), attributes), entities=registry,
                  past=[MentionEvidence(notice.id, T0, 3)])
    assert (res.status, res.entity_id) == ("resolved", delivery.id)


def test_a_buildings_number_is_said_with_any_of_its_measure_words():
    from entities.name_parts import name_parts

    assert {"5号楼", "5栋", "5幢"} <= name_parts("5号楼")
    blocks = {30: EntityRef(30, "building", "B-5", "5号楼"), 31: EntityRef(31, "building", "B-6", "6号楼")}
    res = resolve("5栋主体干到几层了", matcher=build_matcher(blocks.values()), entities=blocks)
    assert (res.status, res.entity_id) == ("resolved", 30)
    assert resolve("7栋主体干到几层了", matcher=build_matcher(blocks.values()), entities=blocks).status == "none"


def test_the_name_of_an_attribute_said_before_its_value_is_no_foreign_modifier():
    shops = {40: EntityRef(40, "shop", "S-1", "小满家居抖音旗舰店"), 41: EntityRef(41, "shop", "S-2", "小满家居淘宝店")}
    attributes = {40: {"店铺ID": "DY-88231047"}, 41: {"店铺ID": "TB-57620913"}}
    res = resolve("平台说店铺ID 88231047 违规了", matcher=build_matcher(shops.values(), attributes), entities=shops)
    assert (res.status, res.entity_id) == ("resolved", 40)


def test_that_points_back_only_before_a_noun_phrase_the_registry_or_lexicon_knows():
    pans = {50: EntityRef(50, "equipment", "XR-1", "Novena pano"), 51: EntityRef(51, "equipment", "XR-2", "Tampines pano")}
    case = EntityRef(52, "lab_case", "LC-4", "Lab case 5544")
    registry = {**pans, case.id: case}
    attributes = {50: {"model": "Planmeca ProMax 2D"}, 51: {"model": "Planmeca ProMax 2D"}}
    matcher = build_matcher(registry.values(), attributes)
    past = [MentionEvidence(case.id, T0, 3)]
    res = resolve("the ProMax is making that grinding noise again", matcher=matcher, entities=registry, past=past)
    assert (res.status, sorted(res.candidates)) == ("ambiguous", [50, 51])
    res = resolve("lab case 5539 - did that go out with the courier?", matcher=matcher, entities=registry, past=past)
    assert res.status == "none"
    # Before a word the registry holds, "that" still points back.
    res = resolve("did that lab case come back?", matcher=matcher, entities=registry, past=past)
    assert (res.status, res.entity_id) == ("resolved", case.id)
