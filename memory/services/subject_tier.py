"""The subject tier of the write path (DESIGN §5, memory/subjects): which standing memories a new
standing candidate duplicates, supersedes or may conflict with. Called inside memory_write's
transaction, with the user's write lock held."""
from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from memory.choices import SINGLE_VALUED_KINDS, SUBJECT_KINDS, MemoryKind, MemoryScope, MemoryStatus
from memory.models import EntityLink, Memory
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
    return _learned_replaces(inp, existing, _restatements(inp, existing, _kept_apart(inp, existing, decisions)))


def _kept_apart(inp, existing: list, decisions: dict[int, object]) -> dict[int, object]:
    """A restatement the subject rules read that the learned judge is sure is another statement
    (P(coexists) at least MEMORY_LEARNED_KEEP_APART) is kept as its own memory. The rules read "Sam is
    booked for ep 43, records March 27" as "Lena is confirmed for episode 42, recording March 20" said
    again (one head, a shared "2026" of the dates); a duplicate verdict folds the statement into the
    other and it is never recalled, while a restatement kept twice costs one near-copy.

    And a restatement the judge reads as a change (P(replaces) over P(duplicate), at least the flag floor)
    is the judge's to decide: replaced from the replace floor, flagged under it. The rules read "年卡涨价了，
    现在3299" as "我们年卡卖2999" said again (one head), and folding a new value into the old one loses it."""
    from dataclasses import replace

    from memory.learn.judge import judge_pairs
    from memory.learn.pair_features import PairInput

    floor = float(settings.MEMORY_LEARNED_KEEP_APART)
    ruled = [e for e in existing if e.id in decisions and decisions[e.id].action == "duplicate"]
    if floor > 1.0 or not ruled:
        return decisions
    newer = inp.said or inp.content
    least, flag = replace_floors()
    for e, verdict in zip(ruled, judge_pairs([PairInput(e.content, newer, e.kind, inp.kind) for e in ruled])):
        if verdict.reason != "model":
            continue
        proba = {k: float(v) for k, v in verdict.proba.items()}
        if proba.get("coexist", 0.0) >= floor:
            decisions[e.id] = replace(decisions[e.id], action="coexist", score=proba["coexist"])
        elif proba.get("supersede", 0.0) > proba.get("duplicate", 0.0) and \
                proba.get("supersede", 0.0) >= flag and settings.MEMORY_LEARNED_REPLACE.get("enabled", True):
            # Decided here, whatever the stored cosine (the rules' reading of one subject is the closeness).
            p = proba["supersede"]
            decisions[e.id] = replace(decisions[e.id], action="supersede" if p >= least else "conflict", score=p,
                                      by_judge=p < least)
    return decisions


def _restatements(inp, existing: list, decisions: dict[int, object]) -> dict[int, object]:
    """A second opinion on what the subject rules leave standing side by side: the learned judge
    (memory/learn/judge.py, D25) tells a restatement in other words ("我不吃香菜" / "香菜我是一口都不碰的")
    from a statement about another person or thing at the same cosine, which the rules cannot. Only its
    duplicate verdict is taken (its replaces are not yet better than the rules'), never against the
    rules' reading of another thing, attribute or value, and never on a change."""
    from dataclasses import replace

    from memory.learn.judge import judge_pairs
    from memory.learn.pair_features import PairInput

    if inp.change or inp.replaces_only:
        return decisions
    # Either standing kind: the gate may read one wording a preference and another a fact ("我不吃香菜" /
    # "香菜我是一口都不碰的"); the judge reads the kinds among its features.
    open_pairs = [e for e in existing if e.id in decisions and decisions[e.id].action == "coexist"
                  and not _values_differ(e.content, inp.content)]
    if not open_pairs:
        return decisions
    # The judge's own guards run first (another identifier or speaker is never the same memory).
    verdicts = judge_pairs([PairInput(e.content, inp.content, e.kind, inp.kind) for e in open_pairs])
    for e, verdict in zip(open_pairs, verdicts):
        # The model's duplicate alone: P(duplicate + replaces) also held another attribute of one person
        # ("楼下的李大爷养了一只鹦鹉" / "楼下李大爷是退休的木匠": replaces 0.99, duplicate 0.01).
        same = float(verdict.proba.get("duplicate", 0.0))
        if verdict.reason == "model" and same >= settings.MEMORY_RESTATEMENT_MIN and \
                same > float(verdict.proba.get("supersede", 0.0)):
            decisions[e.id] = replace(decisions[e.id], action="duplicate", score=same)
    return decisions


