"""The resolver's rules in their order (entities/resolver.py lists them): the first that yields a visible
candidate decides. A glued modifier the named entity lacks, explicit ids and names, attribute values narrowed
by name parts, a pointer with a description the registry does not know, the conversation's windows, relations
from what the text names, type words alone, partial names, name parts. Kept apart from resolve() so the checks
on an answer (entities/resolver.py) read apart from how it was found. Pure; the caller's gate decides
visibility.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from entities.decision import Mentions, Resolution, decide, narrowed_decision
from entities.matcher import EntityMatcher, EntityRef, Match, normalize_key
from entities.modifiers import foreign_modifiers
from entities.narrowing import by_attributes_and_parts, follow_relations, via_anchor
from entities.nearmiss import unknown_description
from entities.surface import normalize
from entities.type_constraint import TypeConstraint, covered, type_evidence
from entities.typenouns import kinds_of_type
from entities.typewords import DEMONSTRATIVES, Cue, known_word, lexicon_word
from entities.windows import Gate, classifier_kinds, latest_turn, mention_step, turn_focus

__all__ = ["resolve_by_rules"]

MAX_ANCHORS = 20  # entities a relation path starts from at most
_NUMBERED_QUALIFIER = re.compile(r"(?<![0-9])([0-9]+)号")


def resolve_by_rules(text: str, *, matcher: EntityMatcher, entities: Mapping[int, EntityRef], recent: Mentions,
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
            return narrowed_decision(others, [step], cues, (("coreference", "coref", recent),
                                                            ("long_term", "long_term", past)), gate, max_candidates)
    # A type word inside a matched surface is part of a name ("S780 联合收割机" is a model, its
    # "收割机" says nothing about the type the user means).
    # A lexicon word for a type this registry does not have ("车" → asset, where vehicles are "vehicle")
    # says nothing about this business's entities: it neither constrains nor stands for a type.
    registered = matcher.types() if hasattr(matcher, "types") else None
    type_cues = [c for c in cues if c.kind == "type" and not covered(c, matches)
                 and (registered is None or c.type in registered)]
    constraint = TypeConstraint.from_cues(type_cues)

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
            evidence = type_evidence(type_cues, constraint) + [{"rule": rule, **step} for step in steps]
            anchor_types = {entities[i].type for i in ids}
            spans = [(m.start, m.end) for m in matches if m.entity_id in ids]
            qualified = via_anchor(text, spans=spans, anchors=ids, matcher=matcher, visible=gate.visible_list,
                                   type_of=lambda i: entities[i].type if i in entities else "",
                                   other_types={c.type for c in type_cues if c.type and c.type not in anchor_types})
            if qualified is not None and not qualified.ids:  # it names only what the user may not read
                return decide([], evidence + [qualified.step], max_candidates)
            if qualified is not None and qualified.ids:
                return narrowed_decision(qualified.ids, evidence + [qualified.step], cues, windows, gate, max_candidates)
            # "厨房那台": a name right before a pointer whose classifier asks for another kind (a machine, not a
            # room) qualifies what the pointer points at: the anchor's neighbours of that kind.
            pointed = _pointed_neighbours(text, matches, ids, cues, matcher=matcher, entities=entities, gate=gate)
            if pointed is not None:
                return narrowed_decision(pointed.ids, evidence + [pointed.step], cues, windows, gate, max_candidates)
            # "那位王奶奶": a pointer before a person's alias that is also how other people are said (a surname with a
            # title) points among all of them; bare, the registered alias wins.
            shared = _pointed_forms(matches, ids, cues, matcher, entities, gate)
            if shared:
                return narrowed_decision(shared, evidence + [{"rule": "person_forms", "entity_ids": shared}], cues,
                                         windows, gate, max_candidates)
            return decide(ids, evidence, max_candidates)
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
                return narrowed_decision(followed.ids, type_evidence(type_cues, constraint)
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
            type_cues, constraint = kept, TypeConstraint.from_cues(kept)
    evidence = type_evidence(type_cues, constraint)

    pointed = any(c.kind in ("coref", "long_term") for c in cues) or bool(type_cues)
    part_ids, found_parts = ([], []) if partial_ids or not hasattr(matcher, "name_part_candidates") else \
        matcher.name_part_candidates(text)
    part_ids = [i for i in part_ids if i in entities]
    # What the text names by a part, when the type words ask for another type: the anchor of a relation
    # path ("那台青贮收获机的工单", "那台喷雾机的工单"). A skeleton may name thousands ("收割机"): not an anchor.
    named_other = [i for i in (partial_ids if len(partial_ids) <= MAX_ANCHORS else []) or part_ids
                   if constraint.types and not constraint.type_ok(entities[i])]

    # A pointer whose classifier counts things ("那台", "那辆"), never records: the work order about the thing is not it.
    counts_things = any(c.kind in ("coref", "long_term") and (k := classifier_kinds(c.word)) and "order" not in k
                        for c in cues)

    def fits(i: int) -> bool:
        return i not in entities or "order" not in kinds_of_type(entities[i].type)

    def narrow(require_values: bool) -> Resolution | None:
        narrowed = by_attributes_and_parts(text, matcher=matcher, visible=gate.visible_list, visible_prefix=gate.visible_prefix,
                                           limit=max_candidates, pointed=pointed, skeleton_ids=partial_ids,
                                           require_values=require_values, fits=fits if counts_things else None)
        if narrowed is None:
            return None
        if not narrowed.ids:  # the named values and parts contradict each other: nothing is named
            return decide([], evidence + [narrowed.step], max_candidates)
        typed = [i for i in narrowed.ids if constraint.accepts(entities[i])] or \
            [i for i in narrowed.ids if constraint.type_ok(entities[i])]
        if typed:
            return narrowed_decision(typed, evidence + [narrowed.step], cues, windows, gate, max_candidates)
        followed = follow_relations(narrowed.ids, matcher=matcher, accepts=accepts_type, visible=gate.visible_list)
        return None if followed is None else narrowed_decision(followed.ids, evidence + [narrowed.step, followed.step],
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
            return decide(ids, evidence + [mention_step(rule, cue, ids, latest)], max_candidates)
        if constraint.types:
            # The anchor is what the text names of another kind, or else what was just discussed, unless the text
            # names by parts only things of the kind asked for ("浦东滨江那家店" is a store, not the store of the
            # treadmill just discussed).
            named_kind = bool(part_ids) and not named_other and any(matcher.is_name_part(p) for p in found_parts)
            anchors, latest = latest_turn(mentions, gate, lambda eid: eid in entities and not constraint.type_ok(entities[eid])
                                           and (not named_other or eid in named_other) and not named_kind)
            followed = anchors and follow_relations(anchors, matcher=matcher, accepts=accepts_type, visible=gate.visible_list)
            if followed:
                return decide(followed.ids, evidence + [mention_step(rule, cue, anchors, latest), followed.step],
                              max_candidates)

    if named_other:
        followed = follow_relations(gate.visible_list(named_other), matcher=matcher, accepts=accepts_type,
                                    visible=gate.visible_list)
        if followed is not None:
            return narrowed_decision(followed.ids, evidence + [followed.step], cues, windows, gate, max_candidates)

    # (e): type / category word standing alone. Words attached to a number or code ("3号拖拉机",
    # "工单0012") name a specific entity that is not visible: answering with another entity of
    # the same kind would be a silent wrong guess.
    standalone = TypeConstraint.from_cues([c for c in type_cues if not c.qualified])
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
        resolution = decide(ids, evidence + [step], max_candidates)
        if resolution.truncated:
            step["entity_ids"] = resolution.candidates
            step["truncated"] = True
        return resolution

    # (f): a partial name and no cue or type word that decided: every entity it partially names.
    named = gate.visible_prefix((eid for eid in partial_ids if constraint.type_ok(entities[eid])),
                                None if max_candidates is None else max_candidates + 1)
    if named:
        step = {"rule": "partial_name", "surfaces": [text[s:e] for s, e in partial_spans], "entity_ids": named}
        resolution = decide(named, evidence + [step], max_candidates)
        if resolution.truncated:
            step["entity_ids"], step["truncated"] = resolution.candidates, True
        return resolution

    # (g): parts of names no earlier rule read ("那台喷雾机" for 3号喷杆喷雾机, "5号拖拉机" for 5号轮式拖拉机).
    if part_ids and (resolution := narrow(require_values=False)) is not None:
        return resolution
    # (h): "88号报修" for 报修单0088, a number the name carries with leading zeros: read last, the words a number counts
    # name the entities that hold them and carry it.
    if numbered := _numbered_by_words(text, matcher, entities):
        ids = gate.visible_list(numbered)
        return decide(ids, evidence + [{"rule": "numbered_words", "entity_ids": ids}], max_candidates)
    return Resolution(status="none", evidence=evidence)


def _pointed_forms(matches: Sequence[Match], ids: list[int], cues: list[Cue], matcher,
                   entities: Mapping[int, EntityRef], gate: Gate) -> list[int]:
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


def _pointed_neighbours(text: str, matches: Sequence[Match], ids: list[int], cues: list[Cue], *, matcher,
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


def _numbered_by_words(text: str, matcher, entities: Mapping[int, EntityRef]) -> list[int]:
    """The entities holding words a number of the text counts, whose names carry that number ("88号报修" → 报修单0088)."""
    if not hasattr(matcher, "counted"):
        return []
    out: list[int] = []
    counted = matcher.counted(text)
    # Every numbered qualifier of the text ("9号楼1号客梯": 9 and 1) must be a number of the entity's names: read last,
    # the rule answers only when the whole numbered phrase is the entity's.
    qualified = [matcher.numbered(int(n)) for n in _NUMBERED_QUALIFIER.findall(normalize(text).text) if len(n) <= 6]
    if counted and not all(qualified):
        return []
    for words, number in counted:
        # A word with a number of its own ("9号楼" of "9号楼1号客梯", however the number was read) must be the entity's
        # too, not only its count.
        numbered_words = {w for ws, n in counted if n == number for w in ws if any(ch.isdigit() for ch in w)}
        out += [i for i in sorted(matcher.numbered(number))
                if i in entities and i not in out and matcher.carries_number(i, words, number)
                and all(matcher.carries_number(i, {w}, number) is not None for w in numbered_words)
                and all(i in ids for ids in qualified)]
    return out


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
