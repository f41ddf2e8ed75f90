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

Only function words and grammar live here: no domain noun decides anything.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from conversations.textutil import pos_cut

__all__ = ["Reading", "onset", "read", "task_scope"]


@dataclass(frozen=True)
class Reading:
    kind: str  # "fact" | "preference" | "event"
    cue: str  # which structure decided it (tests and debugging)


# ---------------------------------------------------------------------------- shared zh pieces
_NUM = r"[\d一二两三四五六七八九十百千万半几]"
_UNIT = r"(?:个?(?:小时|钟头|分钟|天|日|周|星期|礼拜|个?月|季度|年|学期)|公里|千米|里|次|回|趟|班|批|单)"
# 每+数量/单位: every N hours/km/days, 每周三, 每天, 每隔两周.
# "每跑一万公里": a verb may sit between 每 and the amount.
_ZH_EVERY = re.compile(rf"每(?:隔|[\u4e00-\u9fff]{{1,2}}?(?={_NUM}))?{_NUM}*{_UNIT}|每(?:周|星期|礼拜)[一二三四五六日天末]|"
                       rf"[一每](?:天|日|周|星期|个?月|年){_NUM}+次")
_ZH_HABITUAL = re.compile(r"一直|总是|向来|从来|通常|一般|平时|平常|经常|常年|始终|一律|统一|都是")
# Anchors of one dated occasion: a sentence carrying one is about that occasion, not a habit.
_ZH_DATED = re.compile(r"昨天|前天|昨晚|昨夜|今早|今天|今晚|明天|后天|上周|上个?星期|上礼拜|下周|上个?月|下个?月|去年|前年|"
                       r"刚才|刚刚|那天|当天|\d+月\d+[日号]|[一二三四五六七八九十]+月[一二三四五六七八九十]+[日号]")
_ZH_PAST = re.compile(r"昨天|前天|昨晚|昨夜|今早|上周|上个?星期|上礼拜|上个?月|去年|前年|刚才|刚刚|那天|"
                      r"今天(?:早上|上午|下午|中午|凌晨|晚上)|\d+月\d+[日号]")
_ZH_ASPECT = re.compile(r"了|过(?![敏])|完(?!整|全|美)")
_ZH_DEGREE = re.compile(r"很|挺|太|有点|有些|非常|特别|比较|真|好(?![的])")
# Whom an instruction is for: the assistant acting for the user.
_ZH_TO_ME = re.compile(r"给我|发我|告诉我|提醒我|通知我|帮我|替我|发给我|给到我|推给我|推送到我|打电话|"
                       r"我(?:一般|通常|只|都)?要|吧(?=[，,]|$)|[改调换设]一下")
_ZH_REQUEST_LEAD = re.compile(r"请|麻烦|劳驾")
_ZH_MANNER = re.compile(r"用|按|以|通过|写成|做成|列成|整理成|发到|传到|推送到|发送到|放到|放在|分开|分组|汇总|附上|带上|标注")
_ZH_NOW_POINTER = re.compile(r"这|那|一下|刚才|马上|现在|立刻")
_ZH_COND = re.compile(r"^[^，,]{2,}?(?:的话|的时候|时)[，,]?|^[^，,]{2,}?完[，,]|^(?:如果|要是|只要|凡是|一旦)")
_ZH_TOTAL = re.compile(rf"一共|总共|共有|合计|总计|{_NUM}+(?:个|台|辆|头|只|棵|亩|间|名|位|张|套|家|所|条|块)")
_ZH_STATE_OBJ = re.compile(r"对[^，,。了过]{1,12}?(?P<pred>[\u4e00-\u9fff]{2})$")
_ZH_COPULA = re.compile(r"^(?P<subj>[^，,是]{2,}?)(?:[\u4e00-\u9fff]的)?是(?P<val>[^，,]{1,20})$")
_ZH_NOW_RULE = re.compile(rf"(?:现在|目前|如今)[^，,]*{_NUM}+[^，,]*就")
_ZH_CLOCK = re.compile(rf"(?:早上|上午|中午|下午|晚上|凌晨|夜里)?{_NUM}+点(?:半|{_NUM}+分?)?")

# ---------------------------------------------------------------------------- task scope
_ZH_DEICTIC = re.compile(r"今天|今晚|今早|这(?:次|回|一次|一回|份|批|单|趟|轮|个版本|期|周的|场)|本(?:次|轮|期|单|批)|此次|这一")
_ZH_PROVISIONAL = re.compile(r"先|暂时|暂且|临时|只|就行|就好|即可|不用|别|跳过|不要|不加|不放|不写|不提|不算")
_ZH_LASTING = re.compile(r"(?<![了完之])以后|今后|往后|每次|默认|一直|总是|始终|永远|从今|从现在")

_EN_DEICTIC = re.compile(r"\bthis time\b|\bjust this once\b|\bfor (?:this|these|today|tonight|now|the moment|the time being)\b|"
                         r"\b(?:just|only) (?:for )?(?:today|tonight|now)\b|\btoday only\b|\btemporarily\b", re.I)
