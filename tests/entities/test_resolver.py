from datetime import datetime, timedelta, timezone

import pytest

from entities.matcher import EntityMatcher, EntityRef
from entities.resolver import MentionEvidence, Resolution, resolve
from entities.typewords import scan

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone(timedelta(hours=8)))

H1 = EntityRef(1, "asset", "A-1001", "1号收割机", ("东区收割机",))
H2 = EntityRef(2, "asset", "A-1002", "2号收割机", ("西区收割机",))
TRACTOR = EntityRef(3, "asset", "A-2001", "3号拖拉机", ("大拖",))
MODEL = EntityRef(4, "asset_model", "MODEL-S780", "S780 联合收割机", ("S780",))
WO = EntityRef(5, "workorder", "WO-2026-0012", "工单0012", ("0012号工单",))
REGISTRY = {r.id: r for r in (H1, H2, TRACTOR, MODEL, WO)}


def run(text: str, registry: dict[int, EntityRef] = REGISTRY, **kwargs) -> Resolution:
    return resolve(text, matcher=EntityMatcher(registry.values()), entities=registry, **kwargs)


def said(entity_id: int, minutes: int, conversation_id: int | None = None) -> MentionEvidence:
    return MentionEvidence(entity_id, T0 + timedelta(minutes=minutes), conversation_id)


def rules(res: Resolution) -> list[str]:
    return [step["rule"] for step in res.evidence]


# -- the scenarios of shared/eval/scenarios-zh.jsonl ---------------------------------------


def test_coref_it_01():
    res = run("它为什么停机了", recent=[said(3, 0), said(3, 1)])
    assert (res.status, res.entity_id) == ("resolved", 3)
    assert rules(res) == ["coreference"]


def test_ambiguous_01():
    res = run("那台收割机的保养到期了吗")
    assert res.status == "ambiguous"
    assert res.candidates == [1, 2]
    assert res.entity_id is None


def test_last_time_01():
    res = run("上次那台收割机修好了吗", past=[said(2, 0, 7), said(2, 1, 7)])
    assert (res.status, res.entity_id) == ("resolved", 2)
    assert rules(res) == ["type_words", "long_term"]
    assert res.evidence[-1]["conversation_id"] == 7


def test_workorder_vs_asset_01():
    res = run("工单0012现在什么进度")
    assert (res.status, res.entity_id) == ("resolved", 5)
    res = run("S780这个机型常见什么故障")
    assert (res.status, res.entity_id) == ("resolved", 4)


def test_entity_revoked_01():
    res = run("3号拖拉机大修花了多少钱", past=[said(3, 0)], allowed=lambda eid: eid != 3)
    assert res.status == "none"
    assert res.entity_id is None and res.candidates == []
    assert "3" not in repr([s.get("entity_ids") for s in res.evidence])
    assert not any("surface" in step for step in res.evidence)


def test_events_kept_01_explicit_name():
    res = run("1号收割机出过哪些故障")
    assert (res.status, res.entity_id, rules(res)) == ("resolved", 1, ["name_alias"])


# -- rule (a) / (b) -------------------------------------------------------------------------


def test_explicit_id_beats_names():
    res = run("A-1001 和 2号收割机 比较一下")
    assert (res.status, res.entity_id) == ("resolved", 1)
    assert res.evidence == [{"rule": "explicit_id", "surface": "A-1001", "entity_ids": [1]}]


def test_two_names_are_ambiguous_not_the_first():
    res = run("1号收割机和2号收割机哪个油耗高")
    assert (res.status, res.candidates) == ("ambiguous", [1, 2])


def test_shared_alias_is_ambiguous():
    registry = {
        1: EntityRef(1, "asset", "A-1", "一号机", ("老机器",)),
        2: EntityRef(2, "asset", "A-2", "二号机", ("老机器",)),
    }
    res = run("老机器又坏了", registry)
    assert (res.status, res.candidates) == ("ambiguous", [1, 2])
    assert res.evidence == [{"rule": "name_alias", "surface": "老机器", "entity_ids": [1, 2]}]


def test_explicit_match_beats_recent_coreference():
    res = run("这个和1号收割机一样吗", recent=[said(3, 0)])
    assert (res.status, res.entity_id) == ("resolved", 1)