def _values_differ(older: str, newer: str) -> bool:
    """Both state a value and none is shared: numbers that differ, or the parsed values unrelated
    (佳木斯 / 齐齐哈尔 score 0.9 as written; the embedding cannot tell them apart). Not a restatement then."""
    from memory.learn.pair_features import numbers
    from memory.subjects.match import pair_features
    from memory.subjects.parts import parse

    a, b = numbers(older), numbers(newer)
    if a and b and not (a & b):
        return True
    return pair_features(parse(older), parse(newer), masked=0.0, full=0.0).value_differs


def _learned_replaces(inp, existing: list, decisions: dict[int, object]) -> dict[int, object]:
    """A change the subject rules did not read as one: the old value only implied, in words no cue list
    holds ("膝盖不行了，现在早上改游泳了" after "我每天早上跑步五公里"). The learned judge (memory/learn/judge.py,
    D25) replaces where it is sure: P(replaces) at least MEMORY_LEARNED_REPLACE["min"], on a pair the rules
    left side by side or flagged, never against their reading of another thing or person, and one older
    memory per statement (the likeliest), since a change replaces one value. Below that, down to
    ["conflict"], a pair the rules left side by side becomes a possible conflict (both kept, reviewed)."""
    from dataclasses import replace

    from memory.subjects.current import may_say_change

    conf = settings.MEMORY_LEARNED_REPLACE
    if not conf.get("enabled", True) or any(d.action in ("supersede", "duplicate") for d in decisions.values()):
        return decisions  # off, or the rules found what the statement replaces or restates
    if ended_when_written(inp):
        return decisions
    if conf.get("needs_change_word", False) and not may_say_change(inp.content):
        return decisions
    picked = _likeliest_replaced(inp, [e for e in existing if e.id in decisions
                                       and decisions[e.id].action in ("coexist", "conflict")
                                       and not _another_thing(decisions[e.id])])
    if picked is None:
        return decisions
    p, e = picked
    least, flag = replace_floors()
    if p >= least:
        decisions[e.id] = replace(decisions[e.id], action="supersede", score=p)
    elif p >= flag:  # a pair the rules left side by side or flagged: the judge's reading marks it
        decisions[e.id] = replace(decisions[e.id], action="conflict", score=p, by_judge=True)
    return decisions


def _supersede_targets(inp, similar: list[tuple], sup_threshold: float, decisions: dict[int, object]) -> list:
    """What the rules replace: the memories an LLM named, a slot key's older values, the subject
    decisions' supersedes and a single-valued memory of the same linked entity."""
    if inp.kind == MemoryKind.EPISODE:
        return []
    targets = {m.id: m for m in Memory.objects.filter(id__in=inp.supersedes, org=inp.org, user_id=inp.user_id,
                                                      status=MemoryStatus.ACTIVE)} if inp.supersedes else {}
    slot_replaces = inp.slot_key and (inp.kind in SINGLE_VALUED_KINDS or inp.change)
    entity_ids = set(inp.entity_ids)
    for memory, sim in similar:
        decision = decisions.get(memory.id)
        if slot_replaces and memory.slot_key == inp.slot_key and memory.kind == inp.kind:
            targets[memory.id] = memory  # the slot key stays the strongest evidence
        elif decision is not None and decision.action == "supersede":
            targets[memory.id] = memory
        elif entity_ids and inp.kind in SINGLE_VALUED_KINDS and memory.kind == inp.kind and sim >= sup_threshold and \
                not other_attribute(decision) and \
                entity_ids & set(EntityLink.objects.filter(memory_id=memory.id).values_list("entity_id", flat=True)):
            targets[memory.id] = memory
    return list(targets.values())


