"""Words around the head a mention is found by (entities/modifiers.py `unsupported`), a learnt type label over a
lexicon word, plate prefixes, the modal "该", and unknown compounds after a demonstrative. Pure resolver, no DB;
a registry (a dairy farm's yard and an office) that no labelled file uses."""
from datetime import datetime, timezone

from entities.matcher import EntityRef
from entities.resolver import MentionEvidence, resolve
from tests.entities.registry_fixture import build_matcher

BARN_E = EntityRef(1, "barn", "B-E", "东牛舍")
BARN_W = EntityRef(2, "barn", "B-W", "西牛舍")
LOADER_1 = EntityRef(3, "loader", "L-1", "临工装载机01")
LOADER_2 = EntityRef(4, "loader", "L-2", "临工装载机02")
LOADER_3 = EntityRef(5, "loader", "L-3", "柳工侧翻装载机")
LOADER_X = EntityRef(13, "loader", "L-X", "防爆装载机")  # hidden from the user
FORK_1 = EntityRef(14, "forklift", "F-1", "林德电动叉车01")
FORK_2 = EntityRef(15, "forklift", "F-2", "林德电动叉车02")
FORK_3 = EntityRef(16, "forklift", "F-3", "丰田前移式叉车")
TRUCK_1 = EntityRef(6, "truck", "T-1", "鲁B·奶01", ("1号奶罐车",))
TRUCK_2 = EntityRef(7, "truck", "T-2", "鲁B·奶02", ("2号奶罐车",))
OFFICE_Q = EntityRef(8, "site", "S-Q", "Qingdao office")
OFFICE_H = EntityRef(9, "site", "S-H", "Hangzhou office")
LAPTOP_1 = EntityRef(10, "laptop", "LT-1", "ThinkPad X1 Carbon #1")
LAPTOP_2 = EntityRef(11, "laptop", "LT-2", "ThinkPad X1 Carbon #2")
LAPTOP_3 = EntityRef(17, "laptop", "LT-3", "Dell Latitude 5440")
PRINTER_H = EntityRef(12, "printer", "PR-H", "Hangzhou lobby printer")
REGISTRY = {r.id: r for r in (BARN_E, BARN_W, LOADER_1, LOADER_2, LOADER_3, TRUCK_1, TRUCK_2, OFFICE_Q, OFFICE_H,
                              LAPTOP_1, LAPTOP_2, PRINTER_H, LOADER_X, FORK_1, FORK_2, FORK_3, LAPTOP_3)}
ATTRIBUTES = {FORK_1.id: {"brand": "林德"}, FORK_2.id: {"brand": "林德"},
              LOADER_1.id: {"brand": "临工"}, LOADER_2.id: {"brand": "临工"}, LOADER_3.id: {"brand": "柳工"}}
RELATIONS = [(LOADER_1, "based_at", BARN_E), (LOADER_2, "based_at", BARN_W), (LOADER_3, "based_at", BARN_W),
             (LAPTOP_1, "at", OFFICE_Q), (LAPTOP_2, "at", OFFICE_H), (LAPTOP_3, "at", OFFICE_Q), (PRINTER_H, "at", OFFICE_H)]


def matcher():
    m = build_matcher(REGISTRY.values(), ATTRIBUTES, RELATIONS)
    return m


def got(text, **kwargs):
    res = resolve(text, matcher=matcher(), entities=REGISTRY, allowed=lambda i: i != LOADER_X.id, **kwargs)
    return res.status, res.entity_id if res.status == "resolved" else sorted(res.candidates)


def test_a_label_every_name_of_a_type_holds_outranks_the_lexicon_word_inside_it():
    # "叉车" is in every forklift's name, however jieba cut them ("电动叉车", "叉车"): the forklifts' label, not
    # the lexicon's "车" (vehicles: the trucks).
    assert got("林德的叉车哪台电池不行了") == ("ambiguous", [FORK_1.id, FORK_2.id])


def test_a_plate_prefix_joined_to_a_code_names_one_specific_vehicle():
    assert got("鲁B·奶07 今天谁开？") == ("none", [])


def test_gai_before_a_verb_is_the_modal_not_a_pointer():
    recent = [MentionEvidence(TRUCK_2.id, datetime(2026, 9, 1, tzinfo=timezone.utc), 1)]
    assert got("该车今天出车吗", recent=recent) == ("resolved", TRUCK_2.id)
    assert got("液压油该换了吧", recent=recent) == ("none", [])


def test_an_unknown_compound_split_after_its_first_character_is_still_unknown():
    assert got("那台堆高车的液压油换了吗") == ("none", [])


def test_a_modifier_no_candidate_carries_leaves_none():
    assert got("小型装载机的轮胎换了吗") == ("none", [])
    # jieba tags "防爆" a verb; the registry uses it in a name, so it modifies (the hidden loader: none).
    assert got("防爆装载机的轮胎换了吗") == ("none", [])
    assert got("检查装载机的轮胎") == ("ambiguous", [LOADER_1.id, LOADER_2.id, LOADER_3.id])
    assert got("东牛舍的装载机轮胎换了吗") == ("resolved", LOADER_1.id)  # a neighbour's name: carried


def test_english_capitalised_modifiers_and_possessors_must_be_carried():
    assert got("the Guangzhou printer is offline again") == ("none", [])
    assert got("the Hangzhou printer is offline again") == ("resolved", PRINTER_H.id)
    assert got("Which ThinkPad needs the BIOS update?") == ("ambiguous", [LAPTOP_1.id, LAPTOP_2.id])


def test_a_modified_name_part_is_the_head_its_candidates_carry_themselves():
    # "Hangzhou" names the office and the printer too; the ThinkPad at the Hangzhou office is meant.
    assert got("The Hangzhou ThinkPad keeps dropping Wi-Fi") == ("resolved", LAPTOP_2.id)
