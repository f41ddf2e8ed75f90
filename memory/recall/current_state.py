"""Current and history, per query (DESIGN §6): among the items that answer a query, an older standing
memory that a newer item on the same subject replaces is presented as history.

Runs on the top of the ranked list (RECALL_HISTORY["window"] x k items, at most
RECALL_HISTORY["max_items"]), after dedup and before the cut to k. The rule is
memory/subjects/current.py; here are the items it reads: kinds, scopes and times from the snapshot,
texts from the rows recall serves, the cosine of two items from their stored vectors (no encode),
and for an episode what its message became (an episode whose memory was superseded, task-scoped or
forgotten is no current item; one whose live memory is the older itself restates it).

A history item says so (`presented_as = "history"`, `current_by` the id of the best-ranked item that
makes it history, `history` why with explain) and, when that item is served too, moves just below it.
The k items served are the k best ranked, as without this step.
"""
from __future__ import annotations

import numpy as np
from django.conf import settings

from memory.choices import FAR_READS, SUBJECT_KINDS, MemoryAssertion, MemoryKind
from memory.recall.lineage import Lineage
from memory.subjects.current import Said, anchored_change, can_replace, may_say_change, newer_is_current
from memory.thresholds import thresholds_for
from memory.vectors import similarity

__all__ = ["history_apply", "history_window"]


def history_window(k: int) -> int:
    """How many ranked items the rule looks at for a recall of k (k when it is off)."""
    conf = settings.RECALL_HISTORY
    if not conf.get("enabled", True):
        return k
    return max(k, min(k * int(conf.get("window", 3)), int(conf.get("max_items", 30))))


def _said(item, lineage: dict[int, Lineage]) -> Said | None:
    memory = item.memory
    if memory.kind == MemoryKind.EPISODE:
        line = lineage.get(memory.id)
        if line is not None and line.state in ("stale", "task", "forgotten"):
            return None  # what the message said was replaced, is one conversation's, or is gone
    # A user's event (confirmed_event) is the user's own word as much as a statement; a model's
    # suggestion is not.
    user_stated = memory.assertion != MemoryAssertion.MODEL_SUGGESTION
    return Said(content=memory.content, kind=memory.kind, scope=memory.scope, user_stated=user_stated)


def _judge_disagrees(older: Said, newer: Said) -> bool:
    """The rule's history, read again by the learned judge: a change word of another subject ("所以我现在
    改成每周日早上去练了" beside "上周末刚换了一对30磅的弓片") is no change of this one. Read only for the few
    pairs the rule marks (a cold pair costs two encodes, about 25 ms); below RECALL_HISTORY["judge_min"]
    P(replaces) the older stays current."""
    floor = float(settings.RECALL_HISTORY.get("judge_min", 0.0))
    if floor <= 0.0 or newer.kind not in _JUDGED_KINDS:
        return False
    from memory.learn.judge import judge_pairs
    from memory.learn.pair_features import PairInput

    kind = "fact" if newer.kind == MemoryKind.EPISODE else newer.kind  # a user turn is read as what it says
    [verdict] = judge_pairs([PairInput(older.content, newer.content, older.kind, kind)])
    return verdict.reason == "model" and verdict.score < floor


_JUDGED_KINDS = frozenset({MemoryKind.PREFERENCE, MemoryKind.FACT, MemoryKind.EVENT, MemoryKind.EPISODE})


def _far_reads(memory) -> dict:
    """The write path's sure readings that `memory` replaces older memories worded far from it ({older id:
    P(replaces)}), while `memory` is as it was written (an edit makes them stale)."""
    reads = (memory.metadata or {}).get(FAR_READS) if memory.version == 1 else None
    return reads if isinstance(reads, dict) else {}


def _vector(kept: dict, memory_id: int):
    candidate = kept.get(memory_id)
    return None if candidate is None else candidate.vector


