"""Chinese statements: jieba's part-of-speech tags separate the subject (attribute words,
predicate, identifiers) from the value, clause by clause."""
from __future__ import annotations

import re
from datetime import datetime

import memory.subjects.vocabulary as V
from common.text import pos_cut
from memory.extraction.timeexpr import find_times
from memory.subjects.statement import PartsFound, StatementParts

__all__ = ["parse_zh"]

_PUNCT = re.compile(r"^[\s，,。.！!？?；;：:、（）()\[\]“”\"'‘’…~～—-]+$")
_CLAUSE_END = set("，,；;。！!？?")
# Adverbs (d, and adjectives used as adverbs, ad: "直接传到", "统一发到") say how, never what: they
# are neither subject words nor an attribute's head.
_ZH_DROP_FLAGS = {"r", "rr", "rz", "t", "tg", "d", "ad", "p", "c", "u", "uj", "ul", "uz", "ug", "uv", "ud", "y", "e",
                  "o", "f", "df", "dg", "zg"}
_ZH_STOP = set("请 给 让 把 要 想 能 会 可以 就 都 也 还 又 只 再 一直 总是 已经 了 的 地 得 着 过 吧 呢 啊 呀 哦 "
               "对了 另外 还有 以后 今后 往后 之后 从今往后 从现在起 从现在开始 从今天起 一下 一些 一点 我 我们 你 您 "
               "咱们 俺 本人 用户 他 她 它 他们 家里 自己 这 那 这个 那个 记住 记得 帮 帮我 给我 告诉 麻烦 好的 嗯 "
               "现在 目前 当前 默认 一律 始终 每次 务必 不 没".split())
_ZH_NOMINAL = ("n", "nr", "nrt", "nrfg", "ns", "nt", "nz", "ng", "eng", "m", "mq", "q", "x", "a", "b", "j", "l",
               "i", "s", "an", "vn", "k", "h")
_ZH_IDENT = re.compile(r"^(?:\d+|[一二三四五六七八九十]+|[A-Za-z]+\d+|#\d+|[A-Za-z]\d*)号?$")


_REF = datetime.fromisoformat("2026-01-01T00:00:00+00:00")  # any reference: only "is it a time" is asked
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


def _zh_delivery_at(clause: list[tuple[str, str]], i: int) -> tuple[str, int] | None:
    """A delivery verb and its recipient ("发我", "发给我们", "寄给我"): what follows is where the thing
    goes (a channel or a place), so the span is a value marker of the `dest` class."""
    word = clause[i][0]
    j = i + 1
    if word.endswith("给"):
        word = word[:-1]
    elif j < len(clause) and clause[j][0] == "给":
        j += 1
    if not (j + 1 < len(clause) and clause[j][0] in V.ZH_RECIPIENTS):
        return None
    # jieba glues a one-character delivery verb to the word before it ("出来后发我": 后发); with a
    # recipient right after, the last character is still the verb.
    if word in V.ZH_DELIVERY_VERBS or (len(word) == 2 and word[-1] in V.ZH_DELIVERY_VERBS):
        return V.DEST, j + 1 - i
    return None


def _zh_value_start(flag: str, word: str) -> bool:
    """Right after a recipient any content word is the value ("发我微信": jieba may tag 微信 a verb)."""
    return word not in _ZH_STOP and not flag.startswith(("d", "u", "y", "p", "c", "x", "r", "e", "o"))


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
    if pred == V.DEST:
        while i < len(tokens) and tokens[i][0] == "的":
            i += 1  # "发我的邮箱"
        if i < len(tokens) and _zh_value_start(tokens[i][1], tokens[i][0]):
            value.append(tokens[i][0])
            i += 1
            # A channel name jieba does not know comes in one-character pieces ("钉 钉").
            while i < len(tokens) and len(tokens[i][0]) == 1 and len(value[-1]) == 1 \
                    and _zh_value_start(tokens[i][1], tokens[i][0]):
                value.append(tokens[i][0])
                i += 1
    while not value and i + 1 < len(tokens) and tokens[i][1].startswith("v") and tokens[i][1] != "vn" \
            and not _zh_marker_at(words, i):
        attr.append(tokens[i][0])
        i += 1
    where = pred in (V.LOC, V.DEST)
    while i < len(tokens):
        word, flag = tokens[i]
        first = not value
        if first and flag == "t" and not find_times(word, _REF, "zh"):
            flag = "nr"  # jieba tags some names as time words ("老周"); a non-time is a name here
        if first and (word in ("了", "成", "为", "到") or flag in ("ul", "uz")):
            i += 1
            continue
        if where and first and word in V.ZH_RECIPIENTS and i + 1 < len(tokens) and _nominal(tokens[i + 1][1]):
            i += 1  # "寄到我家里" / "发到我手机上": the recipient owns the place, the place is the value
            continue
        if where and value and word == "的" and i + 1 < len(tokens) and (
                _nominal(tokens[i + 1][1]) or tokens[i + 1][1].startswith("v") and i + 2 < len(tokens)
                and _nominal(tokens[i + 2][1])):
            value.append(word)  # "农场的钉钉群" / "公司的共享盘": one place, owned
            i += 1
            continue
        if where and flag == "s" and word in _ZH_STOP:
            value.append(word)  # "家里" is an owner before a noun, a place after 寄到
            i += 1
            continue
        if word in _ZH_STOP or (value and _zh_marker_at(words, i)):
            break
        if value and value[-1] == "的" and flag.startswith("v"):
            value.append(word)
            i += 1
            continue
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