_EN_LASTING = re.compile(r"\bfrom now on\b|\bgoing forward\b|\bby default\b|\balways\b|\bevery time\b|\bin (?:the )?future\b", re.I)
_EN_NOT_IMPERATIVE = re.compile(r"^(?:i|we|you|he|she|it|they|the|a|an|my|our|this|that|these|those|there|is|are|was|were|"
                                r"has|have|had|will|would|can|could|\w+ed)\b", re.I)


def task_scope(s: str, lang: str) -> bool:
    """An instruction for the task at hand only ("今天这份先发Word版", "for this order, round up")."""
    if lang == "zh":
        if _ZH_LASTING.search(s) or not _ZH_DEICTIC.search(s):
            return False
        # "这次大修花了两万" / "今天早上投影仪坏了": an occasion that happened is not an instruction.
        return bool(_ZH_PROVISIONAL.search(s)) and not _ZH_PAST_DONE.search(s)
    if _EN_LASTING.search(s):
        return False
    m = _EN_DEICTIC.search(s)
    if not m:
        return False
    # What is left once the anchor phrase is removed must be an instruction: an imperative verb
    # ("leave out the billing codes") or a provisional "only/just/skip".
    rest = (s[:m.start()] + " " + s[m.end():]).strip(" ,;:-")
    rest = re.sub(r"^(?:just|only|please)\s+", "", rest, flags=re.I)
    return bool(rest) and not _EN_NOT_IMPERATIVE.match(rest)


_ZH_PAST_DONE = re.compile(r"了[。！!]?$|花了|用了|坏了|完成了")


