"""Names said shortened or qualified (issue 41): a Chinese abbreviation ("高压机"), a rare word of a name said alone
("途观"), a given name ("子豪"), a surname with a trade title ("吴教练"), an ordinal after a learnt label ("阶段一"),
and in English a number after a name's word ("Snowcat 2") or a proper name going on past a registered one
("Priya Sharma", "Lee Ridge lodge"). Pure resolver, no DB; the registry is a ski resort no labelled file uses."""
from entities.matcher import EntityRef
from entities.name_parts import abbreviations, rare_word
from entities.person_forms import given_name
from entities.resolver import resolve
from tests.entities.registry_fixture import build_matcher

SNOW_A = EntityRef(1, "snowmaker", "SM-1", "天诺高压造雪机")
SNOW_B = EntityRef(2, "snowmaker", "SM-2", "德美风扇造雪机")
SHUTTLE_A = EntityRef(3, "shuttle", "SH-1", "途观接驳车")
SHUTTLE_B = EntityRef(4, "shuttle", "SH-2", "考斯特接驳车")
CAMP_2 = EntityRef(5, "camp", "CP-2", "阶段二冲刺营")
CAMP_3 = EntityRef(6, "camp", "CP-3", "阶段三冲刺营")
COACH_A = EntityRef(7, "instructor", "IN-1", "周德明")
COACH_B = EntityRef(8, "instructor", "IN-2", "吴海燕")
PUPIL_A = EntityRef(9, "student", "ST-1", "李子豪")
PUPIL_B = EntityRef(10, "student", "ST-2", "王思远")
CAT_1 = EntityRef(11, "groomer", "GR-1", "Snowcat groomer 1")
CAT_2 = EntityRef(12, "groomer", "GR-2", "Snowcat groomer 2")
LODGE_A = EntityRef(13, "lodge", "LG-1", "Summit Lodge", ("Summit",))
LODGE_B = EntityRef(14, "lodge", "LG-2", "North Ridge Lodge")
STAFF_A = EntityRef(15, "staff", "SF-1", "Priya Nair", ("Priya",))
STAFF_B = EntityRef(16, "staff", "SF-2", "赵敏")
CAT_3 = EntityRef(17, "groomer", "GR-3", "PistenBully 600")
PUPIL_C = EntityRef(18, "student", "ST-3", "张国庆")
STAFF_C = EntityRef(19, "staff", "SF-3", "Ann Lee")
SLED = EntityRef(24, "snowmobile", "SN-1", "雅马哈VK540")
REGISTRY = {r.id: r for r in (SNOW_A, SNOW_B, SHUTTLE_A, SHUTTLE_B, CAMP_2, CAMP_3, COACH_A, COACH_B, PUPIL_A, PUPIL_B,
                              CAT_1, CAT_2, LODGE_A, LODGE_B, STAFF_A, STAFF_B, CAT_3, PUPIL_C, STAFF_C, SLED)}


def got(text, registry=REGISTRY, attributes=None, relations=()):
    res = resolve(text, matcher=build_matcher(registry.values(), attributes or {}, relations), entities=registry)
    return res.status, res.entity_id if res.status == "resolved" else sorted(res.candidates)


def test_a_word_of_a_name_with_the_names_head_character_is_an_abbreviation():
    assert "高压机" in abbreviations("天诺高压造雪机")
    assert got("高压机今天开了吗") == ("resolved", SNOW_A.id)
    assert got("风扇机今天开了吗") == ("resolved", SNOW_B.id)


def test_an_abbreviation_is_read_only_as_a_whole_word_of_the_text():
    # "东湖地" of 东湖科目二场地 is not in "东湖地区" (jieba: 东湖 / 地区).
    venue = EntityRef(1, "venue", "VN-1", "东湖科目二场地")
    matcher = build_matcher([venue], {})
    assert "东湖地" in abbreviations(venue.name)
    assert resolve("东湖地区下雨了吗", matcher=matcher, entities={1: venue}).status == "none"


def test_a_rare_word_of_a_name_names_it_alone_and_a_common_one_does_not():
    assert rare_word("途观") and not rare_word("高压")
    assert got("途观的胎压低了") == ("resolved", SHUTTLE_A.id)
    assert got("途观L的胎压低了") == ("resolved", SHUTTLE_A.id)
    assert got("途观岭的雪道开了吗") == ("none", [])  # a rare word inside a longer word of the text is not said
    assert got("高压的线路要检查") == ("none", [])


def test_a_rare_word_before_an_unregistered_thing_named_like_the_registrys_only_says_where_it_is():
    # "吹风机" ends as the registry's machines do (机) and is none of them: 德美's hair dryer is not registered.
    assert got("德美的吹风机坏了") == ("none", [])
    assert got("途观的空调坏了") == ("resolved", SHUTTLE_A.id)  # a component: no name here ends like it


def test_a_three_character_name_is_said_by_its_given_name():
    assert given_name("李子豪") == "子豪"
    assert got("子豪这周来练过吗") == ("resolved", PUPIL_A.id)
    # A given name inside a longer word of the text is not said, even after a pointer: 国庆 of 张国庆 in "国庆节".
    assert got("上次国庆节雪场开了吗") == ("none", [])