# -- cross-type safety ------------------------------------------------------------------------


def test_type_word_selects_among_entities_sharing_a_surface():
    registry = dict(REGISTRY)
    registry[6] = EntityRef(6, "asset", "A-3001", "S780 样机", ("S780",))
    assert (run("S780这个机型常见什么故障", registry).entity_id) == 4
    assert (run("S780这台设备在哪", registry).entity_id) == 6
    assert run("S780怎么样", registry).candidates == [4, 6]


def test_workorder_never_returned_for_asset_or_model_words():
    for text in ("资产WO-2026-0012在哪", "机型 WO-2026-0012", "这台设备是不是工单0012里的"):
        res = run(text)
        assert res.entity_id != 5 and 5 not in res.candidates, text


def test_workorder_words_never_resolve_to_an_asset():
    registry = dict(REGISTRY)
    registry[7] = EntityRef(7, "asset", "A-0012", "0012号机", ("0012",))
    res = run("工单0012现在什么进度", registry)
    assert (res.status, res.entity_id) == ("resolved", 5)
    # Hidden work order: "工单0012" must not fall back to the asset "0012".
    res = run("工单0012现在什么进度", registry, allowed=lambda eid: eid != 5)
    assert res.status == "none"


def test_type_word_inside_a_name_does_not_constrain():
    # "收割机" is part of the model's name, not a statement that the user means an asset.
    res = run("S780 联合收割机的保养周期")
    assert (res.status, res.entity_id) == ("resolved", 4)


def test_coreference_respects_the_type_word():
    recent = [said(5, 0), said(3, 1)]  # the work order, then the tractor
    assert run("它什么进度", recent=recent).entity_id == 3
    assert run("这个工单什么进度", recent=recent).entity_id == 5
    assert run("这个机型呢", recent=recent).entity_id == 4  # nothing recent: type word alone


# -- rule (c) coreference ---------------------------------------------------------------------


def test_coreference_takes_the_most_recent_turn():
    res = run("它修好了吗", recent=[said(1, 0), said(2, 1)])
    assert (res.status, res.entity_id) == ("resolved", 2)


def test_coreference_ambiguous_when_latest_turn_named_several():
    res = run("它修好了吗", recent=[said(3, 0), said(1, 1), said(2, 1)])
    assert (res.status, res.candidates) == ("ambiguous", [1, 2])
    # A category word narrows the turn down.
    res = run("这台收割机修好了吗", recent=[said(3, 1), said(1, 1)])
    assert (res.status, res.entity_id) == ("resolved", 1)


def test_coreference_needs_a_cue():
    res = run("为什么停机了", recent=[said(3, 0)])
    assert res.status == "none"


def test_coreference_without_recent_mentions_is_none():
    assert run("它为什么停机了").status == "none"


def test_pronoun_inside_a_compound_is_not_a_cue():
    assert run("其它的呢", recent=[said(3, 0)]).status == "none"
    assert run("应该怎么办", recent=[said(3, 0)]).status == "none"


def test_english_cues():
    assert run("why did it stop", recent=[said(3, 0)]).entity_id == 3
    assert run("what about that machine", recent=[said(3, 0)]).entity_id == 3
    assert run("any item left", recent=[said(3, 0)]).status == "none"  # "it" inside "item"


# -- rule (d) long-term -------------------------------------------------------------------------


def test_long_term_takes_most_recent_matching_category():
    past = [said(1, 0, 1), said(3, 5, 2), said(2, 3, 1)]
    assert run("上次那台收割机修好了吗", past=past).entity_id == 2
    assert run("上次那台拖拉机修好了吗", past=past).entity_id == 3
    assert run("上次说的那个怎么样了", past=past).entity_id == 3


def test_long_term_falls_back_to_type_only_without_past():
    res = run("上次那台拖拉机修好了吗")
    assert (res.status, res.entity_id, rules(res)[-1]) == ("resolved", 3, "type_only")


