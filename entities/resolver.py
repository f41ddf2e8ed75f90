"""Resolve which business entity a message is about (DESIGN §8).

Rules, in order (entities/resolution_rules.py); the first that yields a visible candidate decides:
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

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace

from entities.decision import Mentions, Resolution, decide, recent_tie
from entities.matcher import EntityMatcher, EntityRef, normalize_key
from entities.modifiers import unsupported
from entities.narrowing import related_to
from entities.partial import skeleton
from entities.qualifiers import by_related_words
from entities.resolution_rules import resolve_by_rules
from entities.typewords import Cue, lexicon_word, text_cues
from entities.windows import Gate, MentionEvidence, latest_turn, mention_step

__all__ = ["MentionEvidence", "Resolution", "resolve"]


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
    resolution = _resolve(text, matcher=matcher, entities=entities, recent=recent, past=past, gate=gate,
                          max_candidates=max_candidates)
    # Named nothing as typed: a word a pinyin keyboard mistyped ("锦秀华庭" for 锦绣华庭) is read as the registered
    # word it sounds like, and the text resolved again (same access, same rules).
    if resolution.status == "none" and hasattr(matcher, "misread") and (readings := matcher.misread(text)):
        heard = text
        for said, meant in readings:
            heard = re.sub(re.escape(said), lambda _m, meant=meant: meant, heard, flags=re.IGNORECASE)
        again = _resolve(heard, matcher=matcher, entities=entities, recent=recent, past=past, gate=gate,
                         max_candidates=max_candidates)
        if again.status != "none":
            step = {"rule": "typo", "read": [{"said": said, "as": meant} for said, meant in readings]}
            return replace(again, evidence=[step, *again.evidence])
    # Named nothing else: a record's number said alone ("any update on 5538?", "521那批") names what carries it in a name.
    if resolution.status == "none" and hasattr(matcher, "numbered") and (numbers := _bare_numbers(text)):
        ids = gate.visible_list(sorted({i for n in numbers for i in matcher.numbered(n) if i in entities}))
        if ids:
            return decide(ids, [{"rule": "bare_number", "numbers": numbers, "entity_ids": ids}], max_candidates)
    return resolution


# A number of three to six digits standing alone: not inside a code ("SH260611-08", "#08-12"), a decimal or a time, not
# a quantity (a measure or unit after it: "500个", "350ml", "80 %"), not glued to a word it qualifies ("302电动护理床").
_MEASURES_AFTER = "个辆台家张位间部款条只所座栋件份单艘套批把块根架头场次天年月周日种项遍趟回期楼层区届级类点元米吨斤克度号岁"
_BARE_NUMBER = re.compile(r"(?<![A-Za-z0-9_#.\-/:·])([0-9]{3,6})(?![A-Za-z0-9_%.\-/:·])(?=$|\W|[那这的呢吗啊了是还有在和跟])"
                          r"(?!\s*(?:[" + _MEASURES_AFTER + r"]|(?:ml|kg|km|cm|mm|pcs|pm|am|hrs?|mins?|days?|units?)\b))",
                          re.IGNORECASE)


def _bare_numbers(text: str) -> list[int]:
    return [int(m.group(1)) for m in _BARE_NUMBER.finditer(normalize_key(text))]


def _resolve(text: str, *, matcher: EntityMatcher, entities: Mapping[int, EntityRef], recent: Mentions, past: Mentions,
             gate: Gate, max_candidates: int | None) -> Resolution:
    cues = text_cues(text, matcher)
    resolution = resolve_by_rules(text, matcher=matcher, entities=entities, recent=recent, past=past, gate=gate,
                                  max_candidates=max_candidates, cues=cues)
    if resolution.status != "none" and not resolution.truncated and hasattr(matcher, "part_holders") \
            and not any(step.get("rule") in _NAMED_RULES for step in resolution.evidence):
        # "防爆电动叉车", "四楼的制氧机", "the Guangzhou printer": the words modifying the head the candidates were
        # found by must be theirs (or their neighbours'); a word none of them carries names something else.
        checked = unsupported(text, _heads(text, cues, resolution.evidence), resolution.candidates
                              or [resolution.entity_id], matcher=matcher, skip=lexicon_word)
        if checked is not None:
            kept, words = checked
            resolution = decide(kept, resolution.evidence + [{"rule": "modifiers", "words": words, "entity_ids": kept}],
                                max_candidates)
    # "西码头7号泊位", "Brass lantern 3": a number counting the words the candidates carry names one numbered thing;
    # a candidate whose names hold those words with another number is a sibling, never the answer.
    # Also for what a named entity's relation reached ("3号楼15层的验收单": the inspection of 3号楼 must carry 15 with the
    # words that count it, though 3号楼 itself, named whole, is not read by them).
    if resolution.status != "none" and not resolution.truncated and hasattr(matcher, "counted") \
            and not _named(resolution) & set(resolution.candidates or [resolution.entity_id]) \
            and (counted := matcher.counted(text)):
        ids = resolution.candidates or [resolution.entity_id]
        kept = [i for i in ids if all(matcher.carries_number(i, words, n) is not False for words, n in counted)]
        if len(kept) < len(ids):
            resolution = decide(kept, resolution.evidence + [{"rule": "numbers", "numbers": [n for _w, n in counted],
                                                              "entity_ids": kept}], max_candidates)
    # Look-alikes that a word of the text tells apart through their relations ("201的液相色谱仪": the one in the
    # lab "201" names; entities/qualifiers.py).
    if resolution.status == "ambiguous" and not resolution.truncated and hasattr(matcher, "part_hits") \
            and (narrowed := by_related_words(text, resolution.candidates, matcher=matcher, visible=gate.visible_list,
                                              read=_read_words(resolution.evidence))) is not None:
        kept, words = narrowed
        return decide(kept, resolution.evidence + [{"rule": "related_words", "words": words, "entity_ids": kept}],
                      max_candidates)
    # "卡罗拉的雨刮": the car named 白色卡罗拉, not the policy 卡罗拉车险 whose name uses the word as a modifier.
    if resolution.status == "ambiguous" and not resolution.truncated \
            and len({entities[i].type for i in resolution.candidates if i in entities}) > 1 \
            and (headed := _headed_by(resolution.candidates, resolution.evidence, entities)):
        return decide(headed, resolution.evidence + [{"rule": "name_head", "entity_ids": headed}], max_candidates)
    # "她的护理床": a possessive pronoun's entity (the latest discussed) owns one of the look-alikes the text names.
    possessive = next((c for c in cues if c.kind == "coref" and c.word in _POSSESSIVES), None)
    if resolution.status == "ambiguous" and not resolution.truncated and possessive is not None \
            and hasattr(matcher, "neighbours"):
        owners, latest = latest_turn(recent() if callable(recent) else recent, gate,
                                     lambda eid: eid in entities and eid not in resolution.candidates)
        owned = [i for i in resolution.candidates if owners and related_to(i, set(owners), matcher, gate.visible_list)]
        if owned and len(owned) < len(resolution.candidates) and latest is not None:
            return decide(owned, resolution.evidence + [mention_step("coreference", possessive, owners, latest),
                                                        {"rule": "owned_by", "entity_ids": owned}], max_candidates)
    # "Hawthorn's fire alarm": the building named Hawthorn Building, not the rooms whose `building` value names it.
    if resolution.status == "ambiguous" and not resolution.truncated \
            and (named := _named_not_referenced(resolution.candidates, _read_words(resolution.evidence), matcher)):
        resolution = decide(named, resolution.evidence + [{"rule": "named_not_referenced", "entity_ids": named}],
                            max_candidates)
    if resolution.status == "ambiguous" and not resolution.truncated and not _ALL_OF_THEM.search(text):
        return recent_tie(resolution.candidates, resolution.evidence, recent, gate, max_candidates)
    return resolution


_POSSESSIVES = frozenset({"它的", "她的", "他的", "its", "her"})
# Words that ask about every one of the matches ("一共几张", "分别", "how many"): a closed class; the one just discussed
# does not break that tie.
_ALL_OF_THEM = re.compile(r"一共|总共|分别|所有|全部|哪几|几[张台个辆位只家条间]|\b(?:all|each|every|both|how many)\b",
                          re.IGNORECASE)

# Steps that read a registered name or id whole (its own words are its own), or a pointer into the window.
_NAMED_RULES = frozenset({"explicit_id", "name_alias", "foreign_modifier", "coreference", "long_term"})


def _named(resolution: Resolution) -> set[int]:
    """The entities a step that reads a registered name or id whole named (their own words are their own)."""
    return {i for step in resolution.evidence if step.get("rule") in _NAMED_RULES for i in step.get("entity_ids", ())}


def _named_not_referenced(candidates: list[int], words: set[str], matcher) -> list[int]:
    """The candidates whose own name or alias holds a word they were found by, when every other candidate holds it only
    in values that hold one of those names (a reference to that entity, as "building: Hawthorn Building" and "role:
    静安店店长" are); [] when the text is not read that way."""
    words = {w for w in words if w}
    if not words or not hasattr(matcher, "get"):
        return []
    attributes = getattr(matcher, "attributes", {}) or {}
    names = {i: {normalize_key(s) for s in (ref.name, *ref.aliases)} for i in candidates if (ref := matcher.get(i))}
    named = [i for i in candidates if any(w in n for n in names.get(i, ()) for w in words)]
    if not named or len(named) == len(candidates):
        return []
    their_names = set().union(*(names[i] for i in named))
    for i in candidates:
        if i in named:
            continue
        values = [normalize_key(v) for v in (attributes.get(i) or {}).values() if isinstance(v, str)]
        holding = [v for v in values if any(w in v for w in words)]
        if not holding or not all(any(n in v for n in their_names if len(n) >= 2) for v in holding):
            return []
    return named


def _read_words(evidence: list[dict]) -> set[str]:
    """The words the steps so far read: surfaces matched whole, partial names, parts, values, words."""
    out: set[str] = set()
    for step in evidence:
        if isinstance(step.get("surface"), str):
            out.add(normalize_key(step["surface"]))
        for key in ("surfaces", "parts", "values", "words"):
            out.update(normalize_key(w) for w in step.get(key, ()) if isinstance(w, str))
    return out


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
