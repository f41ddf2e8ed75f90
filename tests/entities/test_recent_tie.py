"""The recent window breaks ties (issue 41): a mention several entities fit means the one of them the current
conversation discussed, when it discussed only that one; a question about all of them ("一共几个", "how many") keeps
them all. Pure resolver, no DB; the registry is a small airfield no labelled file uses."""
from datetime import datetime, timezone

from entities.matcher import EntityRef
from entities.resolver import MentionEvidence, resolve
from tests.entities.registry_fixture import build_matcher

STAND_E4 = EntityRef(1, "stand", "ST-E4", "东区4号机位")
STAND_W4 = EntityRef(2, "stand", "ST-W4", "西区4号机位")
SCOPE_1 = EntityRef(3, "instrument", "IN-1", "Leica confocal SP8")
SCOPE_2 = EntityRef(4, "instrument", "IN-2", "Zeiss confocal LSM 900")
REGISTRY = {r.id: r for r in (STAND_E4, STAND_W4, SCOPE_1, SCOPE_2)}
T0 = datetime(2026, 7, 1, 1, 0, tzinfo=timezone.utc)


def got(text, **kwargs):
    res = resolve(text, matcher=build_matcher(REGISTRY.values()), entities=REGISTRY, **kwargs)
    return res.status, res.entity_id if res.status == "resolved" else sorted(res.candidates)


def test_the_one_match_just_discussed_is_meant():
    assert got("4号机位下午有人用吗") == ("ambiguous", [STAND_E4.id, STAND_W4.id])
    assert got("4号机位下午有人用吗", recent=[MentionEvidence(STAND_W4.id, T0, 1)]) == ("resolved", STAND_W4.id)
    assert got("Should I block the confocal tonight?") == ("ambiguous", [SCOPE_1.id, SCOPE_2.id])
    assert got("Should I block the confocal tonight?", recent=[MentionEvidence(SCOPE_2.id, T0, 1)]) \
        == ("resolved", SCOPE_2.id)


def test_both_discussed_or_discussed_elsewhere_leaves_the_tie():
    both = [MentionEvidence(STAND_W4.id, T0, 1), MentionEvidence(STAND_E4.id, T0.replace(hour=2), 1)]
    assert got("4号机位下午有人用吗", recent=both) == ("ambiguous", [STAND_E4.id, STAND_W4.id])
    assert got("4号机位下午有人用吗", past=[MentionEvidence(STAND_W4.id, T0, 1)]) \
        == ("ambiguous", [STAND_E4.id, STAND_W4.id])


def test_a_question_about_all_of_them_keeps_them_all():
    recent = [MentionEvidence(STAND_W4.id, T0, 1)]
    assert got("4号机位一共几个，分别在哪？", recent=recent) == ("ambiguous", [STAND_E4.id, STAND_W4.id])
    assert got("How many confocal scopes are free?", recent=[MentionEvidence(SCOPE_2.id, T0, 1)]) \
        == ("ambiguous", [SCOPE_1.id, SCOPE_2.id])
