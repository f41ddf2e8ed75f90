"""What a noun phrase's head says (issue 41): a word that ends every name it is found in is what those things are
("空调" of 客厅空调 / 前台空调) and names them all when said alone; a pointer's head followed by another word still
heads it where the segmenter ends the word ("那个站今天"); a classifier that counts things ("那台") means the thing, not
the work order about it. Pure resolver, no DB; the registry is a small hotel's engineering office no labelled file
uses."""
from entities.matcher import EntityRef
from entities.resolver import resolve
from tests.entities.registry_fixture import build_matcher

AC_LOBBY = EntityRef(1, "appliance", "AC-1", "大堂空调")
AC_DESK = EntityRef(2, "appliance", "AC-2", "前台空调")
FRIDGE = EntityRef(3, "appliance", "FR-1", "后厨冰箱")
KEEPER = EntityRef(4, "person", "P-1", "周爷爷")
STATION_N = EntityRef(5, "site", "ST-1", "1号换热站", ("北门换热站",))
STATION_S = EntityRef(6, "site", "ST-2", "2号换热站", ("南门换热站",))
PUMP_1 = EntityRef(7, "asset", "PM-1", "1号循环泵")
PUMP_2 = EntityRef(8, "asset", "PM-2", "2号循环泵")
ORDER = EntityRef(9, "work_order", "WO-1", "工单0031")
REGISTRY = {r.id: r for r in (AC_LOBBY, AC_DESK, FRIDGE, KEEPER, STATION_N, STATION_S, PUMP_1, PUMP_2, ORDER)}
ATTRIBUTES = {PUMP_1.id: {"model": "ISG-150"}, PUMP_2.id: {"model": "ISG-150"},
              ORDER.id: {"type": "密封更换检修", "part": "机械密封"}}
RELATIONS = [(ORDER, "about", PUMP_2), (PUMP_1, "located_at", STATION_N), (PUMP_2, "located_at", STATION_S)]


def got(text):
    res = resolve(text, matcher=build_matcher(REGISTRY.values(), ATTRIBUTES, RELATIONS), entities=REGISTRY)
    return res.status, res.entity_id if res.status == "resolved" else sorted(res.candidates)


def test_the_head_of_several_names_said_alone_names_them_all():
    assert got("空调又滴水了") == ("ambiguous", [AC_LOBBY.id, AC_DESK.id])
    assert got("空调遥控器找不着了") == ("ambiguous", [AC_LOBBY.id, AC_DESK.id])
    # A kinship title ending a person's name names no one: "张爷爷" is not 周爷爷.
    assert got("张爷爷的女儿下午来吗") == ("none", [])


def test_a_pointed_head_followed_by_a_word_still_heads_the_phrase():
    assert got("南门那个站今天停电检修没") == ("resolved", STATION_S.id)


def test_a_classifier_that_counts_things_means_the_thing_not_its_work_order():
    assert got("ISG-150那台的机械密封哪天到货") == ("resolved", PUMP_2.id)
    # Without the classifier the record about the part is what the text names.
    assert got("机械密封的工单到哪一步了") == ("resolved", ORDER.id)


def test_the_character_every_name_of_a_type_ends_with_heads_a_pointer():
    blocks = {20: EntityRef(20, "building", "B-3", "3号楼"), 21: EntityRef(21, "building", "B-5", "5号楼")}
    lead = EntityRef(22, "person", "P-9", "李振华")
    guard = EntityRef(24, "person", "P-8", "王志强")
    check = EntityRef(23, "inspection", "YS-1", "验收单YS-3-14", ("3号楼14层验收单",))  # "号楼" is no building label
    registry = {**blocks, lead.id: lead, guard.id: guard, check.id: check}
    matcher = build_matcher(registry.values(), {}, [(lead, "responsible_for", blocks[20]), (check, "about", blocks[20])])

    def answer(text):
        res = resolve(text, matcher=matcher, entities=registry)
        return res.status, res.entity_id if res.status == "resolved" else sorted(res.candidates)

    assert answer("李振华负责的那栋楼到几层了") == ("resolved", 20)
    # "哪栋楼" asks which: the person named is what the text is about.
    assert answer("王志强今天在哪栋楼") == ("resolved", guard.id)
