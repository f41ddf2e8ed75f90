""""李先生家的电池": what a possessor's words name (a customer's name carried as a site's value) qualifies the head
after "的", which names other entities as their names end; the answer is the head's entity related to the
possessor's. An aspect of the possessor that a record's name holds in the middle ("格力空调的清洗") is not a head.
Pure resolver, no DB; the registry is a household appliance service no labelled file uses."""
from entities.matcher import EntityRef
from entities.resolver import resolve
from tests.entities.registry_fixture import build_matcher

HOME_A = EntityRef(1, "household", "H-A", "枫林湾3栋201")
HOME_B = EntityRef(2, "household", "H-B", "枫林湾5栋102")
HEATER_A = EntityRef(3, "appliance", "AP-A", "枫林湾201燃气热水器")
HEATER_B = EntityRef(4, "appliance", "AP-B", "枫林湾102燃气热水器")
AIRCON = EntityRef(5, "appliance", "AP-C", "格力空调客厅机")
VISIT = EntityRef(6, "visit", "VS-1", "上门清洗预约0412")
REGISTRY = {r.id: r for r in (HOME_A, HOME_B, HEATER_A, HEATER_B, AIRCON, VISIT)}
ATTRIBUTES = {HOME_A.id: {"户主": "周先生"}, HOME_B.id: {"户主": "吴女士"}}
RELATIONS = [(HEATER_A, "installed_in", HOME_A), (HEATER_B, "installed_in", HOME_B), (AIRCON, "installed_in", HOME_A),
             (VISIT, "about", AIRCON)]


def got(text):
    res = resolve(text, matcher=build_matcher(REGISTRY.values(), ATTRIBUTES, RELATIONS), entities=REGISTRY)
    return res.status, res.entity_id if res.status == "resolved" else sorted(res.candidates)


def test_the_head_after_the_possessor_is_the_thing_meant():
    assert got("周先生家的热水器又打不着火了") == ("resolved", HEATER_A.id)
    assert got("吴女士家的热水器该换了") == ("resolved", HEATER_B.id)


def test_without_a_head_the_possessor_is_meant():
    assert got("周先生家的地址发我一下") == ("resolved", HOME_A.id)


def test_an_aspect_a_record_holds_in_its_name_is_not_a_head():
    assert got("格力空调的清洗多少钱一次？") == ("resolved", AIRCON.id)


def test_a_value_opening_the_sentence_with_its_household_names_what_carries_it():
    cats = {10: EntityRef(10, "patient", "PT-1", "豆豆"), 11: EntityRef(11, "patient", "PT-2", "团子"),
            12: EntityRef(12, "patient", "PT-3", "旺财")}
    owners = {10: {"owner": "王雪", "species": "猫"}, 11: {"owner": "王雪", "species": "猫"},
              12: {"owner": "李强", "species": "狗"}}
    res = resolve("王雪家的猫是不是该打疫苗了", matcher=build_matcher(cats.values(), owners, ()), entities=cats)
    assert (res.status, sorted(res.candidates)) == ("ambiguous", [10, 11])