def test_a_surname_with_a_trade_title_names_the_person_and_roles_are_people():
    assert got("吴教练下午有课吗") == ("resolved", COACH_B.id)  # instructor: a role, so a person
    assert got("赵店长今天在吗") == ("resolved", STAFF_B.id)  # 店长: a title after a surname
    assert got("孙教练请假了吗") == ("none", [])
    assert got("王教练请假了吗") == ("none", [])  # 王思远 is a student: a trade title is not how a pupil is called


def test_a_chinese_ordinal_after_a_learnt_label_names_one_specific_thing():
    # "阶段" is every camp's label; "阶段一" is a camp of its own, not any camp.
    assert got("阶段二冲刺营满了吗") == ("resolved", CAMP_2.id)
    assert got("阶段一的营地满了吗") == ("none", [])
    assert got("阶段一下满了吗") == ("ambiguous", [CAMP_2.id, CAMP_3.id])  # "一下" is no ordinal


def test_an_english_number_after_a_names_word_must_be_the_entitys_own():
    assert got("Which Snowcat has the hydraulic leak?") == ("ambiguous", [CAT_1.id, CAT_2.id])
    assert got("Snowcat 2 has a hydraulic leak") == ("resolved", CAT_2.id)
    assert got("Snowcat 4 has a hydraulic leak") == ("none", [])


def test_a_proper_name_going_on_past_a_registered_one_is_another_name():
    assert got("Has Priya arrived yet?") == ("resolved", STAFF_A.id)
    assert got("Has Priya Sharma arrived yet?") == ("none", [])
    assert got("Ask Priya Monday about it") == ("resolved", STAFF_A.id)  # a weekday is no surname


def test_a_capital_opening_the_sentence_before_another_capital_is_a_modifier():
    # "Ridge" of North Ridge Lodge does not make "Lee Ridge lodge" that lodge: "Lee" is a word the registry uses
    # elsewhere (Ann Lee), so it is the name's own word, not the sentence's capital.
    assert got("Is the North Ridge lodge open?") == ("resolved", LODGE_B.id)
    assert got("Lee Ridge lodge is closed today") == ("none", [])
    assert got("The Ridge lodge is closed today") == ("resolved", LODGE_B.id)  # "The" names nothing


def test_a_capitalised_type_word_after_a_name_is_its_head_not_another_name():
    assert got("Summit Lodges are full this weekend") == ("resolved", LODGE_A.id)


def test_an_english_number_agrees_with_the_numbers_of_values_too():
    attributes = {CAT_1.id: {"garage": "Garage 5 north bay"}, CAT_2.id: {"garage": "Garage 6 north bay"}}
    assert got("Which Snowcat is in Garage 5?", attributes=attributes) == ("resolved", CAT_1.id)


def test_a_part_inside_a_longer_learnt_label_is_the_labels():
    # "接驳车" is every shuttle's label; its "接驳" is not the 接驳 of 刘强's alias, so 刘强 is no anchor.
    driver = EntityRef(20, "staff", "SF-4", "刘强", ("接驳刘师傅",))
    registry = {r.id: r for r in (SHUTTLE_A, SHUTTLE_B, driver)}
    relations = [(driver, "drives", SHUTTLE_A)]
    assert got("接驳车的胎压多少", registry, relations=relations) == ("ambiguous", [SHUTTLE_A.id, SHUTTLE_B.id])


def test_a_brand_the_segmenter_tags_as_a_name_modifies_the_head_after_it():
    # "桑塔纳" (jieba: a personal name) glued before the shuttles' label: a shuttle this registry does not have.
    assert got("桑塔纳接驳车的刹车片换了吗") == ("none", [])
    assert got("途观接驳车的刹车片换了吗") == ("resolved", SHUTTLE_A.id)


def test_a_one_character_noun_inside_a_longer_word_is_no_type_word():
    # "车" of "洗车机" (a car wash) is not a vehicle: the station is what is named, not its snowmobiles.
    station = EntityRef(21, "site", "SI-1", "山顶站")
    sled_a = EntityRef(22, "vehicle", "V-1", "雪地摩托1号")
    sled_b = EntityRef(23, "vehicle", "V-2", "雪地摩托2号")
    registry = {r.id: r for r in (station, sled_a, sled_b)}
    relations = [(sled_a, "based_at", station), (sled_b, "based_at", station)]
    assert got("山顶站那辆车没油了", registry, relations=relations) == ("ambiguous", [sled_a.id, sled_b.id])
    assert got("山顶站的洗车机坏了", registry, relations=relations) == ("resolved", station.id)


def test_a_code_glued_to_a_names_word_must_be_the_entitys_own():
    assert got("雅马哈VK540的油加了吗") == ("resolved", SLED.id)
    assert got("雅马哈的油加了吗") == ("resolved", SLED.id)
    assert got("雅马哈VK10的油加了吗") == ("none", [])  # another model of the maker