def replaced_and_flagged(inp, similar: list[tuple], decisions: dict[int, object], sup_threshold: float, *, vector,
                         model_id: str) -> tuple[list, list[tuple], dict[str, float]]:
    """Every memory the new one replaces (the rules' targets the judge lets stand, the state an event
    changes, the plan a statement overtakes), the events' possible changes to flag, and, when it neither
    replaces nor flags anything, the judge's far readings (far_reads) of the same neighbours."""
    targets = judge_veto(inp, _supersede_targets(inp, similar, sup_threshold, decisions), decisions)
    near = similar
    if inp.kind == MemoryKind.EVENT:
        near = _states_near_event(inp, vector, model_id)
        replaced, flagged = event_replaces(inp, near)
    elif not targets:
        replaced, flagged = plan_replaces(inp, vector, model_id)
    else:
        replaced, flagged = [], []
    far = far_reads(inp, near, decisions) if not (targets or replaced or flagged) else {}
    return targets + replaced, flagged, far


def judge_veto(inp, targets: list, decisions: dict[int, object]) -> list:
    """The rules' replaces, read again by the learned judge: one it reads as two memories (P(replaces) under
    its flag floor, coexists over restates) is kept standing beside the new statement as a possible
    conflict instead (a restatement the rules fold into the newer stays folded). The rules read
    "Roosevelt Middle's tech is Jo" as replacing "Lincoln Elementary's on-site tech is Sam" (one head, a
    name for a name); the judge, trained on such look-alikes, reads 0.04. A correction said as one ("不对，
    是…", "I had that wrong"), an extractor's own list of what it replaces (an LLM's) and a slot key the
    API caller gave stand."""
    from dataclasses import replace

    from memory.learn.judge import judge_pairs
    from memory.learn.pair_features import PairInput
    from memory.subjects.match import Decision

    conf = settings.MEMORY_LEARNED_REPLACE
    if not targets or not conf.get("enabled", True) or not conf.get("veto", True) or inp.change == "correction" \
            or inp.kind not in SUBJECT_KINDS or (inp.supersedes and not inp.actor.startswith("rules")):
        return targets
    # A slot key the caller gave (the API, not the extractor) is the caller's own word that both are one
    # subject's values: those targets stand, only the service's own readings are read again.
    given = inp.slot_key if inp.created_by != "extractor" else None
    kept, read = [], []
    for m in targets:
        (kept if given and m.slot_key == given else read).append(m)
    if not read:
        return kept
    flag = replace_floors()[1]
    verdicts = judge_pairs([PairInput(m.content, inp.said or inp.content, m.kind, inp.kind) for m in read])
    for m, verdict in zip(read, verdicts):
        p = {k: float(v) for k, v in verdict.proba.items()}
        if verdict.reason == "model" and p.get("supersede", 0.0) < flag and p.get("coexist", 0.0) > p.get("duplicate", 0.0):
            old = decisions.get(m.id)
            decisions[m.id] = (replace(old, action="conflict", by_judge=False, vetoed=True) if old is not None
                               else Decision("conflict", p.get("supersede", 0.0), vetoed=True))
            continue
        kept.append(m)
    return kept


def _states_near_event(inp, vector, model_id: str) -> list[tuple]:
    """The user's facts near a user's event, by stored cosine: the states it may change ([] for anything
    else, with the judge off, or for an event that ended before it was written)."""
    from memory.services.dedup_window import similar_active

    conf = settings.MEMORY_LEARNED_REPLACE
    if not conf.get("enabled", True) or inp.kind != MemoryKind.EVENT or inp.scope != MemoryScope.USER \
            or ended_when_written(inp):
        return []
    return similar_active(inp.org, inp.user_id, inp.content, vector, model_id, kind=MemoryKind.FACT, scope=MemoryScope.USER,
                          conversation_id=inp.conversation_id, slot_key=None)


