"""Partial names (entities/partial.py): a mention that names several registered entities of one type
only partly is ambiguous with exactly those; "上次那辆X" is the latest discussed of them. The category
words come from the registry, not from the fixed table in typewords.py (none of these words is in it)."""
from datetime import datetime, timedelta, timezone

from entities.matcher import EntityMatcher, EntityRef
from entities.partial import skeleton
from entities.resolver import MentionEvidence, resolve

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone(timedelta(hours=8)))
TOWER1 = EntityRef(1, "asset", "T-1", "烘干一号塔", ())
TOWER2 = EntityRef(2, "asset", "T-2", "烘干二号塔", ())
DRYER = EntityRef(3, "asset", "D-1", "1号烘干机", ("北场烘干机",))
VAN11 = EntityRef(11, "vehicle", "V-511", "浙B·冷链11", ("冷链11号车",))
VAN12 = EntityRef(12, "vehicle", "V-512", "浙B·冷链12", ("冷链12号车",))
BOX = EntityRef(13, "vehicle", "V-520", "浙B·厢货05", ("厢货5号",))
ROUTE = EntityRef(20, "route", "R-03", "冷链03号线", ("苏州北线",))
REGISTRY = {r.id: r for r in (TOWER1, TOWER2, DRYER, VAN11, VAN12, BOX, ROUTE)}


def run(text, **kwargs):
    return resolve(text, matcher=EntityMatcher(REGISTRY.values()), entities=REGISTRY, **kwargs)


def test_skeleton_drops_numbers_codes_and_their_measure():
    assert skeleton("烘干一号塔") == skeleton("烘干二号塔") == "烘干塔"
    assert skeleton("冷链11号车") == skeleton("21号冷链车") == "冷链车"
    assert skeleton("浙B·冷链11") == "冷链" and skeleton("S780") == ""


def test_words_not_contiguous_in_the_names_are_ambiguous_with_exactly_those():
    res = run("那座烘干塔今天能开吗")
    assert (res.status, sorted(res.candidates)) == ("ambiguous", [1, 2])
    assert res.evidence[-1]["rule"] == "partial_name"


def test_the_longest_partial_name_decides_and_type_words_inside_it_do_not_count():
    # "冷链车": the two refrigerated vans, not the box van, not the 冷链 route; its "车" is no asset type word
    res = run("冷链车的冷机这周安排谁去检查")
    assert (res.status, sorted(res.candidates)) == ("ambiguous", [11, 12])


def test_one_partial_match_resolves():
    assert (run("烘干机今天能开机吗").status, run("烘干机今天能开机吗").entity_id) == ("resolved", 3)


def test_last_time_picks_the_most_recently_discussed_of_the_matches():
    past = [MentionEvidence(12, T0), MentionEvidence(11, T0 + timedelta(days=14)), MentionEvidence(13, T0 + timedelta(days=20))]
    res = run("上次那辆冷链车后来还有问题吗", past=past)
    assert (res.status, res.entity_id) == ("resolved", 11)  # the box van was discussed later but is no 冷链车
    res = run("上次那辆冷链车后来还有问题吗", past=past[:1])
    assert (res.status, res.entity_id) == ("resolved", 12)


def test_a_partial_name_attached_to_a_number_names_one_unknown_entity():
    assert run("3号烘干塔坏了").status == "none"  # not a sibling of 烘干一号塔


def test_exact_names_still_win_and_hidden_entities_never_appear():
    assert run("冷链12号车的冷机检查过了吗").entity_id == 12
    res = run("那座烘干塔今天能开吗", allowed=lambda i: i != 2)
    assert (res.status, res.entity_id) == ("resolved", 1)


def test_registered_types_are_type_words():
    res = run("Which route is delayed today?")
    assert (res.status, res.entity_id) == ("resolved", 20)
    assert res.evidence[0]["rule"] == "type_words" and res.evidence[0]["types"] == ["route"]
    assert run("the routes are fine").entity_id == 20
    assert run("reroute everything").status == "none"  # inside a word
