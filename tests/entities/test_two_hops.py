"""Qualifiers two relations away ("A栋的那张护理床": bed → room → floor of wing A) and a possessive pronoun's
entity owning one of several look-alikes ("她的护理床"). Pure resolver, no DB; a hospice registry no labelled
file uses. A hub (an entity with many neighbours) bridges nothing."""
from datetime import datetime, timezone

from entities.matcher import EntityMatcher, EntityRef
from entities.narrowing import MAX_HUB_NEIGHBOURS
from entities.resolver import MentionEvidence, resolve

WING_N = EntityRef(1, "floor", "F-N", "北楼一层")
WING_S = EntityRef(2, "floor", "F-S", "南楼一层")
ROOM_N = EntityRef(3, "room", "R-N", "101病房")
ROOM_S = EntityRef(4, "room", "R-S", "201病房")
BED_N = EntityRef(5, "device", "D-N", "101电动病床")
BED_S = EntityRef(6, "device", "D-S", "201电动病床")
PUMP = EntityRef(7, "device", "D-P", "输液泵")
PATIENT = EntityRef(8, "patient", "P-1", "周玉兰")
PLAN = EntityRef(9, "plan", "PL-1", "护理计划5")
BASE = [WING_N, WING_S, ROOM_N, ROOM_S, BED_N, BED_S, PUMP, PATIENT, PLAN]
ATTRIBUTES = {WING_N.id: {"building": "北楼"}, WING_S.id: {"building": "南楼"}}
RELATIONS = [(ROOM_N, "on", WING_N), (ROOM_S, "on", WING_S), (BED_N, "located_in", ROOM_N),
             (BED_S, "located_in", ROOM_S), (PATIENT, "stays_in", ROOM_S), (PLAN, "for", PATIENT)]
T0 = datetime(2026, 10, 5, 1, 0, tzinfo=timezone.utc)


def run(text, extra=(), extra_relations=(), **kwargs):
    registry = {r.id: r for r in (*BASE, *extra)}
    m = EntityMatcher(registry.values())
    m.attributes = dict(ATTRIBUTES)
    graph: dict[int, list] = {}
    for a, type_, b in (*RELATIONS, *extra_relations):
        graph.setdefault(a.id, []).append((b.id, type_, "out"))
        graph.setdefault(b.id, []).append((a.id, type_, "in"))
    m.graph = {k: tuple(v) for k, v in graph.items()}
    res = resolve(text, matcher=m, entities=registry, **kwargs)
    return res.status, res.entity_id if res.status == "resolved" else sorted(res.candidates)


def test_a_qualifier_two_relations_away_narrows():
    assert run("电动病床的护栏都检查了吗") == ("ambiguous", [BED_N.id, BED_S.id])
    assert run("南楼的那张电动病床谁在用？") == ("resolved", BED_S.id)


def test_a_hidden_middle_entity_bridges_nothing():
    assert run("南楼的那张电动病床谁在用？", allowed=lambda i: i != ROOM_S.id)[0] != "resolved"


def test_a_hub_bridges_nothing():
    # The south room holds many other things too: through it, "南楼" no longer tells the beds apart.
    crowd = [EntityRef(100 + n, "chair", f"C-{n}", f"陪护椅{n}号") for n in range(MAX_HUB_NEIGHBOURS + 1)]
    assert run("南楼的那张电动病床谁在用？", extra=crowd,
               extra_relations=[(c, "located_in", ROOM_S) for c in crowd])[0] != "resolved"


def test_a_possessive_pronoun_picks_the_look_alike_its_entity_owns():
    recent = [MentionEvidence(PATIENT.id, T0, 1), MentionEvidence(PLAN.id, T0, 1)]
    assert run("她的电动病床高度调过吗", recent=recent) == ("resolved", BED_S.id)
    assert run("电动病床高度调过吗", recent=recent) == ("ambiguous", [BED_N.id, BED_S.id])
