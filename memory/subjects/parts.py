"""Split a standing statement into its subject (attribute words, predicate, identifiers) and its
value (numbers, names, models, the object after a value marker).

Chinese uses jieba's part-of-speech tags; English uses word shapes (capitals, digits) and snowball
stems. Both work clause by clause: a negated clause ("短信不用了", "not by email") holds old values,
a clause without a marker holds subject words ("提醒方式改一下").
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from memory.extraction.text import detect_lang, pos_cut, split_speaker
from memory.subjects import vocabulary as V

__all__ = ["StatementParts", "parse"]


@dataclass(frozen=True)
class StatementParts:
    lang: str
    terms: tuple[str, ...]  # canonical subject words, in order (weak words included, marked by `weak`)
    weak: frozenset[str]
    heads: frozenset[str]  # the attribute each clause is about (last strong word before its value)
    idents: frozenset[str]  # identifiers that pick one thing out ("1号", "A3", "#2"): part of the subject
    values: tuple[str, ...]  # stated values, normalised
    old_values: tuple[str, ...]  # values of negated clauses ("不用短信了" -> 短信)
    preds: frozenset[str]  # marker classes used (be / loc / have / name / change)
    cue: bool  # a change cue is present
    masked: str  # the statement with its values replaced by a placeholder
    # Who the statement is about when a transcript line names its speaker ("Caroline: I moved to
    # Boston", memory/extraction/rules.py); None: the user. Casefolded.
    speaker: str | None = None

    @property
    def strong_terms(self) -> set[str]:
        return {t for t in self.terms if t not in self.weak}


# ---------------------------------------------------------------------------- Chinese
_PUNCT = re.compile(r"^[\s，,。.！!？?；;：:、（）()\[\]“”\"'‘’…~～—-]+$")
_CLAUSE_END = set("，,；;。！!？?")
_ZH_DROP_FLAGS = {"r", "rr", "rz", "t", "tg", "d", "p", "c", "u", "uj", "ul", "uz", "ug", "uv", "ud", "y", "e", "o",
                  "f", "df", "dg", "zg"}
_ZH_STOP = set("请 给 让 把 要 想 能 会 可以 就 都 也 还 又 只 再 一直 总是 已经 了 的 地 得 着 过 吧 呢 啊 呀 哦 "
               "对了 另外 还有 以后 今后 往后 之后 从今往后 从现在起 从现在开始 从今天起 一下 一些 一点 我 我们 你 您 "
               "咱们 俺 本人 用户 他 她 它 他们 家里 自己 这 那 这个 那个 记住 记得 帮 帮我 给我 告诉 麻烦 好的 嗯 "
               "现在 目前 当前 默认 一律 始终 每次 务必 不 没".split())
_ZH_NOMINAL = ("n", "nr", "nrt", "nrfg", "ns", "nt", "nz", "ng", "eng", "m", "mq", "q", "x", "a", "b", "j", "l",
               "i", "s", "an", "vn", "k", "h")
_ZH_IDENT = re.compile(r"^(?:\d+|[一二三四五六七八九十]+|[A-Za-z]+\d+|#\d+|[A-Za-z]\d*)号?$")


_ZH_NO_LONGER = re.compile(r"不[\u4e00-\u9fff].*了$")


def _nominal(flag: str) -> bool:
    return flag.startswith(_ZH_NOMINAL)


def _zh_canon(word: str) -> str:
    return V.ZH_SYNONYMS.get(word, word)


def _zh_marker_at(words: list[str], i: int) -> tuple[str, int] | None:
    """The longest value marker starting at token i (markers may span jieba tokens: 控制+在)."""
    for span in (3, 2, 1):
        if i + span <= len(words):
            joined = "".join(words[i:i + span])
            if joined in V.ZH_MARKERS:
                return V.ZH_MARKERS[joined], span
    return None


def _zh_clauses(tokens: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    clauses, current = [], []
    for word, flag in tokens:
        if word in _CLAUSE_END:
            if current:
                clauses.append(current)
            current = []
        elif not _PUNCT.match(word) or word in ("-", "#"):
            current.append((word, flag))
    if current:
        clauses.append(current)
    return clauses


def _zh_value_run(tokens: list[tuple[str, str]], start: int, pred: str) -> tuple[list[str], list[str], int]:
    """(value words, attribute words, end) from `start`. Verbs right after the marker belong to the
    predicate ("喜欢喝美式咖啡": 喝); then a run of nominal tokens is the value. For a `have` marker
    only the count is the value and the counted noun names the attribute ("有三台收割机")."""
    words = [w for w, _ in tokens]
    i, attr, value = start, [], []
    while i + 1 < len(tokens) and tokens[i][1].startswith("v") and tokens[i][1] != "vn" \
            and not _zh_marker_at(words, i):
        attr.append(tokens[i][0])
        i += 1
    while i < len(tokens):
        word, flag = tokens[i]
        first = not value
        if first and (word in ("了", "成", "为", "到") or flag in ("ul", "uz")):
            i += 1
            continue
        if word in _ZH_STOP or (value and _zh_marker_at(words, i)):
            break
        if (_nominal(flag) and (flag != "vn" or first)) or word == "-" or (first and flag in ("zg", "f")
                                                                                 and i + 1 < len(tokens)
                                                                                 and _nominal(tokens[i + 1][1])):
            if pred == "have" and not flag.startswith(("m", "q")) and word != "-":
                attr.append(word)
            else:
                value.append(word)
            i += 1
            continue
        break
    return value, attr, i


def clause_flags(clause: list[tuple[str, str]], word: str) -> str:
    return next((f for w, f in reversed(clause) if w == word), "")

def _zh_parse(text: str) -> StatementParts:
    tokens = pos_cut(text)
    terms: list[str] = []
    heads: set[str] = set()
    idents: set[str] = set()
    values: list[str] = []
    old_values: list[str] = []
    preds: set[str] = set()
    masked = text
    cue = any(c in text for c in V.ZH_CHANGE_CUES)
    clauses = _zh_clauses(tokens)
    multi = len(clauses) > 1
    for clause in clauses:
        joined = "".join(w for w, _ in clause)
        # "短信不用了" / "前台不代收快递了": a "不 + verb … 了" clause says what no longer holds.
        negated = any(n in joined for n in V.ZH_NEGATION) or bool(_ZH_NO_LONGER.search(joined))
        words = [w for w, _ in clause]
        markers = [(i, m) for i in range(len(clause)) if (m := _zh_marker_at(words, i))]
        # The first marker that is followed by a value ("车队用的加油卡是中石化的": 是, not 用).
        marker_at = next((mk for mk in markers if _zh_value_run(clause, mk[0] + mk[1][1], mk[1][0])[0]),
                         markers[0] if markers else None)
        if negated and (multi or marker_at is None):
            # "不要发邮件" / "短信不用了" / "李明离职了": what no longer holds.
            for word, flag in clause:
                if word in _ZH_STOP or any(word in n or n in word for n in V.ZH_NEGATION) or flag.startswith(("d", "u")):
                    continue
                if _nominal(flag) or flag.startswith("v"):
                    old_values.append(word)
            continue
        pre_end = marker_at[0] if marker_at else len(clause)
        clause_terms: list[str] = []
        for j in range(pre_end):
            word, flag = clause[j]
            nxt = clause[j + 1][0] if j + 1 < len(clause) else ""
            if _ZH_IDENT.match(word) and (nxt in ("号", "#") or word.endswith("号") or re.search(r"[A-Za-z]", word)):
                idents.add(word.rstrip("号"))
                continue
            if word == "号":
                continue
            if word in _ZH_STOP or flag in _ZH_DROP_FLAGS or flag.startswith("r") or word in V.ZH_MARKERS:
                continue
            if flag.startswith("m") or flag == "eng" and re.search(r"\d", word):
                values.append(word)  # a number before the marker is a value ("每天7点提醒我")
                masked = masked.replace(word, V.ZH_PLACEHOLDER, 1)
                continue
            clause_terms.append(_zh_canon(word))
        strong = [t for t in clause_terms if t not in V.ZH_WEAK]
        if marker_at is not None:
            pred, span = marker_at[1]
            preds.add(pred)
            value, nouns, end = _zh_value_run(clause, marker_at[0] + span, pred)
            tail = [w for w, f in clause[end + 1:] if _nominal(f)] if end < len(clause) and clause[end][0] == "的" else []
            if pred == "be" and strong and value and tail:
                # "张老师是孩子的班主任": the value comes first, the attribute after 的.
                raw = [w for w, _ in clause[:marker_at[0]] if _zh_canon(w) in strong]
                values.append("".join(raw))
                for word in raw:
                    masked = masked.replace(word, V.ZH_PLACEHOLDER, 1)
                clause_terms = [_zh_canon(w) for w in value + tail]
                heads.add(_zh_canon(tail[-1]))
                terms.extend(clause_terms)
                continue
            if len(value) >= 2 and clause_flags(clause, value[-1]) == "n" and pred != "have" and not strong:
                # "喜欢喝美式咖啡" / "是刘医生": the last common noun names the attribute.
                nouns.append(value.pop())
            if value:
                text_value = "".join(value)
                values.append(text_value)
                masked = masked.replace(text_value, V.ZH_PLACEHOLDER, 1)
            for noun in nouns:
                clause_terms.append(_zh_canon(noun))
            # Words after the value are the predicate ("用微信提醒我": 提醒).
            after = [(_zh_canon(w), f) for w, f in clause[end:]
                     if w not in _ZH_STOP and f not in _ZH_DROP_FLAGS and not f.startswith(("r", "m"))
                     and w not in V.ZH_MARKERS]
            clause_terms.extend(w for w, _ in after)
            if nouns and (pred == "have" or not strong):
                heads.add(_zh_canon(nouns[-1]))
            elif strong:
                heads.add(strong[-1])
            elif after:
                heads.add(after[0][0])
            else:
                heads.add("地址" if pred == "loc" else f"@{pred}")  # "我住在杭州": where the user lives
        else:
            # A clause without a value names its attribute only with a noun ("帮我设一下" names none).
            nouns = [_zh_canon(w) for w, f in clause if f.startswith(("n", "vn", "eng", "j")) and not f.startswith("nr")
                     and _zh_canon(w) in strong]
            if nouns:
                heads.add(nouns[-1])
        terms.extend(clause_terms)
    weak = frozenset(t for t in terms if t in V.ZH_WEAK)
    return StatementParts(lang="zh", terms=tuple(dict.fromkeys(terms)), weak=weak, heads=frozenset(heads),
                          idents=frozenset(idents), values=tuple(_norm(v) for v in values if _norm(v)),
                          old_values=tuple(_norm(v) for v in old_values if _norm(v)), preds=frozenset(preds),
                          cue=cue, masked=masked)


# ---------------------------------------------------------------------------- English
_EN_TOKEN = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d[\w.:/-]*|[^\sA-Za-z\d]")
_EN_STOP, _EN_PREP_STOP = V.EN_STOP, V.EN_PREP_STOP
_EN_NUMBERISH = re.compile(r"\d")
# Copulas and stance verbs name no attribute ("I want X", "I prefer Y"); "I drive a Civic" does.
_EN_STANCE = {"prefer", "prefers", "preferred", "like", "likes", "want", "wants", "need", "needs"}
_EN_COPULA = {"is", "are", "am", "was", "were", "be", "=", "as", "by", "prefer", "prefers", "preferred", "like",
              "likes", "want", "wants", "choose", "chose", "pick", "use", "uses", "using", "used", "via", "through"}
_EN_CHANGE_VERBS = {"switched", "switch", "changed", "change", "moved", "move", "upgraded", "migrated", "replaced",
                    "set", "put"}


@lru_cache(maxsize=1)
def _stemmer():
    import snowballstemmer

    return snowballstemmer.stemmer("english")


_EN_AGENT = re.compile(r"(?:ant|ent|ist|ian|er|or|eer)$")


def _en_canon(word: str) -> str:
    low = word.lower().replace("’", "'")
    base = low[:-1] if low.endswith("s") and not low.endswith("ss") and len(low) > 3 else low
    if _EN_AGENT.search(base):
        # A person is not the activity: snowball turns "accountant" into "account", "manager"
        # into "manag" (as "manages"); agent nouns are kept whole.
        return V.EN_SYNONYMS.get(base, base)
    stem = _stemmer().stemWord(low)
    return V.EN_SYNONYMS.get(stem, stem)


def _en_marker_at(words: list[str], i: int) -> tuple[str, int] | None:
    for span in (3, 2, 1):
        if i + span <= len(words):
            joined = " ".join(words[i:i + span]).lower()
            if joined in V.EN_MARKERS:
                return V.EN_MARKERS[joined], span
    return None


def _en_parse(text: str) -> StatementParts:
    terms: list[str] = []
    heads: set[str] = set()
    idents: set[str] = set()
    values: list[str] = []
    old_values: list[str] = []
    preds: set[str] = set()
    body = re.sub(r"\b(Dr|Mr|Mrs|Ms|No|St|Prof|Nr)\.", r"\1", text.strip()).rstrip(".!?。 ")
    masked = body
    lower = f" {text.lower()} "
    body = re.sub(r"\bby default\b|\bfrom now on\b|\bgoing forward\b", " ", body, flags=re.I)
    cue = any(c in lower for c in V.EN_CHANGE_CUES)
    clauses = [c for c in re.split(r"[,;!?]|\.\s+(?=[A-Z])|\bbut\b|\band now\b|(?=\binstead of\b)", body) if c and c.strip()]
    multi = len(clauses) > 1
    for clause in clauses:
        words = _EN_TOKEN.findall(clause)
        low = f" {clause.lower()} "
        negated = any(n in low for n in V.EN_NEGATION)
        if negated and multi:
            old_values.extend(w.lower() for w in words if w.lower() not in _EN_STOP and w.lower() not in _EN_PREP_STOP
                              and not any(w.lower() in n for n in V.EN_NEGATION))
            continue
        marker_at = next(((i, m) for i in range(len(words)) if (m := _en_marker_at(words, i))), None)
        pre_end = marker_at[0] if marker_at else len(words)
        clause_terms: list[str] = []
        for j in range(pre_end):
            word = words[j]
            low_w = word.lower()
            if low_w in ("no", "#", "number") and j + 1 < len(words) and _EN_NUMBERISH.search(words[j + 1]):
                continue
            if _EN_NUMBERISH.search(word):
                prev = words[j - 1].lower() if j else ""
                if prev in ("no", "#", "number") or re.search(r"[A-Za-z]", word):
                    idents.add(low_w)
                else:
                    values.append(low_w)
                continue
            if low_w in _EN_STOP or low_w in _EN_PREP_STOP or not word[0].isalpha():
                continue
            clause_terms.append(_en_canon(word))
        if marker_at is not None:
            pred, span = marker_at[1]
            preds.add(pred)
            i = marker_at[0] + span
            if pred == "change" and words[marker_at[0]].lower() in _EN_CHANGE_VERBS:
                # "switched our CRM to HubSpot": the words before "to" name the subject.
                while i < len(words) and words[i].lower() not in ("to", "with", "by"):
                    if words[i][0].isalpha() and words[i].lower() not in _EN_STOP:
                        clause_terms.append(_en_canon(words[i]))
                    i += 1
                i += 1
            strong = [t for t in clause_terms if t not in V.EN_WEAK]
            value: list[str] = []
            nouns: list[str] = []
            while i < len(words):
                word = words[i]
                low_w = word.lower()
                if value and (low_w in _EN_PREP_STOP or low_w in _EN_STOP or _en_marker_at(words, i)):
                    break
                if not value and (low_w in _EN_STOP or low_w in ("now", "to", "a", "an", "the")):
                    i += 1
                    continue
                if not word[0].isalnum():
                    if value:
                        break
                    i += 1
                    continue
                if pred == "have" and not _EN_NUMBERISH.search(word) and low_w not in ("one", "two", "three", "four",
                                                                                       "five", "six", "seven", "eight",
                                                                                       "nine", "ten"):
                    nouns.append(_en_canon(word))
                else:
                    value.append(word)
                i += 1
            stance = words[marker_at[0]].lower() in _EN_STANCE and not strong
            if stance and len(value) >= 2 and value[0].isalpha() and value[0].islower():
                # "I want invoices sent as PDF": what is wanted names the attribute.
                nouns.append(_en_canon(value.pop(0)))
            elif len(value) >= 2 and value[-1].isalpha() and value[-1].islower() and not strong:
                # "prefer short answers": the last common noun names the attribute, the rest is the value.
                nouns.append(_en_canon(value.pop()))
            if value:
                phrase = " ".join(value)
                values.append(phrase.lower())
                masked = masked.replace(phrase, V.EN_PLACEHOLDER, 1)
            clause_terms.extend(nouns)
            after = [_en_canon(w) for w in words[i:] if w[0].isalpha() and w.lower() not in _EN_STOP
                     and w.lower() not in _EN_PREP_STOP]
            clause_terms.extend(after)
            if nouns and (pred == "have" or not strong):
                heads.add(nouns[-1])
            elif strong:
                heads.add(strong[-1])
            elif after:
                heads.add(after[0])
            elif pred == "loc":
                heads.add("address")  # "I live in Boston" / "I moved to Seattle": where the user lives
            elif pred == "be" and words[marker_at[0]].lower() not in _EN_COPULA:
                heads.add("@" + _en_canon(words[marker_at[0]]))  # "I drive a Civic": the verb is the attribute
            else:
                heads.add(f"@{pred}")
        else:
            strong = [t for t in clause_terms if t not in V.EN_WEAK]
            if strong:
                heads.add(strong[-1])
        terms.extend(clause_terms)
    weak = frozenset(t for t in terms if t in V.EN_WEAK)
    return StatementParts(lang="en", terms=tuple(dict.fromkeys(terms)), weak=weak, heads=frozenset(heads),
                          idents=frozenset(idents), values=tuple(_norm(v) for v in values if _norm(v)),
                          old_values=tuple(_norm(v) for v in old_values if _norm(v)), preds=frozenset(preds),
                          cue=cue, masked=masked)


# ---------------------------------------------------------------------------- entry point
def _norm(text: str) -> str:
    return re.sub(r"[\s，,。.！!？?；;：:、\"'“”‘’()（）-]+", "", text).casefold()


@lru_cache(maxsize=8192)
def parse(text: str, subject: str | None = None) -> StatementParts:
    """Parts of one statement; `subject` (from an LLM extractor) names the attribute explicitly and
    replaces the parsed subject words, the values still come from the statement."""
    # The speaker label names whose statement it is, not what it is about: parsed apart, so
    # "Caroline" is neither a subject word nor an attribute head.
    speaker, text = split_speaker((text or "").strip())
    lang = detect_lang(text)
    parts = _zh_parse(text) if lang == "zh" else _en_parse(text)
    if subject and subject.strip():
        # The named subject adds to what the words say; it never removes a parsed head, so a
        # subject worded unlike the stored statement ("reminder channel") still meets it.
        named = parse(subject.strip())
        words = tuple(dict.fromkeys((named.terms or tuple(named.values)) + parts.terms))
        heads = (named.heads or frozenset(words[:1])) | parts.heads
        parts = StatementParts(lang=parts.lang, terms=words, weak=named.weak | parts.weak, heads=heads,
                               idents=named.idents | parts.idents, values=parts.values, old_values=parts.old_values,
                               preds=parts.preds, cue=parts.cue, masked=parts.masked)
    return replace(parts, speaker=speaker.casefold()) if speaker else parts