# ---------------------------------------------------------------------------- zh reading
def _read_zh(s: str) -> Reading | None:
    first = re.split(r"[，,；;]", s, maxsplit=1)[0]
    dated = bool(_ZH_DATED.search(s))
    past = bool(_ZH_PAST.search(s))
    if past and _ZH_ASPECT.search(s):
        return Reading("event", "past anchor + aspect")
    to_me = bool(_ZH_TO_ME.search(s))
    # A request about a class of things: "周报请用表格的形式给我", "告警请直接发到值班群里".
    m = _ZH_REQUEST_LEAD.search(s)
    if m and not dated:
        topic = s[:m.start()].strip("，, ")
        rest = s[m.end():]
        if topic and _nominal(topic) and not _ZH_NOW_POINTER.search(topic):
            return Reading("preference", "topic + request")
        manner = _ZH_MANNER.match(rest.lstrip("你您帮我"))
        if manner and not _ZH_NOW_POINTER.search(topic + rest) and not re.search(r"我", topic):
            return Reading("preference", "request + manner")
    # A generic conditional: "订酒店的话我一般要无烟大床房", "保养完，验收单拍照发我微信就行".
    if _ZH_COND.search(s) and not dated and (to_me or _ZH_HABITUAL.search(s) or re.search(r"只|就行|就好|即可", s)):
        return Reading("preference" if to_me or re.search(r"我", s) else "fact", "generic conditional")
    if dated:
        return None
    if _ZH_EVERY.search(s):
        return Reading("preference" if to_me else "fact", "habitual frequency")
    if _ZH_HABITUAL.search(s) and not _ZH_DEGREE.search(first):
        return Reading("preference" if to_me else "fact", "habitual adverb")
    # A topic whose instruction covers every case: "以后" is a cue word; "都" after a nominal topic
    # followed by an instruction to the assistant says the same.
    m2 = re.search(r"都", s)
    if m2 and to_me and _nominal(s[:m2.start()]):
        return Reading("preference", "topic + 都 + instruction")
    cop = _ZH_COPULA.match(first)
    if cop and _nominal(cop.group("subj")) and not _ZH_ASPECT.search(first) and not _ZH_DEGREE.search(first):
        return Reading("fact", "nominal subject + copula")
    # "现在车厢超过8度就报警": a rule said to hold now (a condition with 就 and an amount).
    for clause in re.split(r"[，,；;]", s):
        if _ZH_NOW_RULE.search(clause):
            return Reading("preference" if to_me else "fact", "rule that holds now")
    st = _ZH_STATE_OBJ.search(first)
    if st and not _ZH_ASPECT.search(first) and not _ZH_DEGREE.search(first):
        return Reading("fact", "对-phrase + state predicate")
    if _ZH_TOTAL.search(s) and re.search(r"了|有|种|养|是", s) and not _ZH_DEGREE.search(s) and _nominal_start(s):
        return Reading("fact", "total amount")
    if _ZH_CLOCK.search(s) and not _ZH_ASPECT.search(s) and _nominal_start(s):
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
_EN_PAST_ANCHOR = re.compile(r"\byesterday\b|\blast (?:night|week|month|year|friday|monday|tuesday|wednesday|thursday|"
                             r"saturday|sunday|spring|summer|autumn|fall|winter)\b|\bago\b|\bthis (?:morning|afternoon)\b|"
                             r"\bearlier\b|\bon (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.I)
_EN_PAST_AUX = re.compile(r"\b(?:was|were|did|had|went|came|broke|lost|sold|bought|paid|got|took|made|gave|ran|"
                          r"began|held|met|sent|spent|built|burst|hit|shut|put|fell|left|found|brought)\b", re.I)
_EN_PRESENT_AUX = re.compile(r"\b(?:is|are|am|has|have|does|do)\b|'s\b|'re\b", re.I)
_EN_HABITUAL = re.compile(r"\bevery\b|\beach (?:day|week|month|year|morning|night|quarter)\b|\b(?:daily|weekly|monthly|"
                          r"yearly|annually|nightly)\b|\b\w+ times? (?:a|per) (?:day|week|month|year)\b|"
                          r"\b(?:always|usually|normally|typically|generally|mostly)\b", re.I)
_EN_DETERMINER = re.compile(r"^(?:the|a|an|our|my|your|his|her|their|its|this|that|these|those|each|every|all|some|most|"
                            r"no|two|three|four|five|six|seven|eight|nine|ten|\d+|[\w-]+-\w+)$", re.I)
_EN_PRONOUN_PLURAL = re.compile(r"^(?:we|they|i|you)$", re.I)
_EN_NOT_VERB_S = re.compile(r"(?:ss|us|is|ics|'s)$", re.I)
_EN_REQUEST = re.compile(r"^(?:please\s+)(?P<rest>.+)$", re.I)
_EN_MANNER = re.compile(r"\b(?:as an? |as |in |by |with |via |through |grouped |sorted |per |without |before |after )", re.I)
_EN_NOW = re.compile(r"\b(?:this|that|these|those|today|tonight|tomorrow|now|right away|asap|it|them)\b", re.I)


# -ed words that are states or nouns, never a past action ("based", "need", "hundred").
_ADJ_ED = r"(?:based|located|called|named|supposed|married|retired|need|indeed|speed|seed|feed|hundred|shed)\b"


def _words(s: str) -> list[str]:
    return re.findall(r"[A-Za-z][\w'-]*|\d[\d.,:]*", s)


def _finite_present(words: list[str]) -> bool:
    """A present-tense main verb after the subject noun phrase, by morphology: "the depot runs",
    "we release", "Dr. Patel is", "the autoclave is serviced". The subject is the leading run of
    determiners, numbers, capitalised names and nouns; the first word after it is the verb."""
    for i, w in enumerate(words[:8]):
        lw = w.lower()
        if _EN_PRESENT_AUX.fullmatch(lw) or lw in ("'s", "'re"):
            return i > 0
        if i == 0:
            if _EN_PRONOUN_PLURAL.match(lw):
                nxt = words[1].lower() if len(words) > 1 else ""
                # "we release", "I keep": a base-form verb after a plural/first-person pronoun.
                return bool(nxt) and not re.search(r"ed$", nxt) and not _EN_PAST_AUX.fullmatch(nxt) \
                    and nxt not in ("will", "would", "can", "could", "should", "might", "may", "must", "want", "need")
            continue
        if _EN_DETERMINER.match(lw) or w[:1].isupper():
            continue
        prev = words[i - 1]
        # "runs", "opens", "goes", "closes": a -s form right after a noun-like word.
        if lw.endswith("s") and not _EN_NOT_VERB_S.search(lw) and (prev[:1].isupper() or not _EN_DETERMINER.match(prev.lower())):
            nxt = words[i + 1].lower() if i + 1 < len(words) else ""
            if not nxt or _EN_DETERMINER.match(nxt) or nxt.endswith("ed") or nxt in ("on", "in", "at", "to", "out", "up", "through", "from",
                                                                  "every", "about", "with", "for", "by", "most"):
                return True
    return False


def _read_en(s: str) -> Reading | None:
    words = _words(s)
    if not words:
        return None
    past_form = bool(_EN_PAST_AUX.search(s) or re.search(r"\b(?!" + _ADJ_ED + r")\w{3,}ed\b", s, re.I))
    if _EN_PAST_ANCHOR.search(s) and past_form:
        return Reading("event", "past anchor + past form")
    if _EN_PAST_ANCHOR.search(s) or _EN_PAST_AUX.search(s):
        return None  # past without a date: the lexicon's event rules decide
    m = _EN_REQUEST.match(s)
    if m:
        rest = m.group("rest")
        if _EN_MANNER.search(rest) and not _EN_NOW.search(rest):
            return Reading("preference", "please + manner")
        return None
    present = _finite_present(words)
    if present and _EN_HABITUAL.search(s):
        return Reading("fact", "present + habitual")
    if present:
        return Reading("fact", "finite present")
    return None


def read(s: str, lang: str) -> Reading | None:
    """The structural reading of one user sentence (already stripped of filler and correction
    leads), or None when structure alone says nothing."""
    return _read_zh(s) if lang == "zh" else _read_en(s)


_ZH_ONSET = re.compile(r"从[^，,]{1,8}?(?:起|开始)|自[^，,]{1,8}?起")
_EN_ONSET = re.compile(r"\b(?:starting|from|as of|beginning|effective)\s+(?:next|the\s+\w+\s+of|\w+day|\d)", re.I)


def onset(s: str, lang: str) -> bool:
    """"从下个月起 / starting next month": the sentence says from when a new state holds."""
    return bool((_ZH_ONSET if lang == "zh" else _EN_ONSET).search(s))
