"""Names told apart by their numbers and codes (issue 41): an identifier with a leading zero said alone ("0231 那单"),
a number glued after a word of a name ("启明星2", "金桂苑9栋" where the registry has 6栋 and 8栋), a number after an English
word that must be that name's own and not a value's ("Drum kit 3" where kit 1's store is "Shelf 3"), a numbered
qualifier with its one character ("2号库") or a label of the type after it ("4号机位": every stand numbered 4), and
English function words that name nothing ("the"). Pure resolver, no DB; the registry is a small airfield and a
housing estate no labelled file uses."""
from entities.matcher import EntityRef
from entities.name_parts import is_qualifier, name_parts
from entities.resolver import resolve
from tests.entities.registry_fixture import build_matcher

PLANE_1 = EntityRef(1, "aircraft", "AC-1", "启明星1号")
PLANE_2 = EntityRef(2, "aircraft", "AC-2", "启明星2号")
STAND_E4 = EntityRef(3, "stand", "ST-E4", "东区4号机位")
STAND_W4 = EntityRef(4, "stand", "ST-W4", "西区4号机位")
STAND_W6 = EntityRef(5, "stand", "ST-W6", "西区6号机位")
ORDER_A = EntityRef(6, "work_order", "WO-0231", "工单0231")
ORDER_B = EntityRef(7, "work_order", "WO-0236", "工单0236")
BLOCK_6 = EntityRef(8, "building", "B-6", "金桂苑6栋")
BLOCK_8 = EntityRef(9, "building", "B-8", "金桂苑8栋")
STORE_2 = EntityRef(10, "warehouse", "WH-2", "航材2号库")
KIT_1 = EntityRef(11, "prop", "PR-1", "Drum kit 1")
KIT_2 = EntityRef(12, "prop", "PR-2", "Drum kit 2")
SHOW = EntityRef(13, "production", "P-1", "The Night Ferry")
# 启明星 names the school too, so it is a word of names, not a category word of the aircraft.
SCHOOL = EntityRef(14, "school", "SC-1", "启明星航校")
REGISTRY = {r.id: r for r in (PLANE_1, PLANE_2, STAND_E4, STAND_W4, STAND_W6, ORDER_A, ORDER_B, BLOCK_6, BLOCK_8,
                              STORE_2, KIT_1, KIT_2, SHOW, SCHOOL)}
ATTRIBUTES = {KIT_1.id: {"store": "Shelf 3", "finish": "walnut"}, KIT_2.id: {"store": "Shelf 1", "finish": "walnut"},
              STAND_W4.id: {"apron": "西坪"}, STAND_W6.id: {"apron": "西坪"}}


def got(text):
    res = resolve(text, matcher=build_matcher(REGISTRY.values(), ATTRIBUTES, ()), entities=REGISTRY)
    return res.status, res.entity_id if res.status == "resolved" else sorted(res.candidates)


def test_an_identifier_with_a_leading_zero_names_what_carries_it():
    assert not is_qualifier("0231") and is_qualifier("231") and is_qualifier("2号")
    assert got("0231 那单今天能完吗") == ("resolved", ORDER_A.id)


def test_a_number_glued_after_a_word_of_a_name_must_be_that_names():
    assert got("启明星2 今天下午飞吗") == ("resolved", PLANE_2.id)
    assert got("金桂苑8栋的电梯修好了没") == ("resolved", BLOCK_8.id)
    assert got("金桂苑9栋装完了没") == ("none", [])


def test_a_number_after_an_english_word_is_the_names_not_a_values():
    assert got("Drum kit 2 is back from repair") == ("resolved", KIT_2.id)
    assert got("Drum kit 3 has gone missing") == ("none", [])


def test_a_numbered_qualifier_with_its_character_or_its_types_label_names():
    assert "2号库" in name_parts("航材2号库")
    assert got("2号库的温湿度记录呢") == ("resolved", STORE_2.id)
    assert got("4号机位下午有人用吗") == ("ambiguous", [STAND_E4.id, STAND_W4.id])


def test_english_function_words_name_nothing():
    assert "the" not in name_parts("The Night Ferry")
    assert got("Is the lighting plot ready?") == ("none", [])


