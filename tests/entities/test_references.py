"""A value that holds another entity's name refers to that entity (issue 41): "Hawthorn's fire alarm" is the building
named Hawthorn Building, not the rooms whose `building` is "Hawthorn Building"; "静安那边" is the shop 静安店, not its
manager whose role is 静安店店长. When some candidates hold the word only in a value that is not such a reference,
the ambiguity stands. Pure resolver, no DB; the registry is a small campus no labelled file uses."""
from entities.matcher import EntityRef
from entities.resolver import resolve
from tests.entities.registry_fixture import build_matcher

HALL = EntityRef(1, "building", "B-1", "Hawthorn Building")
LAB_1 = EntityRef(2, "room", "R-1", "Wet Lab 1")
LAB_2 = EntityRef(3, "room", "R-2", "Wet Lab 2")
SHOP = EntityRef(4, "store", "S-1", "麦源·静安店", ("静安店",))
MANAGER = EntityRef(5, "person", "P-1", "黄小蕾")
TREE = EntityRef(6, "asset", "A-1", "Oak bench")
REGISTRY = {r.id: r for r in (HALL, LAB_1, LAB_2, SHOP, MANAGER, TREE)}
ATTRIBUTES = {LAB_1.id: {"building": "Hawthorn Building"}, LAB_2.id: {"building": "Hawthorn Building"},
              MANAGER.id: {"role": "静安店店长"}, TREE.id: {"wood": "hawthorn"}}


def got(text, attributes=ATTRIBUTES):
    res = resolve(text, matcher=build_matcher(REGISTRY.values(), attributes, ()), entities=REGISTRY)
    return res.status, res.entity_id if res.status == "resolved" else sorted(res.candidates)


def test_the_entity_named_not_those_whose_values_refer_to_it():
    assert got("Hawthorn's fire alarm test is at 10, right?",
               {k: v for k, v in ATTRIBUTES.items() if k != TREE.id}) == ("resolved", HALL.id)
    assert got("静安那边今天的可颂还够吗") == ("resolved", SHOP.id)


def test_a_value_that_is_no_reference_keeps_the_ambiguity():
    # The bench is made of hawthorn wood: its value names no registered entity.
    assert got("Hawthorn's fire alarm test is at 10, right?") == ("ambiguous", [HALL.id, LAB_1.id, LAB_2.id, TREE.id])
