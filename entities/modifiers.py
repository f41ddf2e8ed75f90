"""A word glued before a registered name that the named entity does not carry: the mention names something else.

"便携心电图机" where only 心电图机 is visible, "滨江史密斯架" where the alias 史密斯架 belongs to the trainer at
徐汇 and 滨江史密斯训练架 stands at 滨江店: the name inside the mention is exact, but the word in front of it
(jieba's nominal word ending where the name starts) is a modifier that tells one thing from another. When
that word is not in the matched entity's own texts (name, aliases, attribute values) nor in those of its
neighbours (the store it stands in, the model it is), the mention names another entity that carries both
the word and a part of the name, or, when none does, something unregistered (or not visible): none, never
the entity whose name happened to be inside the mention.

Pure Python; the caller decides visibility (a hidden entity is neither a match nor a candidate here).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from entities.surface import EntityRef, normalize_key

_CJK_WORD = re.compile("^[\u3400-\u9fff]{2,}$")
_CJK_CHAR = re.compile("[\u3400-\u9fff]")
# Nominal words that modify a following noun: nouns, place and organisation names, distinguishing words,
# abbreviations, adjectives. Not pronouns, numerals, classifiers, time words, verbs or verbal nouns ("检查").
# Names of people and brands too: jieba tags many brands as personal names ("桑塔纳" nr, "卡罗" nrt).
_MODIFIER_FLAGS = ("n", "ns", "nz", "nt", "nr", "nrt", "b", "j", "a", "an")
# Pronouns, numerals, classifiers, particles, prepositions, conjunctions, adverbs, time and place-of words.
_FUNCTION_FLAGS = ("r", "m", "q", "u", "p", "c", "d", "t", "f", "x", "e", "y", "o")
LOOK_BACK = 12  # characters read before the name
MAX_HOLDERS = 200  # a part of more names than this is a kind word: it tells no candidate apart


@dataclass(frozen=True)
class Modifier:
    word: str
    start: int
    end: int  # where the name starts
    nominal: bool


def glued_modifier(text: str, start: int) -> Modifier | None:
    """The word of two or more Chinese characters that ends exactly where a name starts, if any: jieba's last
    word before the name, or its last two one-character words together ("北|库" → 北库, "林|德" → 林德), a word its
    dictionary does not know). `nominal` says jieba reads it as a noun or adjective, not a verb ("防爆", "检查")."""
    if start < 2 or not _CJK_WORD.match(text[start - 2:start]) or not _CJK_CHAR.match(text, start):
        return None
    import jieba.posseg

    from entities.partial import quiet_jieba

    quiet_jieba()
    tokens = [(t.word, t.flag) for t in jieba.posseg.lcut(text[max(0, start - LOOK_BACK):start], HMM=False)]
    if len(tokens) >= 2 and all(len(w) == 1 and _CJK_CHAR.match(w) and not f.startswith(_FUNCTION_FLAGS)
                                for w, f in tokens[-2:]):
        tokens[-2:] = [(tokens[-2][0] + tokens[-1][0], "n")]
    if not tokens:
        return None
    word, flag = tokens[-1]
    if not _CJK_WORD.match(word) or flag.startswith(_FUNCTION_FLAGS):
        return None
    return Modifier(word, start - len(word), start, flag in _MODIFIER_FLAGS)


def entity_texts(ref: EntityRef, attributes: Mapping | None) -> list[str]:
    """The normalised texts an entity carries: name, aliases, string attribute values."""
    texts = [normalize_key(s) for s in (ref.name, *ref.aliases)]
    for value in (attributes or {}).values():
        for item in (value if isinstance(value, list) else [value]):
            if isinstance(item, str):
                texts.append(normalize_key(item))
    return texts


def carries(word: str, eid: int, *, get: Callable[[int], EntityRef | None], attributes: Mapping[int, Mapping],
            neighbours: Callable[[int], Iterable[tuple]]) -> bool:
    """`word` is in the entity's own texts or in those of an entity related to it, or names one of its own attributes
    (people say the attribute before its value: "店铺ID 88231047", "serial AD5-118734")."""
    key = normalize_key(word)
    if any(key in normalize_key(name) for name in (attributes.get(eid) or {}) if isinstance(name, str)):
        return True
    for other in (eid, *(n[0] for n in neighbours(eid))):
        ref = get(other)
        if ref is not None and any(key in t for t in entity_texts(ref, attributes.get(other))):
            return True
    return False


@dataclass
class Displaced:
    """Name matches a glued modifier contradicts, and the entities that carry the modifier and the name's parts."""
    matches: list  # entities.surface.Match
    modifier: Modifier
    others: list[int]  # candidates (any visibility; the caller filters), ascending


