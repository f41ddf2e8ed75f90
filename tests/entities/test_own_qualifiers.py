"""Look-alikes told apart by a word of some of their own texts (issue 41): "外科的张医生" where one vet Zhang's role is
外科兽医, "滨江的彩超" where one scanner's site is 滨江分院; the word the candidates were found through ("客厅的电器",
the room) tells nothing apart. Pure resolver, no DB; the registry is a small vet clinic no labelled file uses."""
from entities.matcher import EntityRef
from entities.resolver import resolve
from tests.entities.registry_fixture import build_matcher

VET_A = EntityRef(1, "vet", "V-1", "张立群")
VET_B = EntityRef(2, "vet", "V-2", "张悦")
SCAN_A = EntityRef(3, "equipment", "EQ-1", "彩超1号")
SCAN_B = EntityRef(4, "equipment", "EQ-2", "彩超2号")
WARD = EntityRef(5, "room", "R-1", "住院部")
KENNEL_A = EntityRef(6, "equipment", "EQ-3", "氧舱A")
KENNEL_B = EntityRef(7, "equipment", "EQ-4", "氧舱B")
REGISTRY = {r.id: r for r in (VET_A, VET_B, SCAN_A, SCAN_B, WARD, KENNEL_A, KENNEL_B)}
ATTRIBUTES = {VET_A.id: {"role": "内科兽医"}, VET_B.id: {"role": "外科兽医"},
              SCAN_A.id: {"site": "滨江分院"}, SCAN_B.id: {"site": "城西分院"},
              KENNEL_A.id: {"place": "住院部"}}
RELATIONS = [(KENNEL_A, "located_in", WARD), (KENNEL_B, "located_in", WARD)]


def got(text):
    res = resolve(text, matcher=build_matcher(REGISTRY.values(), ATTRIBUTES, RELATIONS), entities=REGISTRY)
    return res.status, res.entity_id if res.status == "resolved" else sorted(res.candidates)


def test_a_word_of_some_candidates_own_values_tells_them_apart():
    assert got("张医生今天几点下手术") == ("ambiguous", [VET_A.id, VET_B.id])
    assert got("外科的张医生今天几点下手术") == ("resolved", VET_B.id)
    assert got("彩超今天还能约吗") == ("ambiguous", [SCAN_A.id, SCAN_B.id])
    assert got("滨江的彩超今天还能约吗") == ("resolved", SCAN_A.id)


def test_the_word_they_were_found_through_tells_nothing_apart():
    assert got("住院部的氧舱都消毒了吗") == ("ambiguous", [KENNEL_A.id, KENNEL_B.id])
