"""Standing statement or not, read from sentence structure (issue 15: everyday wording).

The cue lexicons of rules_zh.py / rules_en.py recognise a standing statement by what it says
("以后", "I prefer", a slot pattern). Everyday wording often carries none of those words and is
still plainly standing: "1号收割机每250小时保养一次", "周报请用表格的形式给我", "我老婆对芒果过敏",
"the depot runs twenty-four trucks". What makes them standing is grammatical, not lexical:

- habitual frequency: 每+数量/单位, 一周三次, every/each + unit, N times a week, daily/weekly;
- habitual or generic adverbs: 一直/总是/通常/一般/向来, always/usually/normally;
- a request about a class of things: a topic noun phrase before 请/麻烦 ("周报请…"), or
  请 with a manner complement (用/按/以/通过 X, 发到/写成) and nothing that points at now;
- a generic conditional ("订酒店的话…", "保养完，…就行") with no date: a rule for every time;
- a predicate of state: "X对Y过敏/负责" (对-phrase, predicate without aspect marker or degree
  adverb), totals ("一共/总共", "V了+数量" with no dated anchor);
- English: a finite present-tense main verb (3rd person -s, be/have present, present passive)
  with no past marker, read by morphology since no tagger is installed; a past form (-ed or
  irregular, was/were/did) or a past time anchor makes it an event.

A temporal-scope detector sits beside it: a deictic-now anchor (今天/今晚/这+量词/本+量词/这次,
this time/for this X/for now/tonight) together with a provisional instruction (先/暂时/只/就行/不用
or an English imperative) marks the sentence as an instruction for the task at hand, which must
never become a standing preference. "以后/每次/默认/一直" (habitual) overrides it.

Only function words and grammar decide (the patterns are in lexicons/standing.toml): no domain
noun decides anything.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from common.text import pos_cut
from memory.extraction.patterns import load_patterns

__all__ = ["Reading", "habitual", "onset", "read", "task_scope"]


@dataclass(frozen=True)
class Reading:
    kind: str  # "fact" | "preference" | "event"
    cue: str  # which structure decided it (tests and debugging)


# The patterns, by language: memory/extraction/lexicons/standing.toml.
_PATTERNS = load_patterns("standing")
_ZH, _EN = _PATTERNS.zh, _PATTERNS.en


# ---------------------------------------------------------------------------- task scope
def task_scope(s: str, lang: str) -> bool:
    """An instruction for the task at hand only ("今天这份先发Word版", "for this order, round up")."""
    if lang == "zh":
        if _ZH.lasting.search(s) or not _ZH.deictic.search(s):
            return False
        # "这次大修花了两万" / "今天早上投影仪坏了": an occasion that happened is not an instruction.
        return bool(_ZH.provisional.search(s)) and not _ZH.past_done.search(s)
    if _EN.lasting.search(s):
        return False
    m = _EN.deictic.search(s)
    if not m:
        return False
    # What is left once the anchor phrase is removed must be an instruction: an imperative verb
    # ("leave out the billing codes") or a provisional "only/just/skip".
    rest = (s[:m.start()] + " " + s[m.end():]).strip(" ,;:-")
    rest = re.sub(r"^(?:just|only|please)\s+", "", rest, flags=re.I)
    return bool(rest) and not _EN.not_imperative.match(rest)


# ---------------------------------------------------------------------------- zh reading
def _read_zh(s: str) -> Reading | None:
    first = re.split(r"[，,；;]", s, maxsplit=1)[0]
    dated = bool(_ZH.dated.search(s))
    past = bool(_ZH.past.search(s))
    if past and _ZH.aspect.search(s):
        return Reading("event", "past anchor + aspect")
    to_me = bool(_ZH.to_me.search(s))
    # A request about a class of things: "周报请用表格的形式给我", "告警请直接发到值班群里".
    m = _ZH.request_lead.search(s)
    if m and not dated:
        topic = s[:m.start()].strip("，, ")
        rest = s[m.end():]
        if topic and _nominal(topic) and not _ZH.now_pointer.search(topic):
            return Reading("preference", "topic + request")
        manner = _ZH.manner.match(rest.lstrip("你您帮我"))
        if manner and not _ZH.now_pointer.search(topic + rest) and not re.search(r"我", topic):
            return Reading("preference", "request + manner")
    # A generic conditional: "订酒店的话我一般要无烟大床房", "保养完，验收单拍照发我微信就行".
    if _ZH.cond.search(s) and not dated and (to_me or _ZH.habitual.search(s) or re.search(r"只|就行|就好|即可", s)):
        return Reading("preference" if to_me or re.search(r"我", s) else "fact", "generic conditional")
    if dated:
        return None
    if _ZH.every.search(s):
        return Reading("preference" if to_me else "fact", "habitual frequency")
    if _ZH.habitual.search(s) and not _ZH.degree.search(first):
        return Reading("preference" if to_me else "fact", "habitual adverb")
    # A topic whose instruction covers every case: "以后" is a cue word; "都" after a nominal topic
    # followed by an instruction to the assistant says the same.
    m2 = re.search(r"都", s)
    if m2 and to_me and _nominal(s[:m2.start()]):
        return Reading("preference", "topic + 都 + instruction")
    cop = _ZH.copula.match(first)
    if cop and _nominal(cop.group("subj")) and not _ZH.aspect.search(first) and not _ZH.degree.search(first):
        return Reading("fact", "nominal subject + copula")
    # "现在车厢超过8度就报警": a rule said to hold now (a condition with 就 and an amount).
    for clause in re.split(r"[，,；;]", s):
        if _ZH.now_rule.search(clause):
            return Reading("preference" if to_me else "fact", "rule that holds now")
    st = _ZH.state_obj.search(first)
    if st and not _ZH.aspect.search(first) and not _ZH.degree.search(first):
        return Reading("fact", "对-phrase + state predicate")
    if _ZH.total.search(s) and re.search(r"了|有|种|养|是", s) and not _ZH.degree.search(s) and _nominal_start(s):
        return Reading("fact", "total amount")
    if _ZH.clock.search(s) and not _ZH.aspect.search(s) and _nominal_start(s):
        return Reading("fact", "schedule at a clock time")
    return None


_NOMINAL_FLAGS = ("n", "nr", "ns", "nt", "nz", "nrt", "l", "j", "vn", "eng", "an", "r", "m", "x")


def _nominal(text: str) -> bool:
    """The phrase is a noun phrase (topic), not a clause: no verb outside a compound noun."""
    tokens = [(w, f) for w, f in pos_cut(text) if w.strip()]
    if not tokens:
        return False
    if tokens[0][0] in ("帮", "给", "替", "把", "让", "叫"):
        return False
    last = tokens[-1][1]
    return last.startswith("n") or last in ("vn", "l", "j", "eng", "nz")


def _nominal_start(s: str) -> bool:
    tokens = [(w, f) for w, f in pos_cut(s) if w.strip()]
    return bool(tokens) and (tokens[0][1].startswith("n") or tokens[0][1] in ("r", "l", "j", "m", "eng", "vn", "nz", "t"))


# ---------------------------------------------------------------------------- en reading
def _words(s: str) -> list[str]:
    return re.findall(r"[A-Za-z][\w'-]*|\d[\d.,:]*", s)


def _finite_present(words: list[str]) -> bool:
    """A present-tense main verb after the subject noun phrase, by morphology: "the depot runs",
    "we release", "Dr. Patel is", "the autoclave is serviced". The subject is the leading run of
    determiners, numbers, capitalised names and nouns; the first word after it is the verb."""
    for i, w in enumerate(words[:8]):
        lw = w.lower()
        if _EN.present_aux.fullmatch(lw) or lw in ("'s", "'re"):
            return i > 0
        if i == 0:
            if _EN.pronoun_plural.match(lw):
                nxt = words[1].lower() if len(words) > 1 else ""
                # "we release", "I keep": a base-form verb after a plural/first-person pronoun.
                return bool(nxt) and not re.search(r"ed$", nxt) and not _EN.past_aux.fullmatch(nxt) \
                    and nxt not in ("will", "would", "can", "could", "should", "might", "may", "must", "want", "need")
            continue
        if _EN.determiner.match(lw) or w[:1].isupper():
            continue
        prev = words[i - 1]
        # "runs", "opens", "goes", "closes": a -s form right after a noun-like word.
        if lw.endswith("s") and not _EN.not_verb_s.search(lw) and (prev[:1].isupper() or not _EN.determiner.match(prev.lower())):
            nxt = words[i + 1].lower() if i + 1 < len(words) else ""
            if not nxt or _EN.determiner.match(nxt) or nxt.endswith("ed") or nxt in ("on", "in", "at", "to", "out", "up", "through", "from",
                                                                  "every", "about", "with", "for", "by", "most"):
                return True
    return False


def _read_en(s: str) -> Reading | None:
    words = _words(s)
    if not words:
        return None
    past_form = bool(_EN.past_aux.search(s) or _EN.past_ed.search(s))
    if _EN.past_anchor.search(s) and past_form:
        return Reading("event", "past anchor + past form")
    if _EN.past_anchor.search(s) or _EN.past_aux.search(s):
        return None  # past without a date: the lexicon's event rules decide
    m = _EN.request.match(s)
    if m:
        rest = m.group("rest")
        if _EN.manner.search(rest) and not _EN.now.search(rest):
            return Reading("preference", "please + manner")
        return None
    present = _finite_present(words) or bool(_EN.self_copula.match(s))
    if present and _EN.habitual.search(s):
        return Reading("fact", "present + habitual")
    if present:
        return Reading("fact", "finite present")
    return None


def read(s: str, lang: str) -> Reading | None:
    """The structural reading of one user sentence (already stripped of filler and correction
    leads), or None when structure alone says nothing."""
    return _read_zh(s) if lang == "zh" else _read_en(s)


# The readings that say the sentence describes a routine: what the user does as a rule, whatever it is about.
_HABITUAL_CUES = frozenset({"habitual frequency", "habitual adverb", "present + habitual"})


def habitual(s: str, lang: str) -> bool:
    """A routine stated without a feeling: "我晚饭一般七点吃", "I go hiking every weekend" — a standing fact
    even when its topic is everyday life (meals, weekends, sleep), where a topic word alone would make
    the sentence small talk. A degree word ("每天都很开心") makes it a mood, not a routine."""
    reading = read(s, lang)
    if reading is None or reading.cue not in _HABITUAL_CUES:
        return False
    return not (_ZH.degree if lang == "zh" else _EN.degree).search(s)


def onset(s: str, lang: str) -> bool:
    """"从下个月起 / starting next month": the sentence says from when a new state holds."""
    return bool((_ZH.onset if lang == "zh" else _EN.onset).search(s))