def foreign_modifiers(text: str, matches: list, *, matcher, skip: Callable[[str], bool]) -> tuple[list[Displaced], list]:
    """For each registered name or alias in `matches` with a glued modifier its entity does not carry: the
    displaced matches and the other entities meant; and the registered names glued before a name whose entity
    carries them, which qualify that name rather than name something of their own ("南库电动叉车": the forklift
    of the south store, not the store). `skip(word)`: words that never contradict (the lexicon's)."""
    attributes = getattr(matcher, "attributes", {}) or {}
    explicit = [m for m in matches if m.how in ("id", "name", "alias")]
    out: dict[tuple[int, int], Displaced] = {}
    qualifiers: list = []
    for m in matches:
        if m.how not in ("name", "alias"):
            continue
        before = [q for q in explicit if q.end == m.start and q.entity_id != m.entity_id]
        if before:  # another registered name glued before this one ("北库电动叉车")
            modifier = Modifier(before[0].surface, before[0].start, m.start, True)
        elif (after := trailing_proper_word(text, m.end)) is not None:
            # "Priya Sharma" where only Priya Nair is registered: an English proper name goes on with a capitalised
            # word the entity does not carry, so it is someone (something) else's name.
            modifier = after
            if skip(modifier.word) or any(q.start < modifier.end and modifier.start < q.end for q in explicit) \
                    or (hasattr(matcher, "registry_type_cues") and matcher.registry_type_cues(modifier.word)):
                continue  # a lexicon or registry type word is the head the name qualifies ("the HQ Printer")
        else:
            modifier = glued_modifier(text, m.start)
            if modifier is None or skip(modifier.word) \
                    or any(q.start < modifier.end and modifier.start < q.end for q in explicit):
                continue  # none, a lexicon word, or part of another registered name
        if carries(modifier.word, m.entity_id, get=matcher.get, attributes=attributes, neighbours=matcher.neighbours):
            qualifiers.extend(q for q in before if q not in qualifiers)
            continue
        slot = out.get((m.start, m.end))
        if slot is None:
            holders = matcher.part_holders(m.surface, MAX_HOLDERS)
            others = sorted(i for i in holders if carries(modifier.word, i, get=matcher.get, attributes=attributes,
                                                          neighbours=matcher.neighbours))
            if not others and not modifier.nominal:
                continue  # a verb nothing else carries acts on the name ("检查电动叉车"): it does not modify it
            slot = out[(m.start, m.end)] = Displaced([], modifier, others)
        slot.matches.append(m)
        qualifiers.extend(q for q in before if q not in qualifiers)
    return list(out.values()), qualifiers


_EN_WORD = re.compile(r"([A-Za-z][A-Za-z0-9\-]*)('s|’s)?\s+$")
# Words that open an English sentence without naming anything (a closed class): a capital there is the sentence's.
_OPENERS = frozenset("""the a an this that these those which what where when who whose how why is are was were am be
do does did has have had can could will would shall should may might must please and but so or our my your their his
her its any every each no not if then there here let""".split())
_CALENDAR = frozenset("""monday tuesday wednesday thursday friday saturday sunday january february march april may june
july august september october november december today tomorrow""".split())
_TITLE_WORD = re.compile(r"\s+([A-Z][a-z]+)\b")
_CJK_POSSESSED = re.compile("[楼层栋区室库房厅]$")
_POINTER = re.compile("^[那这][辆台家个张位间部款条只所座栋件份单艘套批把块根架头]$")


def trailing_proper_word(text: str, end: int) -> Modifier | None:
    """The capitalised word right after an English name ending at `end` ("Priya Sharma"), if any."""
    if not end or not text[end - 1].isascii() or not text[end - 1].isalpha():
        return None
    found = _TITLE_WORD.match(text, end)
    if found is None or found.group(1).casefold() in _OPENERS or found.group(1).casefold() in _CALENDAR:
        return None
    return Modifier(found.group(1), found.start(1), found.end(1), True)