def event_replaces(inp, near: list[tuple]) -> tuple[list, list[tuple]]:
    """The standing memory a user's event changes, when the learned judge is sure of it: a change told as
    an event ("旧车出手了，提了台海豹", "We finally upgraded staging to 24.04 last week") replaces the state
    it changes, and the event, dated, is then what holds. Events never replace events (the judge's guard);
    the subject rules read statements, not events, so only the judge decides here. At most one.
    Returns (replaced, flagged): under event_min, down to the flag floor, the likeliest is flagged as a
    possible change instead ((memory, P) pairs for conflicts_record_judged): both stay standing, and recall
    presents the older as history when both answer a query."""
    from memory.subjects import Existing

    conf = settings.MEMORY_LEARNED_REPLACE
    if not near:
        return [], []
    # Read as what it is, an event: the judge has learned events that change a state (fact → event pairs
    # labelled replaces) and many that change nothing. Read as a fact (before session 25), an event about
    # the same thing read as its new value ("In March I was awarded Nurse of the Year for the cardiac
    # unit" replaced "I work as a nurse at St Vincent's…" at P 0.94; as an event, 0.76). An event's floor
    # is its own: most events change nothing, so it is held to a surer reading than a statement's.
    existing = [Existing(id=m.id, content=m.content, kind=m.kind, slot_key=m.slot_key, full=sim) for m, sim in near]
    picked = _likeliest_replaced(inp, existing)
    if picked is None:
        return [], []
    p, chosen = picked
    least, flag = replace_floors()
    if p >= max(least, float(conf.get("event_min", 0.0))):
        return [m for m, _ in near if m.id == chosen.id], []
    # Read as what it says (a fact), the event may still announce the change the event reading doubts
    # ("Sold my old daily wearer… picked up an Omega": 0.57 as an event, 0.97 as a statement): flagged,
    # never replaced, since the same reading also takes an award for a change of job.
    as_said = _likeliest_replaced(inp, existing, newer_kind=MemoryKind.FACT)
    if as_said is not None and as_said[0] >= least:
        p, chosen = as_said
    elif p < flag:
        return [], []
    return [], [(m, p) for m, _ in near if m.id == chosen.id]


def plan_replaces(inp, vector, model_id: str) -> tuple[list, list[tuple]]:
    """A plan the user told as an event still ahead ("My goal race is the Eugene Marathon on April 26",
    "下一部戏排《雷雨》") and a later statement that changes it ("Eugene got moved… it's May 3 now", "下一部改排
    《茶馆》了"): the statement replaces the plan when the learned judge is sure, or flags it from its band.
    The subject tier compares statements with statements; a plan is an event, so only the judge reads it.
    Returns (replaced, flagged) like event_replaces."""
    from memory.services.dedup_window import similar_active
    from memory.subjects import Existing

    conf = settings.MEMORY_LEARNED_REPLACE
    if not conf.get("enabled", True) or not conf.get("plans", True) or inp.kind not in SUBJECT_KINDS \
            or inp.scope != MemoryScope.USER or ended_when_written(inp):
        return [], []
    near = similar_active(inp.org, inp.user_id, inp.content, vector, model_id, kind=MemoryKind.EVENT, scope=MemoryScope.USER,
                          conversation_id=inp.conversation_id, slot_key=None)
    if not near:
        return [], []
    ahead = set(Memory.objects.filter(id__in=[m.id for m, _ in near], occurred_at__gt=inp.created_at or timezone.now())
                .values_list("id", flat=True))
    picked = _likeliest_replaced(inp, [Existing(id=m.id, content=m.content, kind=m.kind, slot_key=m.slot_key, full=sim)
                                       for m, sim in near if m.id in ahead])
    if picked is None:
        return [], []
    p, chosen = picked
    least, flag = replace_floors()
    target = [m for m, _ in near if m.id == chosen.id]
    return (target, []) if p >= least else ([], [(m, p) for m in target] if p >= flag else [])


def ended_when_written(inp) -> bool:
    """A memory whose validity ended before it became known ("drank instant coffee during the old
    contract", written with a past valid_to) tells what held then: it replaces nothing that holds now."""
    return inp.valid_to is not None and inp.valid_to <= (inp.created_at or timezone.now())


def replace_floors() -> tuple[float, float]:
    """(replaces from, possible conflict from) in P(replaces): MEMORY_LEARNED_REPLACE's "min" and
    "conflict"; null means the judge's trained band (chosen out of fold by writer when it was trained, so
    a retrained model brings its own)."""
    from memory.learn.judge_model import load_model

    conf = settings.MEMORY_LEARNED_REPLACE
    band = float(load_model().bands["supersede"])
    least = band if conf.get("min") is None else float(conf["min"])
    flag = band if conf.get("conflict") is None else float(conf["conflict"])
    return least, min(least, flag)