def history_apply(items: list, kept: dict, lineage: dict[int, Lineage], embedder, *, k: int, explain: bool,
                  stages: list | None = None, flagged: set[tuple[int, int]] = frozenset(),
                  judged: set[tuple[int, int]] = frozenset()) -> list:
    """Mark and move the history items of `items` (ranked, best first); returns the new order.
    `flagged`: (older, newer) pairs of open possible conflicts (the write path's judge found them alike);
    `judged`: those the learned judge flagged (a likely change: no change word is asked of the newer)."""
    conf = settings.RECALL_HISTORY
    if not conf.get("enabled", True) or len(items) < 2:
        return items[:k]
    limits = thresholds_for(embedder.model_id)
    floor = min(float(conf["alike"]), float(conf["close"]))
    said = {item.memory.id: _said(item, lineage) for item in items}
    found: dict[int, tuple[int, object]] = {}  # older id -> (newer id, verdict)
    olders = [item.memory for item in items if said[item.memory.id] is not None
              and item.memory.kind in SUBJECT_KINDS and _vector(kept, item.memory.id) is not None]
    if not olders:
        return items[:k]
    stored = np.vstack([kept[o.id].vector for o in olders])
    judged_newer = {newer for _, newer in judged}
    # Both among the first `anchor` answers to the query: the query says they are about one subject,
    # however far apart their wordings ("We record all remote interviews on Zencastr" / "We're on
    # Riverside now for remote guests": cosine 0.22). The write path's judge read such pairs and kept its
    # sure readings on the newer (subject_tier.far_reads): read here, no text is encoded per query.
    anchor = int(conf.get("anchor", 0))
    top_ids = {item.memory.id for item in items[:anchor]}
    budget = int(conf.get("max_pairs", 4))  # pairs whose texts are parsed (about a millisecond a new text)
    for newer in items:  # best-ranked first: the first that replaces an older is the one it is shown below
        if budget <= 0:
            break
        n, b, c = newer.memory, said[newer.memory.id], kept.get(newer.memory.id)
        if b is None or c is None or c.vector is None or not n.created_at or \
                not (n.id in judged_newer or may_say_change(n.content) or _far_reads(n)):
            continue  # the rule needs a change said (or the judge's flag): most items are passed over before any parse
        # One product per newer for every older (the cosine the read path uses: the multilingual half
        # alone where Chinese is involved, both halves mixed otherwise).
        cosines = {True: None, False: None}
        for i, o in enumerate(olders):
            if o.id in found or o.id == n.id or not (o.created_at and n.created_at > o.created_at):
                continue
            a = said[o.id]
            if not can_replace(a, b):
                continue
            line = lineage.get(n.id)
            if line is not None and line.state == "live" and o.id in line.refs:
                continue  # the user said the older again: a restatement, not a change
            cjk = c.cjk or kept[o.id].cjk
            if cosines[cjk] is None:
                cosines[cjk] = similarity(embedder, c.vector, stored, cjk=cjk)
            cosine = float(cosines[cjk][i])
            conflict = (o.id, n.id) in flagged
            far_p = _far_reads(n).get(str(o.id)) if not conflict and o.id in top_ids and n.id in top_ids else None
            anchored = isinstance(far_p, (int, float))
            if cosine < floor and not conflict and not anchored:
                continue  # cheap before the texts are parsed: no threshold can be met
            if budget <= 0:
                break  # the best-ranked newer items were looked at; the rest stay current
            budget -= 1
            verdict = None
            if cosine >= floor or conflict:
                verdict = newer_is_current(a, b, cosine=cosine, limits=limits, subject=float(conf["subject"]),
                                           alike=float(conf["alike"]), close=float(conf["close"]), conflict=conflict,
                                           judged=(o.id, n.id) in judged)
                if verdict.history and (o.id, n.id) not in judged and _judge_disagrees(a, b):
                    continue
            if (verdict is None or not verdict.history) and anchored:
                verdict = anchored_change(a, b, float(far_p), cosine=cosine)
            if verdict.history:
                found[o.id] = (n.id, verdict)
    if not found:
        return items[:k]
    for item in items:
        if item.memory.id in found:
            newer_id, verdict = found[item.memory.id]
            item.presented_as, item.current_by = "history", newer_id
            if explain:
                item.parts["history"] = {"current": newer_id, **verdict.as_dict()}
    if explain and stages is not None:
        stages.append({"stage": "current_state",
                       "history": {o: {"current": n, **v.as_dict()} for o, (n, v) in found.items()}})
    # The k items served are the k best ranked, as without this step: a question about what held then
    # (LoCoMo's temporal questions) keeps its evidence. Among them a history item moves below its
    # current item; one whose current item ranked past k stays marked (explain names that item).
    top = items[:k]
    served = {item.memory.id for item in top}
    # A pair among the first `anchor` answers moves: the first answer is then the current one, and the move
    # stays inside the first few, so no item leaves them (R@k from `anchor` on is the ranking's). Farther
    # apart, only when `reorder` is on.
    moving = {o: pair for o, pair in found.items() if pair[0] in served
              and ((o in top_ids and pair[0] in top_ids) or conf.get("reorder", False))}
    return _below_current(top, moving) if moving else top


def _below_current(items: list, found: dict[int, tuple[int, object]]) -> list:
    """Each history item just below the item that made it history, when it ranked above it. Applied
    from the lowest-ranked history item up, so a chain (A replaced by B, B by C) ends C, B, A."""
    order = [item.memory.id for item in items]
    for older_id in reversed([i for i in order if i in found]):
        newer_id = found[older_id][0]
        if order.index(older_id) < order.index(newer_id):
            order.remove(older_id)
            order.insert(order.index(newer_id) + 1, older_id)
    by_id = {item.memory.id: item for item in items}
    return [by_id[i] for i in order]
