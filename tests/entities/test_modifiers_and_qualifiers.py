"""A glued modifier the named entity does not carry (entities/modifiers.py), and look-alikes told apart by a word
naming a neighbour of some of them (entities/qualifiers.py). Pure resolver, no DB; the registry is a warehouse
that no labelled file uses."""
from entities.matcher import EntityRef
from entities.resolver import resolve
from tests.entities.registry_fixture import build_matcher

ZONE_N = EntityRef(1, "zone", "Z-N", "北区冷库", ("北库",))
ZONE_S = EntityRef(2, "zone", "Z-S", "南区常温库", ("南库",))
FORK_A = EntityRef(3, "forklift", "F-1", "电动叉车", ("大叉车",))
FORK_B = EntityRef(4, "forklift", "F-2", "北库防爆电动叉车")
SCALE_A = EntityRef(5, "scale", "S-1", "地磅1号")
SCALE_B = EntityRef(6, "scale", "S-2", "地磅2号")
HIDDEN = EntityRef(7, "forklift", "F-9", "柴油叉车")
DOCK_A = EntityRef(11, "dock", "D-A12", "东门A12月台", ("A12月台",))
DOCK_B = EntityRef(12, "dock", "D-B07", "西门B07月台", ("B07月台",))
LINE_1 = EntityRef(13, "line", "L-1", "分拣线1号")
LINE_2 = EntityRef(14, "line", "L-2", "分拣线2号")
LINE_3 = EntityRef(15, "line", "L-3", "包装线1号")
REGISTRY = {r.id: r for r in (ZONE_N, ZONE_S, FORK_A, FORK_B, SCALE_A, SCALE_B, HIDDEN, DOCK_A, DOCK_B, LINE_1, LINE_2,
                              LINE_3)}
ATTRIBUTES = {FORK_A.id: {"brand": "林德"}, FORK_B.id: {"brand": "杭叉"}, SCALE_A.id: {"capacity": "60吨"},
              SCALE_B.id: {"capacity": "60吨"}}
RELATIONS = [(FORK_A, "located_in", ZONE_S), (FORK_B, "located_in", ZONE_N), (SCALE_A, "located_in", ZONE_N),
             (SCALE_B, "located_in", ZONE_S), (LINE_1, "serves", DOCK_A), (LINE_2, "serves", DOCK_B)]


def matcher():
    m = build_matcher(REGISTRY.values(), ATTRIBUTES, RELATIONS)
    return m


def got(text, allowed=lambda i: i != HIDDEN.id):
    res = resolve(text, matcher=matcher(), entities=REGISTRY, allowed=allowed)
    return res.status, res.entity_id if res.status == "resolved" else sorted(res.candidates)


def test_a_modifier_the_named_entity_does_not_carry_means_the_entity_that_carries_it():
    # "电动叉车" is F-1's name, but F-1 is not 防爆 and stands in the south: the mention is F-2.
    assert got("防爆电动叉车的电池该换了") == ("resolved", FORK_B.id)
    assert got("北库电动叉车的电池该换了") == ("resolved", FORK_B.id)


def test_a_modifier_nothing_carries_means_something_unregistered():
    assert got("氢能电动叉车的电池该换了") == ("none", [])


def test_a_modifier_the_entity_or_its_neighbour_carries_keeps_it():
    assert got("电动叉车的电池该换了") == ("resolved", FORK_A.id)
    assert got("林德电动叉车的电池该换了") == ("resolved", FORK_A.id)  # its own brand
    assert got("南库电动叉车的电池该换了") == ("resolved", FORK_A.id)  # the zone it stands in
    assert got("那台电动叉车的电池该换了") == ("resolved", FORK_A.id)  # a demonstrative is no modifier


def test_a_hidden_entity_is_no_candidate_of_a_displaced_name():
    # Readable, the diesel forklift carries "柴油" and a part of "电动叉车"; hidden, the mention names nothing.
    assert got("柴油电动叉车的油滤换了吗", allowed=lambda i: True) == ("resolved", HIDDEN.id)
    assert got("柴油电动叉车的油滤换了吗") == ("none", [])


def test_a_word_naming_a_neighbour_of_some_look_alikes_keeps_those():
    # "分拣线" names both sorting lines (not the packing line); "A12" / "东门" name the dock one of them serves.
    assert got("分拣线卡住了") == ("ambiguous", [LINE_1.id, LINE_2.id])
    assert got("A12的分拣线卡住了") == ("resolved", LINE_1.id)
    assert got("东门那条分拣线卡住了") == ("resolved", LINE_1.id)
    assert got("西门B07的分拣线卡住了") == ("resolved", LINE_2.id)


def test_a_word_naming_a_hidden_neighbour_tells_nothing_apart():
    assert got("A12的分拣线卡住了", allowed=lambda i: i != DOCK_A.id) == ("ambiguous", [LINE_1.id, LINE_2.id])


def test_a_word_after_the_look_alikes_is_what_is_said_about_them():
    # "A12" after the head is where the parcels went, not which line: the ambiguity stands.
    assert got("分拣线的包裹都送到A12了吗") == ("ambiguous", [LINE_1.id, LINE_2.id])