def parse_zh(text: str) -> StatementParts:
    tokens = pos_cut(text)
    found = PartsFound(lang="zh", weak_words=V.ZH_WEAK)
    masked = text
    cue = any(c in text for c in V.ZH_CHANGE_CUES)
    clauses = _zh_clauses(tokens)
    multi = len(clauses) > 1
    for clause in clauses:
        joined = "".join(w for w, _ in clause)
        # "短信不用了" / "前台不代收快递了": a "不 + verb … 了" clause says what no longer holds.
        negated = any(n in joined for n in V.ZH_NEGATION) or bool(_ZH_NO_LONGER.search(joined))
        words = [w for w, _ in clause]
        markers = [(i, m) for i in range(len(clause)) if (m := _zh_marker_at(words, i) or _zh_delivery_at(clause, i))]
        # The first marker that is followed by a value ("车队用的加油卡是中石化的": 是, not 用).
        marker_at = next((mk for mk in markers if _zh_value_run(clause, mk[0] + mk[1][1], mk[1][0])[0]),
                         markers[0] if markers else None)
        if negated and (multi or marker_at is None):
            # "不要发邮件" / "短信不用了" / "李明离职了": what no longer holds.
            for word, flag in clause:
                if word in _ZH_STOP or any(word in n or n in word for n in V.ZH_NEGATION) or flag.startswith(("d", "u")):
                    continue
                if _nominal(flag) or flag.startswith("v"):
                    found.old_values.append(word)
            continue
        pre_end = marker_at[0] if marker_at else len(clause)
        clause_terms: list[str] = []
        pre_nouns: list[str] = []
        for j in range(pre_end):
            word, flag = clause[j]
            nxt = clause[j + 1][0] if j + 1 < len(clause) else ""
            if _ZH_IDENT.match(word) and (nxt in ("号", "#") or word.endswith("号") or re.search(r"[A-Za-z]", word)):
                found.idents.add(word.rstrip("号"))
                continue
            if word == "号":
                continue
            if flag in ("ns", "nt") and j + 1 < pre_end and _nominal(clause[j + 1][1]) and not clause[j + 1][1].startswith("ns"):
                # "浦东线" / "嘉定仓": a place name picking one of several things out, like "1号".
                found.idents.add(word)
                continue
            if word in _ZH_STOP or flag in _ZH_DROP_FLAGS or flag.startswith("r") or word in V.ZH_MARKERS:
                continue
            if flag.startswith("m") or flag == "eng" and re.search(r"\d", word):
                found.values.append(word)  # a number before the marker is a value ("每天7点提醒我")
                masked = masked.replace(word, V.ZH_PLACEHOLDER, 1)
                continue
            clause_terms.append(_zh_canon(word))
            if flag.startswith(("n", "eng", "j")) and _zh_canon(word) not in V.ZH_WEAK:
                pre_nouns.append(_zh_canon(word))
        strong = [t for t in clause_terms if t not in V.ZH_WEAK]
        if marker_at is not None:
            pred, span = marker_at[1]
            found.preds.add(pred)
            value, nouns, end = _zh_value_run(clause, marker_at[0] + span, pred)
            tail = [w for w, f in clause[end + 1:] if _nominal(f)] if end < len(clause) and clause[end][0] == "的" else []
            if pred == "be" and strong and value and tail and not re.search(r"[\dA-Za-z]", "".join(value)):
                # "张老师是孩子的班主任": the value comes first, the attribute after 的. A value with digits
            # or Latin letters is a specification of the noun after 的, never its owner
            # ("用的是15W-40的机油": the oil is the attribute, 15W-40 its value).
                raw = [w for w, _ in clause[:marker_at[0]] if _zh_canon(w) in strong]
                found.values.append("".join(raw))
                for word in raw:
                    masked = masked.replace(word, V.ZH_PLACEHOLDER, 1)
                clause_terms = [_zh_canon(w) for w in value + tail]
                found.heads.add(_zh_canon(tail[-1]))
                found.terms.extend(clause_terms)
                continue
            if len(value) >= 2 and clause_flags(clause, value[-1]) == "n" and pred != "have" and not strong:
                # "喜欢喝美式咖啡" / "是刘医生": the last common noun names the attribute.
                nouns.append(value.pop())
            if value:
                text_value = "".join(value)
                found.values.append(text_value)
                masked = masked.replace(text_value, V.ZH_PLACEHOLDER, 1)
            for noun in nouns:
                clause_terms.append(_zh_canon(noun))
            # Words after the value are the predicate ("用微信提醒我": 提醒).
            after = [(_zh_canon(w), f) for w, f in clause[end:]
                     if w not in _ZH_STOP and f not in _ZH_DROP_FLAGS and not f.startswith(("r", "m"))
                     and w not in V.ZH_MARKERS]
            clause_terms.extend(w for w, _ in after)
            if nouns and (pred == "have" or not strong):
                found.heads.add(_zh_canon(nouns[-1]))
            elif pred in (V.LOC, V.DEST) and pre_nouns:
                # "验收单拍照发我微信" / "发票以后统一传到…": what is placed or sent is the attribute,
                # not the verbs around it.
                found.heads.add(pre_nouns[-1])
            elif strong:
                found.heads.add(strong[-1])
            elif after:
                found.heads.add(after[0][0])
            else:
                found.heads.add("地址" if pred == "loc" else f"@{pred}")  # "我住在杭州": where the user lives
        else:
            # A clause without a value names its attribute only with a noun ("帮我设一下" names none).
            nouns = [_zh_canon(w) for w, f in clause if f.startswith(("n", "vn", "eng", "j")) and not f.startswith("nr")
                     and _zh_canon(w) in strong]
            if nouns:
                found.heads.add(nouns[-1])
        found.terms.extend(clause_terms)
    return found.parts(cue=cue, masked=masked)

