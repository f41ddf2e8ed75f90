from entities.matcher import EntityMatcher, EntityRef, normalize

HARVESTER_1 = EntityRef(1, "asset", "A-1001", "1号收割机", ("东区收割机",))
HARVESTER_2 = EntityRef(2, "asset", "A-1002", "2号收割机", ("西区收割机",))
TRACTOR = EntityRef(3, "asset", "A-2001", "3号拖拉机", ("大拖",))
MODEL = EntityRef(4, "asset_model", "MODEL-S780", "S780 联合收割机", ("S780",))
WORKORDER = EntityRef(5, "workorder", "WO-2026-0012", "工单0012", ("0012号工单",))
ALL = [HARVESTER_1, HARVESTER_2, TRACTOR, MODEL, WORKORDER]


def found(matcher: EntityMatcher, text: str) -> list[tuple[int, str, str]]:
    return [(m.entity_id, m.surface, m.how) for m in matcher.find(text)]


def test_finds_names_aliases_and_ids_in_chinese_without_spaces():
    matcher = EntityMatcher(ALL)
    assert found(matcher, "查一下3号拖拉机的维保记录") == [(3, "3号拖拉机", "name")]
    assert found(matcher, "东区收割机和大拖都停了") == [(1, "东区收割机", "alias"), (3, "大拖", "alias")]
    assert found(matcher, "工单WO-2026-0012什么进度") == [(5, "WO-2026-0012", "id")]


def test_offsets_point_into_the_original_text():
    matcher = EntityMatcher(ALL)
    text = "请看 A-1001。"
    [match] = matcher.find(text)
    assert text[match.start : match.end] == "A-1001" == match.surface


def test_case_folding_and_nfkc_with_offsets_of_the_original():
    matcher = EntityMatcher(ALL)
    text = "ａ－１００１ 和 model-s780"  # full-width id, lower-case id
    matches = matcher.find(text)
    assert [(m.entity_id, m.how) for m in matches] == [(1, "id"), (4, "id")]
    assert matches[0].surface == "ａ－１００１"
    assert text[matches[1].start : matches[1].end] == "model-s780"


def test_whitespace_variants():
    matcher = EntityMatcher(ALL)
    # The name is written with a space; with none, or with a line break or a full-width
    # space instead, it still matches.
    assert found(matcher, "S780联合收割机")[0][:2] == (4, "S780联合收割机")
    assert found(matcher, "S780\n联合收割机")[0][:2] == (4, "S780\n联合收割机")
    assert found(matcher, "Ｓ780\u3000联合收割机")[0][:2] == (4, "Ｓ780\u3000联合收割机")


def test_leftmost_longest_non_overlapping():
    matcher = EntityMatcher(ALL)
    # "S780 联合收割机" (name) wins over its prefix "S780" (alias); the id covers "S780" inside it.
    assert found(matcher, "S780 联合收割机") == [(4, "S780 联合收割机", "name")]
    assert found(matcher, "MODEL-S780") == [(4, "MODEL-S780", "id")]
    # The same entity named by id and by alias twice in one text gives two matches.
    assert found(matcher, "S780 还是 MODEL-S780") == [(4, "S780", "alias"), (4, "MODEL-S780", "id")]


def test_ascii_surface_never_inside_a_longer_token():
    matcher = EntityMatcher(ALL)
    for text in ("S7800", "XS780", "A-10012", "A-1001-2", "BA-1001", "X-A-1001", "s780_x"):
        assert matcher.find(text) == [], text
    # CJK, punctuation and spaces are boundaries.
    assert [m.entity_id for m in matcher.find("S780这个机型")] == [4]
    assert [m.entity_id for m in matcher.find("(A-1001),S780.")] == [1, 4]
    # A digit-led CJK name is not inside a longer number: "21号收割机" is not "1号收割机".
    assert matcher.find("21号收割机") == []


def test_shared_alias_gives_one_match_per_entity():
    a = EntityRef(10, "asset", "A-1", "一号机", ("老机器",))
    b = EntityRef(11, "asset", "A-2", "二号机", ("老机器",))
    matches = EntityMatcher([a, b]).find("老机器坏了")
    assert sorted(m.entity_id for m in matches) == [10, 11]
    assert {(m.start, m.end, m.how) for m in matches} == {(0, 3, "alias")}


def test_keep_filters_before_overlaps_are_resolved():
    hidden = EntityRef(20, "asset", "A-9", "3号拖拉机大修", ())
    matcher = EntityMatcher([TRACTOR, hidden])
    assert [m.entity_id for m in matcher.find("3号拖拉机大修")] == [20]
    asked: list[set[int]] = []

    def keep(ids: set[int]) -> set[int]:
        asked.append(set(ids))
        return ids - {20}

    # With the longer (hidden) entity invisible, the visible shorter name is still found.
    assert [m.entity_id for m in matcher.find("3号拖拉机大修", keep=keep)] == [3]
    assert asked == [{3, 20}]  # one batched call


def test_version_is_a_fingerprint_of_the_entity_set():
    v1 = EntityMatcher(ALL).version
    assert EntityMatcher(reversed(ALL)).version == v1
    renamed = EntityRef(3, "asset", "A-2001", "3号拖拉机", ("大拖", "老拖"))
    assert EntityMatcher([*ALL[:2], renamed, *ALL[3:]]).version != v1
    assert EntityMatcher([]).version != v1


def test_empty_registry_and_empty_text():
    assert EntityMatcher([]).find("任何文本") == []
    assert EntityMatcher(ALL).find("") == []


def test_type_indexes():
    matcher = EntityMatcher(ALL)
    assert matcher.ids_of_type("asset") == (1, 2, 3)
    assert matcher.ids_of_type("unknown") == ()
    assert matcher.ids_named_like("asset", ["收割机"]) == (1, 2)
    assert matcher.ids_named_like("asset", ["Tractor", "拖拉机"]) == (3,)


def test_normalize_maps_spans_back():
    fast = normalize("Ａ，B\n")  # 1:1 rewrites keep offsets
    assert fast.text == "a,b "
    assert fast.original_span(0, 3) == (0, 3)
    slow = normalize("①ﬁx")  # expansions need the offset map
    assert slow.text == "1fix"
    assert slow.original_span(1, 3) == (1, 2)
    assert slow.original_span(0, 4) == (0, 3)


def test_expanding_characters_keep_original_surfaces():
    matcher = EntityMatcher([EntityRef(9, "asset", "X-1", "ﬁeld kit", ())])
    text = "“…” the ﬁeld kit"
    [match] = matcher.find(text)
    assert match.surface == "ﬁeld kit" and text[match.start : match.end] == "ﬁeld kit"
