"""The subject tier of the write path (DESIGN §5, memory/subjects): which standing memories a new
standing candidate duplicates, supersedes or may conflict with. Called inside memory_write's
transaction, with the user's write lock held."""
from __future__ import annotations

from django.conf import settings

from memory.choices import SUBJECT_KINDS, MemoryScope
from memory.models import Memory
from memory.vectors import active_embedder


def distinct_statements(older: str, newer: str) -> bool:
    from memory.subjects.match import distinct
    from memory.subjects.parts import parse

    return distinct(parse(older), parse(newer))


def subject_decisions(inp, similar: list[tuple], limits) -> dict[int, object]:
    """Subject matching (memory/subjects) of a standing candidate against the standing memories."""
    from memory.subjects import Existing, judge

    if inp.kind not in SUBJECT_KINDS or inp.scope != MemoryScope.USER or not similar:
        return {}
    existing = [Existing(id=m.id, content=m.content, kind=m.kind, slot_key=m.slot_key, full=sim)
                for m, sim in similar if m.kind in SUBJECT_KINDS]
    decisions = {e.id: d for e, d in judge(active_embedder(), limits, content=inp.content, kind=inp.kind,
                                           slot_key=inp.slot_key, existing=existing, subject=inp.subject,
                                           replaces_only=inp.replaces_only)}
    return _learned_replaces(inp, existing, _restatements(inp, existing, decisions))


def _restatements(inp, existing: list, decisions: dict[int, object]) -> dict[int, object]:
    """A second opinion on what the subject rules leave standing side by side: the learned judge
    (memory/learn/judge.py, D25) tells a restatement in other words ("我不吃香菜" / "香菜我是一口都不碰的")
    from a statement about another person or thing at the same cosine, which the rules cannot. Only its
    duplicate verdict is taken (its replaces are not yet better than the rules'), never against the
    rules' reading of another thing, attribute or value, and never on a change."""
    from dataclasses import replace

    from memory.learn.judge import judge_pairs, values_differ
    from memory.learn.pair_features import PairInput

    if inp.change or inp.replaces_only:
        return decisions
    open_pairs = [e for e in existing if e.id in decisions and decisions[e.id].action == "coexist"
                  and e.kind == inp.kind and not values_differ(e.content, inp.content)]
    if not open_pairs:
        return decisions
    # The judge's own guards run first (another identifier or speaker is never the same memory).
    verdicts = judge_pairs([PairInput(e.content, inp.content, e.kind, inp.kind) for e in open_pairs])
    for e, verdict in zip(open_pairs, verdicts):
        same = float(verdict.proba.get("duplicate", 0.0) + verdict.proba.get("supersede", 0.0))
        # Same subject by the model, no other value and no change announced: the same statement again.
        if verdict.reason == "model" and same >= settings.MEMORY_RESTATEMENT_MIN:
            decisions[e.id] = replace(decisions[e.id], action="duplicate", score=same)
    return decisions


def _learned_replaces(inp, existing: list, decisions: dict[int, object]) -> dict[int, object]:
    """A change the subject rules did not read as one: told as an event, with the old value only implied,
    in words no cue list holds ("膝盖不行了，现在早上改游泳了" after "我每天早上跑步五公里"). The learned judge
    (memory/learn/judge.py, D25) replaces where it is sure: P(replaces) at least
    MEMORY_LEARNED_REPLACE["min"], on a pair the rules left side by side or flagged, never against their
    reading of another thing or person, and one older memory per statement (the likeliest), since a change
    replaces one value. Below that, down to ["conflict"], a pair the rules left side by side becomes a
    possible conflict (both kept, the newer first, reviewed)."""
    from dataclasses import replace

    from memory.learn.judge import judge_pairs
    from memory.learn.pair_features import PairInput

    conf = settings.MEMORY_LEARNED_REPLACE
    if not conf.get("enabled", True):
        return decisions
    if any(d.action in ("supersede", "duplicate") for d in decisions.values()):
        return decisions  # the rules found what the statement replaces or restates
    # The closest few by stored cosine (each is encoded and judged: bounded work per write).
    closest = sorted(existing, key=lambda e: -e.full)[: int(conf.get("judged", 8))]
    open_pairs = [e for e in closest if e.id in decisions and decisions[e.id].action in ("coexist", "conflict")
                  and not _another_thing(decisions[e.id])]
    if not open_pairs:
        return decisions
    verdicts = judge_pairs([PairInput(e.content, inp.content, e.kind, inp.kind) for e in open_pairs])
    scored = sorted(((float(v.proba.get("supersede", 0.0)), e) for e, v in zip(open_pairs, verdicts)
                     if v.reason == "model"), key=lambda pair: -pair[0])
    if not scored:
        return decisions
    p, e = scored[0]  # a change replaces one value: the likeliest older memory only
    if p >= float(conf["min"]):
        decisions[e.id] = replace(decisions[e.id], action="supersede", score=p)
    elif p >= float(conf["conflict"]) and decisions[e.id].action == "coexist":
        decisions[e.id] = replace(decisions[e.id], action="conflict", score=p)
    return decisions


def _another_thing(decision) -> bool:
    """The rules read another thing or person (1号 vs 2号, Caroline vs Melanie): never the same memory."""
    f = getattr(decision, "features", None)
    return bool(f and (f.ident_conflict or f.speaker_differs))


def other_attribute(decision) -> bool:
    """The matcher saw another thing, another attribute or another person (1号 vs 2号, 在… vs 有…,
    面积 vs 位置, Caroline vs Melanie): a
    shared entity and a close embedding do not make such a pair the same subject."""
    f = getattr(decision, "features", None)
    return bool(f and (f.ident_conflict or f.pred_conflict or f.heads_differ or f.speaker_differs))


def conflicts_record(memory: Memory, similar: list[tuple], decisions: dict[int, object],
                     superseded: set[int]) -> list[int]:
    """The uncertain band: both stay active (the newer ranks first) and the pair is queued for an
    operator (console, GET /api/v1/conflicts)."""
    from memory.services.conflicts import conflict_record

    out = []
    for old, _ in similar:
        decision = decisions.get(old.id)
        if decision is None or decision.action != "conflict" or old.id in superseded:
            continue
        signals = decision.features.as_dict() if decision.features else {}
        older = old if isinstance(old, Memory) else Memory.objects.get(id=old.id)  # the window holds light rows
        conflict_record(older=older, newer=memory, score=decision.score, signals=signals)
        out.append(old.id)
    return out
