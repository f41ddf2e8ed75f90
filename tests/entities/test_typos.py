"""Chinese typed by its sound (issue 41): a word no name holds, hardly used in everyday language, that sounds exactly
like one registered word is read as that word, only when the text as typed names nothing. Pure resolver, no DB; the
registry is a small property-management office no labelled file uses."""
from entities.matcher import EntityRef
from entities.resolver import resolve
from entities.typos import TypoIndex, sound
from tests.entities.registry_fixture import build_matcher

GARDEN = EntityRef(1, "estate", "ES-1", "翠湖花园", ("翠湖",))
TOWER = EntityRef(2, "estate", "ES-2", "金桂大厦")
LIFT = EntityRef(3, "lift", "LF-1", "翠湖花园3号梯")
KEEPER_A = EntityRef(4, "person", "P-1", "刘国梁")
KEEPER_B = EntityRef(5, "person", "P-2", "刘振华")
REGISTRY = {r.id: r for r in (GARDEN, TOWER, LIFT, KEEPER_A, KEEPER_B)}


def got(text, allowed=lambda _i: True):
    res = resolve(text, matcher=build_matcher(REGISTRY.values()), entities=REGISTRY, allowed=allowed)
    return res.status, res.entity_id if res.status == "resolved" else sorted(res.candidates), \
        [s for s in res.evidence if s["rule"] == "typo"]


def test_sound_drops_tones_per_character():
    assert sound("锦秀") == sound("锦绣") == "jin xiu"
    index = TypoIndex(["锦绣", "华庭", "金桂", "金贵"])  # 金桂 / 金贵 sound alike: neither is read for the other
    assert index.readings("锦秀华庭的水费") == [("锦秀", "锦绣")]
    assert index.readings("金鬼大厦") == []


def test_a_mistyped_name_is_read_as_the_one_it_sounds_like():
    status, found, steps = got("翠胡花园的电梯又坏了")
    assert (status, found) == ("resolved", GARDEN.id)
    assert steps == [{"rule": "typo", "read": [{"said": "翠胡", "as": "翠湖"}]}]
    # A surname with a title (the registry's own form for both keepers) mistyped keeps both.
    assert got("刘师付今天在不在")[:2] == ("ambiguous", [KEEPER_A.id, KEEPER_B.id])


def test_a_text_that_names_something_as_typed_is_not_read_by_sound():
    status, found, steps = got("金桂大厦停水了")
    assert (status, found, steps) == ("resolved", TOWER.id, [])


def test_an_everyday_word_is_meant_as_typed():
    # "水费" is a word people use; no registered word sounds like it anyway, and nothing is named.
    assert got("这个月水费多少")[:2] == ("none", [])


def test_a_hidden_entity_stays_hidden_when_read_by_sound():
    assert got("翠胡花园的电梯又坏了", allowed=lambda i: i != GARDEN.id)[:2] != ("resolved", GARDEN.id)


def test_a_long_latin_word_one_edit_from_one_registered_word_is_read_as_it():
    patient = EntityRef(10, "patient", "PT-1", "Thomas Whitaker")
    other = EntityRef(11, "patient", "PT-2", "Tom Walker")
    registry = {patient.id: patient, other.id: other}
    res = resolve("Whittaker's here, running late", matcher=build_matcher(registry.values()), entities=registry)
    assert (res.status, res.entity_id) == ("resolved", patient.id)
    assert res.evidence[0] == {"rule": "typo", "read": [{"said": "whittaker", "as": "whitaker"}]}
    # A short word is one edit from too many others; it is meant as typed.
    assert resolve("Walkr's here", matcher=build_matcher(registry.values()), entities=registry).status == "none"