def modifier_chain(text: str, start: int, *, skip: Callable[[str], bool]) -> list[Modifier]:
    """The words that modify the head starting at `start`: Chinese nominal words glued before it (and a place word
    before "的": "四楼的制氧机"), English capitalised words and possessors ("the Guangzhou printer", "Derek's
    laptop ticket"). Words `skip` accepts (the lexicon's) are read past, not returned."""
    out: list[Modifier] = []
    at = start
    if _POINTER.match(text[max(0, at - 2):at]):
        at -= 2  # "黑色那辆车", "东厂房那台 XR-30": the modifier stands before the pointer
    for _ in range(4):
        modifier = glued_modifier(text, at)
        if modifier is None and at >= 3 and text[at - 1] == "的" and not out:
            place = glued_modifier(text, at - 1)
            if place is not None and _CJK_POSSESSED.search(place.word):
                modifier = Modifier(place.word, place.start, at, True)
        if modifier is None:
            break
        if not skip(modifier.word):
            out.append(modifier)
        at = modifier.start
    if out or _CJK_CHAR.search(text[start:start + 1]):
        return out
    while True:  # English: "the Guangzhou printer", "Derek's laptop ticket"
        found = _EN_WORD.search(text[:at])
        if found is None:
            break
        word, possessive = found.group(1), found.group(2)
        # A capital opening the sentence says nothing ("Which", "The Shenzhen ..."), nor does a lower-case word.
        opening = not text[:found.start(1)].strip() or text[:found.start(1)].rstrip()[-1] in ".!?;:,\"'("
        if opening and word[0].isupper() and not possessive and out and out[-1].word[0].isupper() \
                and out[-1].start == at and word.casefold() not in _OPENERS and not skip(word):
            # ... unless it starts a proper name with the capitalised word after it ("Baker Street dock"): that word
            # is the name's own, to be carried like the rest ("Street" of Market Street Dock is not "Baker Street").
            out.append(Modifier(word, found.start(1), at, True))
            break
        if not skip(word) and not possessive and (not word[0].isupper() or opening):
            break
        if not skip(word):
            out.append(Modifier(word, found.start(1), at, True))
        at = found.start()
    return out


def unsupported(text: str, heads: Iterable[tuple[int, int, bool]], candidates: list[int], *, matcher,
                skip: Callable[[str], bool]) -> tuple[list[int], list[str]] | None:
    """The candidates that carry every modifier of the heads (own texts or a neighbour's), and the words read;
    a head found as a name part (`owned`) must be the candidates' own when it has modifiers.
    None when no head has a modifier that some candidate does not carry. A modifier no candidate carries leaves
    none: the text names something else."""
    attributes = getattr(matcher, "attributes", {}) or {}
    kept, words = list(candidates), []
    for start, end, owned in sorted(set(heads)):
        # A verb by the dictionary's tags modifies when the registry uses it in its names or values ("防爆" of a
        # 防爆电动叉车): jieba tags such attributives as verbs; a verb the registry never uses acts on the head.
        chain = [m for m in modifier_chain(text, start, skip=skip)
                 if m.nominal or (hasattr(matcher, "knows") and matcher.knows(m.word))]
        if chain and owned:
            # A name part modified is the head of the phrase: what is meant carries it itself ("the Shenzhen
            # ThinkPad" is a ThinkPad, not the Shenzhen office its ThinkPad belongs to).
            head = normalize_key(text[start:end])
            owning = [c for c in kept if (ref := matcher.get(c)) is not None
                      and any(head in t for t in entity_texts(ref, attributes.get(c)))]
            if owning and len(owning) != len(kept):
                kept, words = owning, words + [text[start:end]]
        carrying = {m.word: [c for c in kept if carries(m.word, c, get=matcher.get, attributes=attributes,
                                                         neighbours=matcher.neighbours)] for m in chain}
        some_carried = any(carrying.values())
        for modifier in chain:
            found = carrying[modifier.word]
            # A word no candidate carries, beside one that some carry, is part of that word's phrase ("冷王机组那辆车":
            # 机组 says what 冷王 is) unless the registry uses it elsewhere ("防爆电动叉车": 防爆 tells another apart).
            if not found and some_carried and not (hasattr(matcher, "knows") and matcher.knows(modifier.word)):
                continue
            found = [c for c in kept if c in found]
            if len(found) != len(kept):
                kept, words = found, words + [modifier.word]
    return (kept, words) if words else None
