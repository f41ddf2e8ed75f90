"""Resolve which business entity a message is about (DESIGN §8).

Rules, in order; the first that yields a visible candidate decides:
  (a) explicit external id in the text
  (b) exact name / alias
  (c) coreference ("它", "这台", "it") -> the latest entity of the current conversation's window
  (d) long-term cue ("上次", "那台", "last time") -> the latest entity from past conversations
  (e) a type or category word alone ("那台收割机", "the tractor") -> every entity of that kind
  (f) a partial name ("那座烘干塔" for 烘干一号塔 / 烘干二号塔; entities/partial.py) -> every entity it
      partially names; it also restricts (c) and (d), so "上次那辆冷链车" is the latest of the 冷链车
Generic nouns ("车", "设备", "店") stand for the registry's types of their kind (entities/typenouns.py); a
demonstrative with a description the registry does not know answers none (entities/nearmiss.py); a turn
naming several entities is read by the pointer's kind (entities/windows.py).
One candidate -> "resolved"; several -> "ambiguous" with them; none -> "none". With
`max_candidates`, an ambiguous answer lists the first `max_candidates` (in the rule's order) and
says `truncated`; the status is the same as without the cap.

Access: every candidate passes `allowed` before any decision, so an entity the user may not
read behaves exactly as an unregistered one and never appears in the evidence. Access is asked
only as far as the answer needs: mentions newest turn first, and a type word's entities (there
can be thousands) in id order until the cap is filled.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from entities.matcher import EntityMatcher, EntityRef, Match, name_contains_any, normalize_key
from entities.modifiers import foreign_modifiers, unsupported
from entities.narrowing import by_attributes_and_parts, follow_relations, related_to, via_anchor
from entities.nearmiss import unknown_description
from entities.partial import skeleton
from entities.qualifiers import by_related_words
from entities.typewords import DEMONSTRATIVES, Cue, category_words, known_word, lexicon_word, text_cues
from entities.windows import Gate, MentionEvidence, latest_turn, mention_step, turn_focus

__all__ = ["MentionEvidence", "Resolution", "resolve"]

MAX_ANCHORS = 20  # entities a relation path starts from at most


@dataclass
class Resolution:
    status: str  # "resolved" | "ambiguous" | "none"
    entity_id: int | None = None  # when resolved
    candidates: list[int] = field(default_factory=list)  # when ambiguous: all of them, or the first max_candidates
    evidence: list[dict] = field(default_factory=list)  # ordered steps used
    truncated: bool = False  # ambiguous, and more visible candidates exist than `candidates` holds


Mentions = Sequence[MentionEvidence] | Callable[[], Sequence[MentionEvidence]]


def resolve(
    text: str,
    *,
    matcher: EntityMatcher,
    entities: Mapping[int, EntityRef],
    recent: Mentions = (),
    past: Mentions = (),
    allowed: Callable[[int], bool] = lambda _id: True,
    allowed_many: Callable[[Collection[int]], Collection[int]] | None = None,
    max_candidates: int | None = None,
) -> Resolution:
    """Resolve the entity `text` refers to.

    `recent`: mentions in the current conversation's recent window; `past`: mentions across the
    user's conversations (both any order; the latest `at` wins). Either may be a callable
    returning them, called only when the text has the matching cue and no earlier rule decided.
    `allowed_many`, when given, is used instead of `allowed` to check a batch of ids in one call
    (e.g. one HTTP request). `max_candidates` (>= 2, None = no cap) caps an ambiguous answer.
    """
    if max_candidates is not None and max_candidates < 2:
        raise ValueError("max_candidates must be at least 2: one candidate is not an ambiguity")
    gate = Gate(entities, allowed, allowed_many)
    cues = text_cues(text, matcher)
    resolution = _resolve(text, matcher=matcher, entities=entities, recent=recent, past=past, gate=gate,
                          max_candidates=max_candidates, cues=cues)
    if resolution.status != "none" and not resolution.truncated and hasattr(matcher, "part_holders") \
            and not any(step.get("rule") in _NAMED_RULES for step in resolution.evidence):
        # "防爆电动叉车", "四楼的制氧机", "the Guangzhou printer": the words modifying the head the candidates were
        # found by must be theirs (or their neighbours'); a word none of them carries names something else.
        checked = unsupported(text, _heads(text, cues, resolution.evidence), resolution.candidates
                              or [resolution.entity_id], matcher=matcher, skip=lexicon_word)
        if checked is not None:
            kept, words = checked
            resolution = _decide(kept, resolution.evidence + [{"rule": "modifiers", "words": words, "entity_ids": kept}],
                                 max_candidates)
    # Look-alikes that a word of the text tells apart through their relations ("201的液相色谱仪": the one in the
    # lab "201" names; entities/qualifiers.py).
    if resolution.status == "ambiguous" and not resolution.truncated and hasattr(matcher, "part_hits") \
            and (narrowed := by_related_words(text, resolution.candidates, matcher=matcher,
                                              visible=gate.visible_list)) is not None:
        kept, words = narrowed
        return _decide(kept, resolution.evidence + [{"rule": "related_words", "words": words, "entity_ids": kept}],
                       max_candidates)
    # "卡罗拉的雨刮": the car named 白色卡罗拉, not the policy 卡罗拉车险 whose name uses the word as a modifier.
    if resolution.status == "ambiguous" and not resolution.truncated \
            and len({entities[i].type for i in resolution.candidates if i in entities}) > 1 \
            and (headed := _headed_by(resolution.candidates, resolution.evidence, entities)):
        return _decide(headed, resolution.evidence + [{"rule": "name_head", "entity_ids": headed}], max_candidates)
    # "她的护理床": a possessive pronoun's entity (the latest discussed) owns one of the look-alikes the text names.
    possessive = next((c for c in cues if c.kind == "coref" and c.word in _POSSESSIVES), None)
    if resolution.status == "ambiguous" and not resolution.truncated and possessive is not None \
            and hasattr(matcher, "neighbours"):
        owners, latest = latest_turn(recent() if callable(recent) else recent, gate,
                                     lambda eid: eid in entities and eid not in resolution.candidates)
        owned = [i for i in resolution.candidates if owners and related_to(i, set(owners), matcher, gate.visible_list)]
        if owned and len(owned) < len(resolution.candidates) and latest is not None:
            return _decide(owned, resolution.evidence + [mention_step("coreference", possessive, owners, latest),
                                                         {"rule": "owned_by", "entity_ids": owned}], max_candidates)
    return resolution


def _resolve(text: str, *, matcher: EntityMatcher, entities: Mapping[int, EntityRef], recent: Mentions,
             past: Mentions, gate: Gate, max_candidates: int | None, cues: list[Cue]) -> Resolution:
    matches = matcher.find(text, keep=gate.visible)
    # "便携心电图机", "滨江史密斯架": a glued modifier the named entity does not carry means another entity, one that
    # carries the modifier and the name's parts, or something unregistered (entities/modifiers.py).
    displaced, qualifiers = foreign_modifiers(text, matches, matcher=matcher, skip=lexicon_word) \
        if matches and hasattr(matcher, "part_holders") else ([], [])
    if displaced or qualifiers:
        dropped = {id(m) for d in displaced for m in d.matches} | {id(q) for q in qualifiers}
        matches = [m for m in matches if id(m) not in dropped]
    if displaced:
        if not any(m.how in ("id", "name", "alias") for m in matches):
            others = [i for i in gate.visible_list(sorted({i for d in displaced for i in d.others})) if i in entities]
            step = {"rule": "foreign_modifier", "words": [d.modifier.word for d in displaced],
                    "surfaces": [d.matches[0].surface for d in displaced], "entity_ids": others}
            return _narrowed_decision(others, [step], cues, (("coreference", "coref", recent),
                                                             ("long_term", "long_term", past)), gate, max_candidates)
    # A type word inside a matched surface is part of a name ("S780 联合收割机" is a model, its
    # "收割机" says nothing about the type the user means).
    # A lexicon word for a type this registry does not have ("车" → asset, where vehicles are "vehicle")
    # says nothing about this business's entities: it neither constrains nor stands for a type.
    registered = matcher.types() if hasattr(matcher, "types") else None
    type_cues = [c for c in cues if c.kind == "type" and not _covered(c, matches)
                 and (registered is None or c.type in registered)]
    constraint = _Constraint.from_cues(type_cues)

    def accepts_type(eid: int) -> bool:
        return eid in entities and constraint.type_ok(entities[eid])

    windows = (("coreference", "coref", recent), ("long_term", "long_term", past))

    # (a), (b): explicit surfaces. Only the type constrains them; a category word is not asked
    # to appear in an explicitly named entity's name ("M954-07这台拖拉机").
    # An entity named explicitly but of another type than the type words ask for is an anchor: "1号青贮收获机
    # 的工单" follows its relations to work orders.
    for rule, hows in (("explicit_id", {"id"}), ("name_alias", {"name", "alias"})):
        steps, ids = _explicit(matches, hows, lambda eid: constraint.type_ok(entities[eid]))
        if ids:
            evidence = _type_evidence(type_cues, constraint) + [{"rule": rule, **step} for step in steps]
            anchor_types = {entities[i].type for i in ids}
            spans = [(m.start, m.end) for m in matches if m.entity_id in ids]
            qualified = via_anchor(text, spans=spans, anchors=ids, matcher=matcher, visible=gate.visible_list,
                                   type_of=lambda i: entities[i].type if i in entities else "",
                                   other_types={c.type for c in type_cues if c.type and c.type not in anchor_types})
            if qualified is not None and not qualified.ids:  # it names only what the user may not read
                return _decide([], evidence + [qualified.step], max_candidates)
            if qualified is not None and qualified.ids:
                return _narrowed_decision(qualified.ids, evidence + [qualified.step], cues, windows, gate, max_candidates)
            # "厨房那台": a name right before a pointer whose classifier asks for another kind (a machine, not a
            # room) qualifies what the pointer points at: the anchor's neighbours of that kind.
            pointed = _pointed_neighbours(text, matches, ids, cues, matcher, entities, gate)
            if pointed is not None:
                return _narrowed_decision(pointed.ids, evidence + [pointed.step], cues, windows, gate, max_candidates)
            # "那位王奶奶": a pointer before a person's alias that is also how other people are said (a surname with a
            # title) points among all of them; bare, the registered alias wins.
            shared = _pointed_forms(matches, ids, cues, matcher, entities, gate)
            if shared:
                return _narrowed_decision(shared, evidence + [{"rule": "person_forms", "entity_ids": shared}], cues,
                                          windows, gate, max_candidates)
            return _decide(ids, evidence, max_candidates)
        if constraint.types:
            anchor_steps, anchors = _explicit(matches, hows, lambda eid: True)
            # What the rest of the text names among the anchors' neighbours first ("影像室那台口腔设备"), then
            # every neighbour of the kind asked for ("西站停保场的车").
            followed = anchors and (
                via_anchor(text, spans=[(m.start, m.end) for m in matches if m.entity_id in anchors], anchors=anchors,
                           matcher=matcher, visible=gate.visible_list, other_types=set(constraint.types),
                           type_of=lambda i: entities[i].type if i in entities else "")
                or follow_relations(anchors, matcher=matcher, accepts=accepts_type, visible=gate.visible_list))
            if followed:
                # Several neighbours of the kind asked for: "那台" is the one of them just discussed.
                return _narrowed_decision(followed.ids, _type_evidence(type_cues, constraint)
                                          + [{"rule": rule, **step} for step in anchor_steps] + [followed.step],
                                          cues, windows, gate, max_candidates)

    # Partial names: "冷链车" for 冷链11号车 / 冷链12号车 (entities/partial.py), looked up only now that
    # no explicit surface decided. Their spans count as names: the "车" of "冷链车" is not the type
    # word "车" (assets) when what it partially names are vehicles.
    partial_ids, partial_spans = matcher.partial(text) if hasattr(matcher, "partial") else ([], [])
    partial_ids = [i for i in partial_ids if i in entities]  # visibility asked only as far as needed
    if partial_ids and len(partial_ids) <= MAX_ANCHORS and hasattr(matcher, "value_holders"):
        # A skeleton that is also a word of other entities' attribute values names them too: "the reefer" is
        # "reefer 118" and every container whose type is "40ft reefer".
        kinds = {entities[i].type for i in partial_ids}
        more = {i for s, e in partial_spans for i in matcher.value_holders(text[s:e])
                if i in entities and entities[i].type in kinds}
        partial_ids = sorted(set(partial_ids) | more)
    # A skeleton every entity of a type shares ("工单" of 工单0305 / 工单0311) is that type's label, not a name.
    labels = [(start, end) for _w, _t, start, end in matcher.registry_type_cues(text)] \
        if partial_ids and hasattr(matcher, "registry_type_cues") else []
    if labels and all(any(a <= s and e <= b for a, b in labels) for s, e in partial_spans):
        partial_ids, partial_spans = [], []
    partial_set = set(partial_ids)
    if partial_ids:
        partial_types = {entities[i].type for i in partial_ids}
        kept = [c for c in type_cues
                if c.type in partial_types or not any(s <= c.start and c.end <= e for s, e in partial_spans)]
        if len(kept) != len(type_cues):
            type_cues, constraint = kept, _Constraint.from_cues(kept)
    evidence = _type_evidence(type_cues, constraint)

    pointed = any(c.kind in ("coref", "long_term") for c in cues) or bool(type_cues)
    part_ids, found_parts = ([], []) if partial_ids or not hasattr(matcher, "name_part_candidates") else \
        matcher.name_part_candidates(text)
    part_ids = [i for i in part_ids if i in entities]
    # What the text names by a part, when the type words ask for another type: the anchor of a relation
    # path ("那台青贮收获机的工单", "那台喷雾机的工单"). A skeleton may name thousands ("收割机"): not an anchor.
    named_other = [i for i in (partial_ids if len(partial_ids) <= MAX_ANCHORS else []) or part_ids
                   if constraint.types and not constraint.type_ok(entities[i])]

    def narrow(require_values: bool) -> Resolution | None:
        narrowed = by_attributes_and_parts(text, matcher=matcher, visible=gate.visible_list, visible_prefix=gate.visible_prefix,
                                           limit=max_candidates, pointed=pointed, skeleton_ids=partial_ids,
                                           require_values=require_values)
        if narrowed is None:
            return None
        if not narrowed.ids:  # the named values and parts contradict each other: nothing is named
            return _decide([], evidence + [narrowed.step], max_candidates)
        typed = [i for i in narrowed.ids if constraint.accepts(entities[i])] or \
            [i for i in narrowed.ids if constraint.type_ok(entities[i])]
        if typed:
            return _narrowed_decision(typed, evidence + [narrowed.step], cues, windows, gate, max_candidates)
        followed = follow_relations(narrowed.ids, matcher=matcher, accepts=accepts_type, visible=gate.visible_list)
        return None if followed is None else _narrowed_decision(followed.ids, evidence + [narrowed.step, followed.step],
                                                                cues, windows, gate, max_candidates)

    # Attribute values (entities/narrowing.py), narrowed by name parts: "北场那台 SK-16", "the VMS-V300".
    if (resolution := narrow(require_values=True)) is not None:
        return resolution

    # A demonstrative pointing with a description the registry does not know ("那辆双层观光巴士") means something
    # unregistered: none, not the entity just discussed (entities/nearmiss.py).
    pointer = next((c for c in cues if c.kind == "long_term" and c.word in DEMONSTRATIVES and c.word != "那边"), None)
    if pointer is not None and hasattr(matcher, "knows") and \
            (unknown := unknown_description(text, pointer.end, lambda word: known_word(matcher, word)
                                            or normalize_key(word) in {c.word for c in cues if c.kind == "type"})):
        return Resolution(status="none", evidence=evidence + [{"rule": "unknown_description", "words": unknown}])

    # (c), (d): the latest mention of a matching entity; several in that same turn -> ambiguous. With a type
    # word and no mention of that type, the latest entity discussed (of those the text names, if it names
    # some) is an anchor whose relations are followed ("它的工单").
    for rule, kind, mentions in windows:
        cue = next((c for c in cues if c.kind == kind), None)
        if cue is None:
            continue
        mentions = mentions() if callable(mentions) else mentions
        # What the text names by parts restricts the window too: "浦东滨江那家店" is not the store just discussed.
        named_set = partial_set or (set(part_ids) if any(matcher.is_name_part(p) for p in found_parts) else set())
        ids, latest = latest_turn(
            mentions,
            gate,
            lambda eid: eid in entities and constraint.accepts(entities[eid]) and (not named_set or eid in named_set),
            batch=max_candidates + 1 if max_candidates else None,
        )
        if ids and latest is not None:
            ids = turn_focus(ids, matcher, cue.word, lambda i: entities[i].type if i in entities else "")
            return _decide(ids, evidence + [mention_step(rule, cue, ids, latest)], max_candidates)
        if constraint.types:
            # The anchor is what the text names of another kind, or else what was just discussed, unless the text
            # names by parts only things of the kind asked for ("浦东滨江那家店" is a store, not the store of the
            # treadmill just discussed).
            named_kind = bool(part_ids) and not named_other and any(matcher.is_name_part(p) for p in found_parts)
            anchors, latest = latest_turn(mentions, gate, lambda eid: eid in entities and not constraint.type_ok(entities[eid])
                                           and (not named_other or eid in named_other) and not named_kind)
            followed = anchors and follow_relations(anchors, matcher=matcher, accepts=accepts_type, visible=gate.visible_list)
            if followed:
                return _decide(followed.ids, evidence + [mention_step(rule, cue, anchors, latest), followed.step],
                               max_candidates)

    if named_other:
        followed = follow_relations(gate.visible_list(named_other), matcher=matcher, accepts=accepts_type,
                                    visible=gate.visible_list)
        if followed is not None:
            return _narrowed_decision(followed.ids, evidence + [followed.step], cues, windows, gate, max_candidates)

    # (e): type / category word standing alone. Words attached to a number or code ("3号拖拉机",
    # "工单0012") name a specific entity that is not visible: answering with another entity of
    # the same kind would be a silent wrong guess.
    standalone = _Constraint.from_cues([c for c in type_cues if not c.qualified])
    # ... unless parts of names of that type are named too: "西站柴油车" is the 西站柴油通勤车, not any vehicle.
    if standalone.types and any(standalone.type_ok(entities[i]) for i in part_ids) \
            and (resolution := narrow(require_values=False)) is not None:
        return resolution
    if standalone.types:
        # Lazily, in id order: "那台收割机" can name thousands; only the first max_candidates + 1
        # visible ones (the extra one tells "truncated") are ever checked or materialised.
        ids = gate.visible_prefix(
            # iter_ids() already applied the name filter; the type check keeps `entities` the
            # authority should the matcher be older than the mapping.
            (
                eid
                for eid in standalone.iter_ids(matcher)
                if eid in entities and standalone.type_ok(entities[eid])
            ),
            None if max_candidates is None else max_candidates + 1,
        )
        step = {"rule": "type_only", "types": sorted(standalone.types), "entity_ids": ids}
        resolution = _decide(ids, evidence + [step], max_candidates)
        if resolution.truncated:
            step["entity_ids"] = resolution.candidates
            step["truncated"] = True
        return resolution

    # (f): a partial name and no cue or type word that decided: every entity it partially names.
    named = gate.visible_prefix((eid for eid in partial_ids if constraint.type_ok(entities[eid])),
                                None if max_candidates is None else max_candidates + 1)
    if named:
        step = {"rule": "partial_name", "surfaces": [text[s:e] for s, e in partial_spans], "entity_ids": named}
        resolution = _decide(named, evidence + [step], max_candidates)
        if resolution.truncated:
            step["entity_ids"], step["truncated"] = resolution.candidates, True
        return resolution

    # (g): parts of names no earlier rule read ("那台喷雾机" for 3号喷杆喷雾机, "5号拖拉机" for 5号轮式拖拉机).
    if part_ids and (resolution := narrow(require_values=False)) is not None:
        return resolution
    return Resolution(status="none", evidence=evidence)


_POSSESSIVES = frozenset({"它的", "她的", "他的", "its", "her"})

# Steps that read a registered name or id whole (its own words are its own), or a pointer into the window.
_NAMED_RULES = frozenset({"explicit_id", "name_alias", "foreign_modifier", "coreference", "long_term"})


def _pointed_forms(matches: Sequence[Match], ids: list[int], cues: list[Cue], matcher,
                   entities: Mapping[int, EntityRef], gate: Gate) -> list[int]:
    from entities.typenouns import kinds_of_type

    if len(ids) != 1 or not hasattr(matcher, "part_holders"):
        return []
    for m in matches:
        if m.entity_id != ids[0] or m.how != "alias" or "person" not in kinds_of_type(entities[m.entity_id].type):
            continue
        if not any(c.kind in ("long_term", "coref") and c.end == m.start for c in cues):
            continue
        holders = [i for i in sorted(matcher.part_holders(m.surface, 20)) if i in entities
                   and entities[i].type == entities[m.entity_id].type]
        shared = gate.visible_list(holders)
        if len(shared) > 1:
            return shared
    return []


def _pointed_neighbours(text: str, matches: Sequence[Match], ids: list[int], cues: list[Cue], matcher,
                        entities: Mapping[int, EntityRef], gate: Gate):
    from entities.typenouns import kinds_of_type
    from entities.windows import classifier_kinds

    for m in matches:
        if m.entity_id not in ids:
            continue
        cue = next((c for c in cues if c.kind == "long_term" and c.start == m.end and c.word in DEMONSTRATIVES), None)
        asked = classifier_kinds(cue.word) if cue is not None else None
        if not asked or kinds_of_type(entities[m.entity_id].type) & asked:
            continue
        followed = follow_relations([m.entity_id], matcher=matcher, visible=gate.visible_list,
                                    accepts=lambda i: i in entities and bool(kinds_of_type(entities[i].type) & asked))
        if followed is not None:
            return followed
    return None


def _headed_by(candidates: list[int], evidence: list[dict], entities: Mapping[int, EntityRef]) -> list[int]:
    """The candidates whose name or alias ends with the longest word they were found by (its head, Chinese and
    English names being head-final once codes are dropped), when only some do; [] otherwise."""
    words = [w for step in evidence for w in (step.get("surfaces", []) if step.get("rule") == "partial_name"
                                              else step.get("parts", []) if step.get("rule") == "attributes_parts"
                                              else [])]
    if not words:
        return []
    longest = normalize_key(max(words, key=len))
    headed = [i for i in candidates if i in entities and any(
        skeleton(s).endswith(longest) or normalize_key(s).endswith(longest)
        for s in (entities[i].name, *entities[i].aliases))]
    return headed if 0 < len(headed) < len(candidates) else []


def _heads(text: str, cues: list[Cue], evidence: list[dict]) -> list[tuple[int, int, bool]]:
    """Where the words the candidates were found by stand: unqualified type words, partial names and name parts
    (these flagged: the candidates carry them in their own texts)."""
    heads = [(c.start, c.end, False) for c in cues if c.kind == "type" and not c.qualified]
    folded = text.casefold()
    folded = folded if len(folded) == len(text) else text  # offsets must stay the caller's
    for step in evidence:
        words = step.get("surfaces", []) if step.get("rule") == "partial_name" else \
            step.get("parts", []) if step.get("rule") == "attributes_parts" else []
        for word in words:
            at = folded.find(word.casefold())
            if at >= 0:
                heads.append((at, at + len(word), True))
    return heads


def _narrowed_decision(ids: list[int], evidence: list[dict], cues: list[Cue], windows, gate: Gate,
                       limit: int | None) -> Resolution:
    """Several entities named by values or parts: "那台" means the one of them just discussed in this
    conversation; "上次" the one discussed last in any."""
    if len(ids) > 1:
        among = set(ids)
        for rule, kind, mentions in windows:
            if kind == "coref":
                cue = next((c for c in cues if c.kind == "coref" or c.word in DEMONSTRATIVES), None)
            else:
                cue = next((c for c in cues if c.kind == kind and c.word not in DEMONSTRATIVES), None)
            if cue is None:
                continue
            latest_ids, latest = latest_turn(mentions() if callable(mentions) else mentions, gate, lambda eid: eid in among)
            if latest_ids and latest is not None:
                return _decide(latest_ids, evidence + [mention_step(rule, cue, latest_ids, latest)], limit)
    return _decide(ids, evidence, limit)


def _type_evidence(type_cues: list[Cue], constraint: _Constraint) -> list[dict]:
    if not type_cues:
        return []
    return [{"rule": "type_words", "words": [c.word for c in type_cues], "types": sorted(constraint.types),
             "categories": sorted({c.category for c in type_cues if c.category})}]


def _decide(ids: list[int], evidence: list[dict], limit: int | None = None) -> Resolution:
    if len(ids) == 1:
        return Resolution(status="resolved", entity_id=ids[0], evidence=evidence)
    if ids:
        truncated = limit is not None and len(ids) > limit
        candidates = list(ids[:limit]) if truncated else list(ids)
        return Resolution(status="ambiguous", candidates=candidates, evidence=evidence, truncated=truncated)
    return Resolution(status="none", evidence=evidence)


@dataclass(frozen=True)
class _Constraint:
    types: frozenset[str]  # empty = no type word, anything goes
    # type -> normalised category words; a type listed here also filters by name.
    names: Mapping[str, tuple[str, ...]]

    @classmethod
    def from_cues(cls, cues: Iterable[Cue]) -> _Constraint:
        types: set[str] = set()
        names: dict[str, set[str]] = {}
        for c in cues:
            if c.type is None:
                continue
            types.add(c.type)
            if c.category:
                words = category_words(c.category)
                names.setdefault(c.type, set()).update(normalize_key(w) for w in words)
        return cls(frozenset(types), {t: tuple(sorted(ws)) for t, ws in names.items()})

    def type_ok(self, ref: EntityRef) -> bool:
        return not self.types or ref.type in self.types

    def accepts(self, ref: EntityRef) -> bool:
        if not self.type_ok(ref):
            return False
        words = self.names.get(ref.type)
        return words is None or name_contains_any(ref, words)

    def iter_ids(self, matcher: EntityMatcher) -> Iterator[int]:
        """Entities of the types (and categories), ascending id, without building the list:
        each per-type tuple is ascending already, so they merge lazily."""
        per_type = []
        for t in sorted(self.types):
            words = self.names.get(t)
            per_type.append(matcher.ids_named_like(t, words) if words else matcher.ids_of_type(t))
        if len(per_type) == 1:
            return iter(per_type[0])
        return _unique_sorted(heapq.merge(*per_type))


def _covered(cue: Cue, matches: Sequence[Match]) -> bool:
    return any(m.start <= cue.start and cue.end <= m.end for m in matches)


def _explicit(
    matches: Sequence[Match], hows: set[str], ok: Callable[[int], bool]
) -> tuple[list[dict], list[int]]:
    steps: dict[tuple[int, str], list[int]] = {}
    ids: list[int] = []
    for m in matches:
        if m.how not in hows or not ok(m.entity_id):
            continue
        steps.setdefault((m.start, m.surface), []).append(m.entity_id)
        if m.entity_id not in ids:
            ids.append(m.entity_id)
    return [{"surface": surface, "entity_ids": eids} for (_, surface), eids in steps.items()], ids


def _unique_sorted(ids: Iterable[int]) -> Iterator[int]:
    last = None
    for i in ids:
        if i != last:
            yield i
            last = i