def test_a_number_counting_the_words_of_values_found_names_one_numbered_thing():
    # Found by a value they share, the stands and kits are still counted by the words of their names: another
    # number names a sibling that is not registered, not any of them.
    assert got("西坪的机位下午有人用吗") == ("ambiguous", [STAND_W4.id, STAND_W6.id])
    assert got("西坪6号机位下午有人用吗") == ("resolved", STAND_W6.id)
    assert got("西坪5号机位下午有人用吗") == ("none", [])
    assert got("The walnut kit 2 is back") == ("resolved", KIT_2.id)
    assert got("The walnut kit 5 is back") == ("none", [])


def test_a_number_ruling_out_the_fullest_match_names_an_unregistered_sibling():
    # "Wet Lab 3" names most fully the wet labs, which its number rules out; "open", a ticket's status, is a lesser
    # word of the text and does not stand in for them.
    rooms = [EntityRef(1, "room", "R-1", "Wet Lab 1"), EntityRef(2, "room", "R-2", "Wet Lab 2"),
             EntityRef(3, "room", "R-3", "Microscopy Room"), EntityRef(4, "ticket", "TK-1", "Ticket 77")]
    registry = {r.id: r for r in rooms}
    matcher = build_matcher(registry.values(), {4: {"status": "open"}}, ())
    assert resolve("Is Wet Lab 2 open over the weekend?", matcher=matcher, entities=registry).entity_id == 2
    assert resolve("Is Wet Lab 3 open over the weekend?", matcher=matcher, entities=registry).status == "none"


def test_a_number_with_words_of_a_name_names_what_carries_it_with_its_zeros():
    # "231号工单" is 工单0231 (the registry writes the number with its zeros); "233号工单" none.
    assert got("231号工单今天能完吗") == ("resolved", ORDER_A.id)
    assert got("233号工单今天能完吗") == ("none", [])
    assert got("航材2号库的温湿度记录呢") == ("resolved", STORE_2.id)


def test_an_english_name_of_words_and_a_number_is_said_by_its_initials():
    rooms = [EntityRef(1, "room", "R-1", "Wet Lab 1"), EntityRef(2, "room", "R-2", "Wet Lab 2"),
             EntityRef(3, "instrument", "I-1", "Flow Cytometer 1")]
    registry = {r.id: r for r in rooms}
    matcher = build_matcher(registry.values(), {3: {"room": "Wet Lab 1"}}, ())
    assert resolve("FC1 is throwing a fluidics error", matcher=matcher, entities=registry).entity_id == 3
    assert resolve("Is WL2 free tonight?", matcher=matcher, entities=registry).entity_id == 2
    assert resolve("Is WL3 free tonight?", matcher=matcher, entities=registry).status == "none"


def test_what_a_named_entity_relates_to_carries_the_number_the_text_counts():
    block = EntityRef(1, "building", "B-3", "3号楼")
    check = EntityRef(2, "inspection", "YS-1", "验收单YS-3-14", ("3号楼14层钢筋验收单",))
    registry = {block.id: block, check.id: check}
    matcher = build_matcher(registry.values(), {}, [(check, "about", block)])

    def answer(text):
        res = resolve(text, matcher=matcher, entities=registry)
        return res.status, res.entity_id

    assert answer("3号楼14层的验收单出了没") == ("resolved", check.id)
    # Floor 15 of building 3 has no inspection registered: not the floor-14 one.
    assert answer("3号楼15层的验收单出了没") == ("none", None)


def test_a_records_number_said_alone_names_what_carries_it():
    cases = {1: EntityRef(1, "lab_case", "LC-1", "Lab case 5538"), 2: EntityRef(2, "lab_case", "LC-2", "Lab case 5544"),
             3: EntityRef(3, "batch", "B-1", "保温杯批次BWB-260521", ("0521那批",)),
             4: EntityRef(4, "room", "R-1", "302房"), 5: EntityRef(5, "bed", "D-1", "302电动护理床")}
    matcher = build_matcher(cases.values(), {}, [])

    def answer(text, allowed=lambda _i: True):
        res = resolve(text, matcher=matcher, entities=cases, allowed=allowed)
        return res.status, res.entity_id if res.status == "resolved" else sorted(res.candidates)

    assert answer("any update on 5538?") == ("resolved", 1)
    assert answer("521那批杯子还冻着吗") == ("resolved", 3)
    # No record carries it, or it is a quantity, or it qualifies a word glued to it: nothing is named by the number.
    assert answer("any update on 5539?") == ("none", [])
    assert answer("这批买了5538个") == ("none", [])
    assert answer("302电动护理床的电机还响吗", allowed=lambda i: i != 5)[0] != "resolved" or \
        answer("302电动护理床的电机还响吗", allowed=lambda i: i != 5)[1] != 4
