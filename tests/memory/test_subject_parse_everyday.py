"""Subject parsing of everyday wording (memory/subjects/parts.py, match.py): what the standing
reading of issue 15 started storing, and the guards that keep different things apart."""
from memory.subjects.match import pair_features
from memory.subjects.parts import parse


def _features(older: str, newer: str):
    return pair_features(parse(older), parse(newer), masked=0.5, full=0.5)


def test_a_code_after_the_copula_is_the_value_not_an_owner():
    parts = parse("3号拖拉机用的是15W-40的机油")
    assert parts.values == ("15w40",) and "机油" in parts.terms
    assert parts.idents == frozenset({"3"})


def test_a_name_jieba_tags_as_a_time_word_is_a_value():
    assert parse("浦东线的调度是老周").values == ("老周",)


def test_a_place_name_in_the_subject_picks_one_thing_out():
    f = _features("浦东线的调度是老周", "嘉定线的调度是小吴")
    assert f.ident_conflict


def test_one_kind_of_value_on_a_shared_subject_word_is_half_a_head_match():
    f = _features("帮我设一下，日程提醒默认提前十五分钟", "提醒时间改一下，统一提前半小时吧")
    assert f.head == 0.5 and not f.heads_differ


def test_the_kind_of_value_alone_never_matches_unrelated_subjects():
    # Both state a clock time, but share no subject word: no head match from the value kind.
    f = _features("嘉兴分拨中心晚上十点截单", "学校早上八点开门")
    assert f.head == 0.0


def test_counts_written_out_are_values_like_digits():
    # A count in words is the value of the statement, as "24" would be; without it two counts of one
    # thing look like one statement with no value and never replace each other.
    older = parse("The north depot runs forty-two delivery vans")
    newer = parse("the north depot now has fifty-one delivery vans")
    assert older.values == ("fortytwo",) and newer.values == ("fiftyone",)
    assert older.heads == newer.heads == frozenset({"van"})
    assert parse("We keep a dozen hens").values == ("dozen",)