def test_long_term_skips_hidden_entities():
    past = [said(1, 0), said(2, 5)]
    res = run("上次那台收割机修好了吗", past=past, allowed=lambda eid: eid != 2)
    assert (res.status, res.entity_id) == ("resolved", 1)
    assert 2 not in res.evidence[-1]["entity_ids"]


# -- rule (e) type only -----------------------------------------------------------------------


def test_type_word_alone():
    assert run("the tractor needs oil").entity_id == 3
    assert run("那个工单什么进度").entity_id == 5
    assert run("那台设备").candidates == [1, 2, 3]


def test_qualified_type_word_does_not_stand_alone():
    # "5号拖拉机" names a specific (unknown) tractor: don't answer with the only known one.
    assert run("5号拖拉机在哪").status == "none"
    assert run("tractor 5 location").status == "none"


def test_unknown_types_have_no_type_words():
    registry = {8: EntityRef(8, "field", "F-1", "北坡地", ())}
    assert run("北坡地的墒情", registry).entity_id == 8
    assert run("那块地", registry).status == "none"


# -- access filtering -------------------------------------------------------------------------


def test_hidden_entity_behaves_as_unregistered():
    hidden = run("大拖大修花了多少钱", recent=[said(3, 0)], allowed=lambda eid: eid != 3)
    unregistered = run(
        "大拖大修花了多少钱", {k: v for k, v in REGISTRY.items() if k != 3}, recent=[said(3, 0)]
    )
    assert hidden == unregistered
    assert hidden.status == "none"


def test_allowed_filters_every_rule():
    deny = {1, 2}
    allowed = lambda eid: eid not in deny  # noqa: E731
    assert run("A-1001", allowed=allowed).status == "none"
    assert run("它修好了吗", recent=[said(1, 0)], allowed=allowed).status == "none"
    assert run("那台收割机", allowed=allowed).status == "none"
    # Ambiguity is decided after filtering: one visible candidate is resolved.
    assert run("那台收割机", allowed=lambda eid: eid != 2).entity_id == 1


def test_allowed_many_is_called_in_batches():
    calls: list[set[int]] = []

    def allowed_many(ids):
        calls.append(set(ids))
        return set(ids) - {2}

    res = run("那台收割机的保养", allowed_many=allowed_many, allowed=lambda eid: pytest.fail("per-id"))
    assert (res.status, res.entity_id) == ("resolved", 1)
    assert calls == [{1, 2}]


def test_scan_finds_kinds_and_qualification():
    cues = {(c.kind, c.word, c.qualified) for c in scan("上次那台3号拖拉机，它的工单")}
    assert ("long_term", "上次", False) in cues
    assert ("type", "拖拉机", True) in cues
    assert ("coref", "它的", False) in cues
    assert ("type", "工单", False) in cues


# -- candidate cap, and access asked only as far as the answer needs ---------------------------


def harvesters(n: int) -> dict[int, EntityRef]:
    return {i: EntityRef(i, "asset", f"H-{i}", f"{i}号收割机") for i in range(1, n + 1)}


def test_cap_lists_the_first_candidates_and_says_truncated():
    registry = harvesters(50)
    full = run("那台收割机", registry)
    capped = run("那台收割机", registry, max_candidates=5)
    assert full.status == capped.status == "ambiguous"
    assert (full.truncated, len(full.candidates)) == (False, 50)
    assert capped.truncated and capped.candidates == full.candidates[:5] == [1, 2, 3, 4, 5]
    assert capped.evidence[-1] == {
        "rule": "type_only", "types": ["asset"], "entity_ids": [1, 2, 3, 4, 5], "truncated": True,
    }


def test_cap_exactly_filled_is_not_truncated():
    res = run("那台收割机", harvesters(5), max_candidates=5)
    assert (res.status, res.candidates, res.truncated) == ("ambiguous", [1, 2, 3, 4, 5], False)
    assert "truncated" not in res.evidence[-1]


