"""Lexicon of words that constrain or point at entities, in Chinese and English.

This module is data plus one scanner. To support a new entity type, add its words to
`TYPE_WORDS`; types are open strings, so a type without words simply gets no type constraint.

Kinds of cue:
- type words ("工单", "机型", "tractor") restrict resolution to one entity type;
- category words ("收割机") restrict to a type AND to entities whose name/alias contains one of
  the category's words, so "那台收割机" means an asset named like a harvester;
- coreference cues ("它", "这台", "it") point at the current conversation's recent entities;
- long-term cues ("上次", "那台", "last time") point at entities from earlier conversations.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache

import ahocorasick

from entities.matcher import inside_token, leftmost_longest, normalize, normalize_key
from entities.partial import ordinal_after, qualified_span
from entities.typenouns import KINDS, heads_pointer

__all__ = [
    "CATEGORIES",
    "COREF_CUES",
    "DEMONSTRATIVES",
    "LONG_TERM_CUES",
    "NOT_PART_OF",
    "TYPE_WORDS",
    "Cue",
    "category_words",
    "scan",
    "text_cues",
]

# type -> words that name the type itself.
TYPE_WORDS: Mapping[str, tuple[str, ...]] = {
    "workorder": (
        "工单", "维修单", "派工单", "work order", "work orders", "workorder", "workorders",
        "ticket", "tickets",
    ),
    "asset_model": ("机型", "型号", "model", "models"),
    "asset": (
        "资产", "设备", "机器", "车", "车辆", "农机",
        "vehicle", "vehicles", "machine", "machines", "asset", "assets", "device", "devices",
        "equipment",
    ),
}

# category -> (type, words). Any of the words in the text selects the category; an entity is in
# the category when its name or an alias contains any of them (so "the tractor" finds
# "3号拖拉机"). Category words are type words of their type as well.
CATEGORIES: Mapping[str, tuple[str, tuple[str, ...]]] = {
    "harvester": ("asset", ("收割机", "harvester", "harvesters")),
    "tractor": ("asset", ("拖拉机", "tractor", "tractors")),
}

# Pronouns and deictics that refer to what was just discussed in this conversation.
COREF_CUES: tuple[str, ...] = (
    "它", "它的", "它们", "这台", "这个", "这辆", "这部", "这款", "这张", "这份", "这件", "该",
    "这家", "这位", "这单", "这间", "这条", "这只", "她的", "他的", "她", "他",
    "这批", "这座", "这栋", "这套", "这把", "这块", "这根", "这艘", "这架", "这头", "这所",
    "it", "its", "this", "this one", "that one", "that machine", "the same one", "she", "her",
)

# Words that refer back to an earlier conversation ("上次那台收割机").
LONG_TERM_CUES: tuple[str, ...] = (
    "上次", "上回", "之前", "以前", "先前", "那台", "那辆", "那部", "那个", "那款", "那张",
    "那家", "那位", "那边", "那单", "那间", "那条", "那只",
    "那批", "那座", "那栋", "那套", "那把", "那块", "那根", "那艘", "那架", "那头", "那所", "那份", "那件",
    "last time", "previously", "earlier", "the one we discussed", "the one we talked about",
    "we discussed", "we talked about",
)

# The long-term cues that are plain demonstratives: "那辆 K9A" points at the one just discussed when the
# conversation has one, and is ambiguous otherwise; only an explicit past ("上次", "last time") reaches back
# into earlier conversations to choose among several named entities.
DEMONSTRATIVES: frozenset[str] = frozenset({"那", "那台", "那辆", "那部", "那个", "那款", "那张", "那家", "那位", "那边",
                                           "那单", "那间", "那条", "那只", "that", "那批", "那座", "那栋", "那套", "那把",
                                           "那块", "那根", "那艘", "那架", "那头", "那所", "那份", "那件"})
_CJK_PAIR = re.compile("[\u3400-\u9fff]{2}")
# English "that" points back only as a determiner ("that rack", "that open ticket"), not as a conjunction or
# relative pronoun ("said that the", "the one that is"): followed by a word that starts no clause.
_THAT = re.compile(r"\bthat\s+(?!(?:the|a|an|it|its|he|she|they|we|i|you|is|was|are|were|has|had|will|would|can|"
                   r"could|should|this|there|one)\b)[a-z0-9]", re.IGNORECASE)

# Compounds in which a short word does not carry its cue meaning ("应该" is not "该",
# "其它" is not "它", "刹车" is a brake, "车间" a workshop). Matched before the word itself.
NOT_PART_OF: Mapping[str, tuple[str, ...]] = {
    "车": ("刹车", "停车", "倒车", "开车", "上车", "下车", "堵车", "车间", "车站", "车票", "车次"),
    "店": ("店长", "店员"),
    "船": ("船长", "船员"),
    "它": ("其它",),
    "该": ("应该", "活该", "该不该"),
    "他的": ("其他的",),
    "他": ("其他", "吉他", "他人"),
    "机器": ("机器学习",),
    "this": ("this time",),
}

# Characters that, right next to a type word, make it part of a specific name we do not know
# ("3号拖拉机", "工单0012", "ticket #5"): such a word constrains the type but does not stand
# alone for "any entity of the type".
_QUALIFIER_BEFORE = frozenset("号#")  # matched on normalised text: "＃" is "#" here
_QUALIFIER_AFTER = frozenset("号#")


@dataclass(frozen=True)
class Cue:
    kind: str  # "type" | "coref" | "long_term"
    word: str  # lexicon word (normalised)
    start: int  # span in the caller's original text
    end: int
    type: str | None = None  # for kind "type"
    category: str | None = None  # for category words
    qualified: bool = False  # attached to a number/code, i.e. part of a specific name
    noun_kind: str | None = None  # a generic noun's kind (entities/typenouns.py), mapped onto the registry's types


@dataclass(frozen=True)
class _Entry:
    kind: str
    type: str | None = None
    category: str | None = None
    noun_kind: str | None = None


def category_words(category: str) -> tuple[str, ...]:
    return CATEGORIES[category][1]


def scan(text: str) -> list[Cue]:
    """All cues in `text`, per kind in order of appearance."""
    norm = normalize(text)
    s = norm.text
    cues: list[Cue] = []
    for automaton in _automata():
        hits = [
            (last - length + 1, last + 1, entry)
            for last, (length, entry) in automaton.iter(s)
            if not inside_token(s, last - length + 1, last + 1)  # "it" is not in "item"
        ]
        # Leftmost-longest per kind: an excluded compound ("应该") swallows the word inside it.
        for start, end, entry in leftmost_longest(hits):
            if entry is None:
                continue
            o_start, o_end = norm.original_span(start, end)
            cues.append(
                Cue(
                    kind=entry.kind,
                    word=s[start:end],
                    start=o_start,
                    end=o_end,
                    type=entry.type,
                    category=entry.category,
                    qualified=entry.kind == "type" and _qualified(s, start, end),
                    noun_kind=entry.noun_kind,
                )
            )
    return cues


def text_cues(text: str, matcher) -> list[Cue]:
    """The lexicon's cues, the registry's own type words, and generic nouns mapped onto the registry's types
    ("哪辆车" → `vehicle`, "那家店" → `branch`; entities/typenouns.py)."""
    cues = [c for c in scan(text) if not (c.kind == "coref" and c.word == "该" and not _determiner_gai(text, c.end, matcher))]
    # A one-character noun inside a longer word of the text is that word's morpheme ("车" of "洗车机", "店" of "店庆"),
    # whatever compound table NOT_PART_OF has not listed: it must end where the segmenter ends a word.
    singles = [c for c in cues if c.kind == "type" and c.end - c.start == 1 and _CJK_PAIR.match(text[c.start] * 2)]
    if singles:
        from entities.partial import word_boundaries

        cuts = word_boundaries(text)
        cues = [c for c in cues if c not in singles or c.end in cuts]
    cues += [Cue(kind="long_term", word="that", start=m.start(), end=m.start() + 4) for m in _THAT.finditer(text)
             if _that_points(matcher, text, m.start() + 4)]
    if hasattr(matcher, "registry_type_cues"):  # the registry's own types are type words too
        known = {(c.start, c.end, c.type) for c in cues if c.kind == "type"}
        # "5号冷柜": a learnt label attached to a number names one specific entity, as a lexicon word does.
        registry = [Cue(kind="type", word=word, start=start, end=end, type=type_, qualified=qualified_span(text, start, end))
                    for word, type_, start, end in matcher.registry_type_cues(text)]
        # A lexicon word inside a longer word the registry uses for one of its types ("车" of "叉车", every
        # forklift's label) is that word's ending, not a word of its own for another type.
        cues = [c for c in cues if c.kind != "type" or not any(
            r.start <= c.start and c.end <= r.end and r.end - r.start > c.end - c.start and r.type != c.type
            for r in registry)]
        cues += [r for r in registry if (r.start, r.end, r.type) not in known]
    if hasattr(matcher, "types_of_kind"):
        known = {(c.start, c.end, c.type) for c in cues if c.kind == "type"}
        # ... or heading a compound whose modifier the registry knows ("水产供应商": 水产 is a category of suppliers);
        # a one-character noun in a compound is a name's own ending ("冷链车", "春熙路店"), not a generic head.
        # ... or opening the sentence as a possessor ("狗狗的驱虫药还有吗": the dogs, whichever are meant).
        cues += [replace(c, type=type_, category=None) for c in cues if c.noun_kind
                 and (heads_pointer(text, c.start) or _opens_possessor(text, c.start, c.end)
                      or (c.end - c.start >= 2 and c.start >= 2 and _CJK_PAIR.match(text, c.start - 2)
                          and known_word(matcher, text[c.start - 2:c.start])))
                 for type_ in matcher.types_of_kind(c.noun_kind) if (c.start, c.end, type_) not in known]
    # Spoken Chinese drops the classifier before a one-character noun: "那车" is "那辆车", "这店" is "这家店". Only for a
    # noun that stands for a type this registry has: "宏达那车C35" (no vehicle registered) points at nothing.
    registered = matcher.types() if hasattr(matcher, "types") else None
    bare = {(c.start - 1, text[c.start - 1]) for c in cues if c.kind == "type" and c.end - c.start == 1 and c.start > 0
            and text[c.start - 1] in "那这" and (registered is None or c.type in registered)
            and not any(o.kind != "type" and o.start < c.start <= o.end for o in cues)}
    cues += [Cue(kind="coref" if word == "这" else "long_term", word=word, start=at, end=at + 1) for at, word in sorted(bare)]
    # Type words running into a qualified one are one name with it: "Drum kit 3" names one kit, "drum" included.
    for cue in sorted((c for c in cues if c.kind == "type"), key=lambda c: -c.start):
        if not cue.qualified and any(o.kind == "type" and o.qualified and o.start in (cue.end, cue.end + 1)
                                     for o in cues):
            cues = [replace(c, qualified=True) if c is cue else c for c in cues]
    return cues


def _determiner_gai(text: str, end: int, matcher) -> bool:
    """"该" points back ("该设备", "该工单", "该 SK-16") only before a word the lexicon or the registry knows;
    before anything else it is the modal "should" ("液压油该换了")."""
    rest = normalize_key(text[end:end + 4]).lstrip()
    if not rest:
        return False
    if rest[0].isascii():
        return rest[0].isalnum()
    if any(rest[:n] in _lexicon() for n in range(1, len(rest) + 1)):
        return True
    return hasattr(matcher, "knows") and matcher.knows(rest[:2])


@lru_cache(maxsize=1)
def _lexicon() -> frozenset[str]:
    words = {normalize_key(w) for ws in TYPE_WORDS.values() for w in ws}
    words |= {normalize_key(w) for _t, ws in CATEGORIES.values() for w in ws}
    words |= {normalize_key(w) for nouns, _stems in KINDS.values() for w in nouns}
    return frozenset(words)


def _opens_possessor(text: str, start: int, end: int) -> bool:
    return not text[:start].strip() and text[end:end + 1] == "的"


_NEXT_WORDS = re.compile(r"(?:\s+[a-z0-9][a-z0-9'-]*){1,3}", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9][a-z0-9'-]*", re.IGNORECASE)


def _that_points(matcher, text: str, end: int) -> bool:
    """"that" before a noun phrase holding a word the registry or the lexicon knows points back ("that rack", "that
    open ticket", "that Panama-flagged ship"); before others it is a pronoun or says something else ("did that go
    out", "that grinding noise")."""
    m = _NEXT_WORDS.match(text, end)
    if m is None or not hasattr(matcher, "is_name_part"):
        return m is not None
    for raw in _WORD.findall(m.group(0)):
        word = normalize_key(raw.removesuffix("'s"))
        if lexicon_word(word) or matcher.is_name_part(word) or matcher.value_holders(word) or any(
                c[0] == word for c in (matcher.registry_type_cues(word) if hasattr(matcher, "registry_type_cues") else ())):
            return True
    return False


def lexicon_word(word: str) -> bool:
    """A type word, category word or generic noun of the lexicon."""
    return normalize_key(word) in _lexicon()


def known_word(matcher, word: str) -> bool:
    """A word of the lexicon, or one the registry's texts may hold (`EntityMatcher.knows`)."""
    return normalize_key(word) in _lexicon() or matcher.knows(word)


def _qualified(s: str, start: int, end: int) -> bool:
    before = s[start - 1] if start > 0 else ""
    after = s[end] if end < len(s) else ""
    if after == " " and end + 1 < len(s):
        after = s[end + 1]  # "tractor 3", "ticket #5"
    return (
        before.isdigit()
        or before in _QUALIFIER_BEFORE
        or after.isdigit()
        or after in _QUALIFIER_AFTER
        or ordinal_after(s, end)
    )


@lru_cache(maxsize=1)
def _automata() -> tuple[ahocorasick.Automaton, ...]:
    # One automaton per kind: the kinds overlap ("that machine" is a cue, "machine" a type word)
    # and each must see the whole text. Built once; edit the data above and restart.
    type_entries: dict[str, _Entry | None] = {}
    for type_, words in TYPE_WORDS.items():
        for w in words:
            type_entries.setdefault(normalize_key(w), _Entry("type", type_))
    for category, (type_, words) in CATEGORIES.items():
        for w in words:
            type_entries[normalize_key(w)] = _Entry("type", type_, category)
    for noun_kind, (nouns, _stems) in KINDS.items():
        for w in nouns:
            old = type_entries.get(normalize_key(w))
            type_entries[normalize_key(w)] = _Entry("type", old.type if old else None, old.category if old else None,
                                                    noun_kind)
    coref: dict[str, _Entry | None] = {normalize_key(w): _Entry("coref") for w in COREF_CUES}
    long_term: dict[str, _Entry | None] = {
        normalize_key(w): _Entry("long_term") for w in LONG_TERM_CUES
    }
    return tuple(_automaton(entries) for entries in (type_entries, coref, long_term))


def _automaton(entries: dict[str, _Entry | None]) -> ahocorasick.Automaton:
    entries = dict(entries)
    for word in list(entries):
        for compound in NOT_PART_OF.get(word, ()):
            entries.setdefault(normalize_key(compound), None)
    automaton = ahocorasick.Automaton()
    for word, entry in entries.items():
        automaton.add_word(word, (len(word), entry))
    automaton.make_automaton()
    return automaton
