"""People in a care home: bare pronouns ("她今天…"), kinship titles after a surname or a given name ("桂芳奶奶"),
generic nouns for people ("老人") that a relation path asks for. Pure resolver, no DB."""
from datetime import datetime, timezone

from entities.matcher import EntityMatcher, EntityRef
from entities.person_forms import person_forms
from entities.resolver import MentionEvidence, resolve
from tests.entities.registry_fixture import build_matcher

ROOM = EntityRef(1, "room", "R-1", "108房")
ELDER_A = EntityRef(2, "resident", "RS-A", "赵淑珍")
ELDER_B = EntityRef(3, "resident", "RS-B", "钱国华")
NURSE = EntityRef(4, "caregiver", "CG-1", "孙丽萍", ("孙姐",))
PLAN = EntityRef(5, "careplan", "CP-1", "护理计划7")
ELDER_C = EntityRef(6, "resident", "RS-C", "赵明", ("赵爷爷",))
REGISTRY = {r.id: r for r in (ROOM, ELDER_A, ELDER_B, NURSE, PLAN, ELDER_C)}
RELATIONS = [(ELDER_A, "lives_in", ROOM), (NURSE, "cares_for", ELDER_A), (NURSE, "cares_for", ELDER_B),
             (PLAN, "for", ELDER_A)]
T0 = datetime(2026, 10, 5, 1, 0, tzinfo=timezone.utc)


def matcher():
    m = build_matcher(REGISTRY.values(), relations=RELATIONS)
    return m


def got(text, **kwargs):
    res = resolve(text, matcher=matcher(), entities=REGISTRY, **kwargs)
    return res.status, res.entity_id if res.status == "resolved" else sorted(res.candidates)


def test_kinship_titles_follow_the_surname_or_the_given_name():
    assert {"赵奶奶", "淑珍奶奶", "钱爷爷"} <= person_forms("赵淑珍") | person_forms("钱国华")
    assert got("淑珍奶奶午饭吃了多少？") == ("resolved", ELDER_A.id)
    assert got("钱爷爷今天量血压了吗") == ("resolved", ELDER_B.id)


def test_a_bare_pronoun_points_at_the_person_just_discussed():
    recent = [MentionEvidence(ELDER_B.id, T0, 1)]
    assert got("她今天早上的血糖是多少？", recent=recent) == ("resolved", ELDER_B.id)
    assert got("其他房间的呼叫器响了吗", recent=recent) == ("none", [])  # "其他" is not "他"


def test_a_generic_noun_for_people_asks_for_the_people_a_relation_reaches():
    assert got("孙姐负责的老人里谁今天要复诊？") == ("ambiguous", [ELDER_A.id, ELDER_B.id])


def test_a_pointer_before_an_alias_other_people_are_also_called_points_among_them():
    # "赵爷爷" is 赵明's registered alias, and how any resident surnamed 赵 may be said (the registry does not know
    # who is a grandfather): 赵淑珍, 赵明, 赵国栋.
    ELDER_D = EntityRef(7, "resident", "RS-D", "赵国栋")
    registry = {**REGISTRY, ELDER_D.id: ELDER_D}
    recent = [MentionEvidence(ELDER_D.id, T0, 1)]

    def run(text, **kwargs):
        res = resolve(text, matcher=EntityMatcher(registry.values()), entities=registry, **kwargs)
        return res.status, res.entity_id if res.status == "resolved" else sorted(res.candidates)

    assert run("赵爷爷的家属几点来？", recent=recent) == ("resolved", ELDER_C.id)  # bare: the registered alias
    assert run("那位赵爷爷今天精神怎么样", recent=recent) == ("resolved", ELDER_D.id)  # the one just discussed
    assert run("那位赵爷爷今天精神怎么样") == ("ambiguous", [ELDER_A.id, ELDER_C.id, ELDER_D.id])


def test_a_form_two_people_share_means_the_one_this_conversation_discussed():
    # "赵奶奶" is how 赵淑珍 and 赵明 may both be said (neither registered it): bare, both; after a turn about one
    # of them, that one, as a listener takes it; after turns about both, both again.
    assert got("赵奶奶的家属几点来？") == ("ambiguous", [ELDER_A.id, ELDER_C.id])
    one = [MentionEvidence(ELDER_A.id, T0, 1)]
    assert got("赵奶奶的家属几点来？", recent=one) == ("resolved", ELDER_A.id)
    both = one + [MentionEvidence(ELDER_C.id, T0.replace(hour=2), 1)]
    assert got("赵奶奶的家属几点来？", recent=both) == ("ambiguous", [ELDER_A.id, ELDER_C.id])
    # Only the current conversation's window breaks the tie, not what was discussed in another one.
    assert got("赵奶奶的家属几点来？", past=one) == ("ambiguous", [ELDER_A.id, ELDER_C.id])