def test_cap_checks_access_only_until_it_is_filled():
    calls: list[set[int]] = []

    def allowed_many(ids):
        calls.append(set(ids))
        return set(ids) - {2, 4}

    registry = harvesters(1000)
    res = run("那台收割机", registry, allowed_many=allowed_many, max_candidates=5)
    assert (res.status, res.candidates, res.truncated) == ("ambiguous", [1, 3, 5, 6, 7], True)
    asked = set().union(*calls)
    assert len(asked) <= 10 and asked <= set(range(1, 11))  # the first few, never the thousand
    uncapped = run("那台收割机", registry, allowed_many=lambda ids: set(ids) - {2, 4})
    assert res.candidates == uncapped.candidates[:5]


def test_cap_never_changes_the_status():
    # Every entity but one hidden: the lazy check goes on until it finds the one, and resolves.
    only = run("那台收割机", harvesters(300), allowed_many=lambda ids: set(ids) & {250}, max_candidates=3)
    assert (only.status, only.entity_id) == ("resolved", 250)
    # All hidden: none, as without the cap.
    assert run("那台收割机", harvesters(300), allowed=lambda eid: False, max_candidates=3).status == "none"
    # Two visible far apart: still ambiguous, both listed.
    two = run("那台收割机", harvesters(300), allowed=lambda eid: eid in {7, 290}, max_candidates=3)
    assert (two.status, two.candidates, two.truncated) == ("ambiguous", [7, 290], False)


def test_cap_merges_several_types_in_id_order():
    registry = {i: EntityRef(i, "asset_model" if i % 2 else "workorder", f"X-{i}", f"对象{i}") for i in range(1, 21)}
    full = run("机型还是工单", registry)
    assert full.candidates == list(range(1, 21))
    assert run("机型还是工单", registry, max_candidates=3).candidates == [1, 2, 3]


def test_cap_applies_to_an_explicit_ambiguity():
    registry = {i: EntityRef(i, "asset", f"A-{i}", f"{i}号机", ("老机器",)) for i in range(1, 8)}
    res = run("老机器又坏了", registry, max_candidates=3)
    assert (res.status, res.candidates, res.truncated) == ("ambiguous", [1, 2, 3], True)
    assert run("老机器又坏了", registry).candidates == list(range(1, 8))


def test_cap_below_two_is_refused():
    with pytest.raises(ValueError):
        run("那台收割机", max_candidates=1)


def test_mentions_are_loaded_only_when_a_rule_needs_them():
    loaded: list[str] = []

    def recent():
        loaded.append("recent")
        return [said(3, 0)]

    def past():
        loaded.append("past")
        return [said(2, 0, 7)]

    assert run("1号收割机出过哪些故障", recent=recent, past=past).entity_id == 1
    assert run("今天天气不错", recent=recent, past=past).status == "none"
    assert loaded == []
    # An ambiguous answer asks the current conversation (one of the matches just discussed breaks the tie), never
    # the past ones.
    assert run("收割机的保养计划", recent=recent, past=past).candidates == [1, 2]
    assert loaded == ["recent"]
    assert run("它为什么停机了", recent=recent, past=past).entity_id == 3
    assert loaded == ["recent", "recent"]
    assert run("上次说的那个怎么样了", recent=recent, past=past).entity_id == 2
    assert loaded == ["recent", "recent", "past"]


def test_latest_turn_asks_access_newest_turns_first():
    registry = harvesters(50)
    past = [said(i, i) for i in range(1, 51)]  # one entity per turn, entity 50 the latest
    calls: list[set[int]] = []

    def allowed_many(ids, hidden=frozenset()):
        calls.append(set(ids))
        return set(ids) - hidden

    res = run("上次说的那个怎么样了", registry, past=past, allowed_many=allowed_many, max_candidates=3)
    assert (res.status, res.entity_id, calls) == ("resolved", 50, [{50, 49, 48, 47}])
    calls.clear()
    hidden = frozenset(range(45, 51))
    res = run("上次说的那个怎么样了", registry, past=past, max_candidates=3,
              allowed_many=lambda ids: allowed_many(ids, hidden))
    assert (res.status, res.entity_id) == ("resolved", 44)
    assert calls == [{50, 49, 48, 47}, {46, 45, 44, 43}]
    # Without a cap: one batch of every mention, as the access check always did.
    calls.clear()
    assert run("上次说的那个怎么样了", registry, past=past, allowed_many=allowed_many).entity_id == 50
    assert calls == [set(range(1, 51))]