def _likeliest_replaced(inp, existing: list, newer_kind: str | None = None) -> tuple[float, object] | None:
    """(P(replaces), memory) of the likeliest among the closest MEMORY_LEARNED_REPLACE["judged"] by stored
    cosine (each is encoded and judged: bounded work per write), or None."""
    from memory.learn.judge import judge_pairs
    from memory.learn.pair_features import PairInput

    conf = settings.MEMORY_LEARNED_REPLACE
    if not existing:
        return None
    floor = float(conf.get("min_cosine", 0.0))
    closest = sorted((e for e in existing if e.full >= floor), key=lambda e: -e.full)[: int(conf.get("judged", 8))]
    newer = inp.said or inp.content  # the user's words: the judge learned from them, not from rewritten dates
    verdicts = judge_pairs([PairInput(e.content, newer, e.kind, newer_kind or inp.kind) for e in closest])
    scored = [(float(v.proba.get("supersede", 0.0)), e) for e, v in zip(closest, verdicts) if v.reason == "model"]
    return max(scored, key=lambda pair: pair[0]) if scored else None


def far_reads(inp, near: list[tuple], decisions: dict[int, object]) -> dict[str, float]:
    """The learned judge's reading of standing memories worded too far from the new statement for the write
    path to act on (stored cosine under MEMORY_LEARNED_REPLACE["min_cosine"], down to ["far_cosine"]): the
    closest ["far"] of `near` (the statement's similar memories, an event's nearby facts), kept when
    P(replaces) reaches ["far_min"]. Nothing is replaced or flagged: among a user's many memories the
    likeliest far pair is too often another subject (D33). Recall reads them when the query puts both among
    its first answers (RECALL_HISTORY["anchor"]), where the query says they are about one subject: "We
    record all remote interviews on Zencastr" / "We're on Riverside now for remote guests" (cosine 0.22,
    P 0.77). Only for a statement that says a change (a cue word), so a plain statement costs nothing more."""
    from memory.subjects.current import may_say_change

    conf = settings.MEMORY_LEARNED_REPLACE
    n = int(conf.get("far", 0))
    if n <= 0 or not conf.get("enabled", True) or inp.scope != MemoryScope.USER or ended_when_written(inp) or \
            inp.kind not in SUBJECT_KINDS | {MemoryKind.EVENT} or not may_say_change(inp.said or inp.content):
        return {}
    lo, hi = float(conf.get("far_cosine", 0.0)), float(conf.get("min_cosine", 0.0))
    far = [m for m, sim in near if m.kind in SUBJECT_KINDS and lo <= sim < hi and not _another_thing(decisions.get(m.id))
           and getattr(decisions.get(m.id), "action", "coexist") == "coexist"][:n]
    if not far:
        return {}
    from memory.learn.judge import judge_pairs
    from memory.learn.pair_features import PairInput

    newer = inp.said or inp.content
    verdicts = judge_pairs([PairInput(m.content, newer, m.kind, inp.kind) for m in far])
    least = float(conf.get("far_min", 1.0))
    return {str(m.id): round(p, 3) for m, v in zip(far, verdicts)
            if v.reason == "model" and (p := float(v.proba.get("supersede", 0.0))) >= least}


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


def conflicts_record_judged(memory: Memory, flagged: list[tuple]) -> list[int]:
    """Possible changes the learned judge flagged outside the subject tier (a user's event and the state
    it may change): queued like any possible conflict, marked as the judge's (recall reads them as a change)."""
    from memory.services.conflicts import conflict_record

    out = []
    for old, p in flagged:
        older = old if isinstance(old, Memory) else Memory.objects.get(id=old.id)
        conflict_record(older=older, newer=memory, score=p, signals={"judge": round(float(p), 3)})
        out.append(old.id)
    return out


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
        if getattr(decision, "by_judge", False):
            signals["judge"] = round(float(decision.score), 3)  # P(replaces): recall reads it as a likely change
        if getattr(decision, "vetoed", False):
            signals["veto"] = True  # the judge read two memories: reviewed, but recall reads no change into it
        older = old if isinstance(old, Memory) else Memory.objects.get(id=old.id)  # the window holds light rows
        conflict_record(older=older, newer=memory, score=decision.score, signals=signals)
        out.append(old.id)
    return out
