"""Slot keys for Chinese statements: structure first ("X的Y是Z", "把X迁移到Z", "X在<地名>"), then
the kind of value, with jieba separating the subject words from pronouns, time words and the
instruction verbs around them."""
from __future__ import annotations

from common.text import pos_cut
from memory.extraction.patterns import load_patterns
from memory.extraction.slots import SlotParts, tech_category, value_slot

__all__ = ["event_subject_zh", "slot_zh"]

_PATTERNS = load_patterns("slots_zh")  # memory/extraction/lexicons/slots_zh.toml

_ZH_DROP_FLAGS = {"r", "t", "tg", "d", "p", "c", "u", "uj", "ul", "uz", "ug", "uv", "ud", "y", "e", "o", "x",
                  "w", "f", "df", "dg"}
_ZH_STOP = set(
    "默认 请 给 看 帮 让 把 要 想 能 会 可以 就 都 也 还 又 只 再 一直 总是 平时 一般 已经 改成 改为 换成 设置 显示 "
    "展示 列 列出 以后 今后 就行 就好 即可 是 有 在 用 做 喜欢 偏好 习惯 希望 需要 觉得 记得 记住 注意 一律 始终 "
    "每次 务必 主力 常用 首选 最 比较 更 不要 别 不 没 没有 一下 目前 现在 当前 叫 家住 住 位于 使用 采用 基于 "
    "迁移 迁 换 改 切换 升级 搬 转 替换 到 成 为 至 了 的 未来 接下来 最近 从 按 按照 排序 排列 倾向 倾向于 "
    "发 给我 看看 列一下 安排 我们 我 你 您 咱们".split()
)
_ZH_ATTR_SYNONYMS = {
    "开发语言": "编程语言", "主力语言": "编程语言", "编程语言": "编程语言", "后端语言": "编程语言", "语言": "编程语言",
    "地址": "住址", "家庭住址": "住址", "住址": "住址", "所在地": "位置", "地点": "位置", "位置": "位置",
    "地方": "位置", "名字": "姓名", "姓名": "姓名", "全名": "姓名",
}


def _zh_owner(span: str) -> str | None:
    if _PATTERNS.words.first_person_org.search(span):
        return "组织"
    if _PATTERNS.words.first_person.search(span):
        return "用户"
    return None


def _zh_clean(span: str) -> str:
    """Content words of a span, joined: pronouns, time words, adverbs, particles and the
    instruction verbs around a subject go, so "给我的维保建议请" -> "维保建议"."""
    if span.strip() in ("我家", "我们家", "我自己", "本人"):
        return "用户"
    words = [w for w, flag in pos_cut(span.strip()) if flag not in _ZH_DROP_FLAGS and w.strip() and w not in _ZH_STOP]
    return "".join(words)


def _zh_subject(span: str) -> str:
    return _zh_clean(span) or _zh_owner(span) or ""


def _zh_attr(text: str) -> str:
    attr = _PATTERNS.words.attr_modifiers.sub("", _zh_clean(text) or text.strip())
    return _ZH_ATTR_SYNONYMS.get(attr, attr)


def _zh_is_place(text: str) -> bool:
    text = text.strip()
    if not text or len(text) > 30:
        return False
    if _PATTERNS.words.provinces.search(text) or _PATTERNS.words.place_suffix.search(text):
        return True
    return any(flag == "ns" for _, flag in pos_cut(text))


def _zh_starts_with_place(text: str) -> bool:
    """A bare 在 is where the user is only when a place comes right after it ("我在杭州"): otherwise
    it is where something is done ("我在 Notion 里新建了清单"), and a place word later in the clause
    (jieba tags 新建 as a county) says nothing about where the user lives."""
    tokens = [(w, f) for w, f in pos_cut(text.strip()) if w.strip()]
    if not tokens:
        return False
    word, flag = tokens[0]
    return flag == "ns" or bool(_PATTERNS.words.provinces.match(word) or _PATTERNS.words.place_suffix.search(word))


def _zh_style(text: str) -> str | None:
    """A style word that says how replies should be ("回答直接一点", "简洁点"). Right before a verb it
    says how to act instead ("直接传到群里", "详细说明"), and names no style."""
    if not _PATTERNS.value.style.search(text):
        return None
    tokens = pos_cut(text)
    for i, (word, _) in enumerate(tokens):
        if _PATTERNS.value.style.fullmatch(word) and not (i + 1 < len(tokens) and tokens[i + 1][1].startswith("v")):
            return word
    return None


def _zh_value_attr(text: str) -> tuple[str, str] | None:
    """(attribute, value) of the first recognised value in a clause, in order of specificity."""
    tech = tech_category(text, "zh")
    if tech:
        return tech
    m = _PATTERNS.value.sort.search(text)
    if m:
        return "排序", m.group("v")
    m = _PATTERNS.value.duration.search(text)
    if m:
        return "时间范围", m.group(0)
    style = _zh_style(text)
    if style:
        return "风格", style
    m = _PATTERNS.value.language.search(text)
    if m:
        return "语言", m.group(0)
    return None


# "现在维修师傅是赵刚" / "目前主力拖拉机是东方红": an attribute noun phrase, a copula, a value; only
# with a "now" cue, because a bare "X是Y" about no one in particular is too often chatter.
# Without a "now" cue only a value that is a name, a number, a date or a model makes "X是Y" a
# fact ("女儿生日是5月18号", "负责人是老钱"); "问题是没时间" / "天空是蓝色的" stay chatter.
_ZH_NAMED_VALUE = ("nr", "m", "eng", "nz", "ns", "nrt", "nrfg", "t")
_ZH_NOMINAL_FLAGS = ("n", "vn", "nr", "nz", "ng", "j", "l")


def _zh_now_copula(text: str) -> SlotParts | None:
    m = _PATTERNS.structure.now_copula.match(text)
    if not m:
        return None
    subject_tokens = [(w, f) for w, f in pos_cut(m.group("s")) if w.strip() and w not in _ZH_STOP]
    if not subject_tokens or not all(f.startswith(_ZH_NOMINAL_FLAGS) or f in ("v", "t") for _, f in subject_tokens) \
            or not any(f.startswith("n") for _, f in subject_tokens):
        return None
    if not m.group("now"):
        value_tokens = [f for w, f in pos_cut(m.group("v")) if w.strip()]
        if not value_tokens or not value_tokens[0].startswith(_ZH_NAMED_VALUE) or \
                all(f.startswith("t") for _, f in subject_tokens):
            return None
    attr = _zh_attr(m.group("s"))
    return SlotParts(_zh_owner(text) or "组织", attr, m.group("v").strip()) if attr else None


def slot_zh(text: str, kind: str) -> SlotParts | None:
    text = text.strip()
    m = _PATTERNS.structure.reversed.match(text)
    if m:
        value = m.group("v").strip()
        tech = tech_category(value, "zh")
        attr = _zh_attr(m.group("a"))
        if tech and attr in ("编程语言", "语言"):
            attr = tech[0]
        return SlotParts(_zh_owner(m.group("o")) or "用户", attr, value)

    m = _PATTERNS.structure.possessive.match(text)
    if m and not tech_category(m.group("a"), "zh"):
        attr = _zh_attr(m.group("a"))
        subject = _zh_subject(m.group("s"))
        if attr and subject:
            return SlotParts(subject, attr, m.group("v").strip())

    m = _PATTERNS.structure.ba_change.search(text) or _PATTERNS.structure.change.match(text)
    if m and m.group("v"):
        found = _zh_value_attr(m.group("v"))
        subject = _zh_subject(m.group("s"))
        if found is None and _zh_is_place(m.group("v")):
            found = ("住址" if subject == "用户" else "位置", m.group("v"))
        if found and subject:
            return SlotParts(subject, found[0], found[1])

    tech = tech_category(text, "zh")
    if tech:
        before, _, after = text.partition(tech[1])
        use = _PATTERNS.structure.tech_use.match(before)
        subject_span = use.group("s") if use else before
        subject = _zh_subject(subject_span) or ("用户" if kind == "preference" else "")
        role = _PATTERNS.structure.role.match(after)
        if role:
            return SlotParts(subject or "用户", _zh_attr(role.group("role")), tech[1])
        if subject:
            return SlotParts(subject, tech[0], tech[1])

    m = _PATTERNS.structure.name.match(text)
    if m:
        return SlotParts(_zh_subject(m.group("s")) or "用户", "姓名", m.group("v").strip())

    m = _PATTERNS.structure.location.match(text)
    if m and _zh_is_place(m.group("v")):
        subject = _zh_subject(m.group("s"))
        if subject == "用户" and m.group("verb") == "在" and not _zh_starts_with_place(m.group("v")):
            subject = None
        if subject:
            attr = "住址" if subject == "用户" or m.group("verb").startswith("住") else "位置"
            return SlotParts(subject, attr, m.group("v").strip())

    now_copula = _zh_now_copula(text)
    if now_copula is not None:
        return now_copula

    found = _zh_value_attr(text)
    if found and not (found[0] == "时间范围" and kind in ("fact", "event")):  # a fact's "今年" is a date
        attr, value = found
        if attr == "风格":
            reply = _PATTERNS.words.reply_noun.search(text)
            subject = "回答" if reply is None or reply.group(0) in ("回复", "答复", "答案") else reply.group(0)
            return SlotParts(subject, attr, value, structural=False)
        if attr == "语言":
            return SlotParts("回答", attr, value, structural=False)
        rest = text.replace(value, " ", 1)
        if attr == "排序":
            rest = _PATTERNS.value.sort.sub(" ", text, count=1)
        return value_slot(_zh_subject(rest), attr, value, kind, current_task="当前任务")
    return None


def event_subject_zh(text: str) -> str:
    """The first two noun runs of an event ("1号收割机", "液压系统漏油停机"), dot-joined."""
    runs: list[str] = []
    current = ""
    for word, flag in pos_cut(text):
        keep = flag[:1] in ("n", "m", "q", "j", "l") or flag in ("eng", "nz", "vn")
        if keep and word not in _ZH_STOP and word.strip():
            current += word
        elif current:
            runs.append(current)
            current = ""
    if current:
        runs.append(current)
    runs = [r for r in runs if not _PATTERNS.value.money.fullmatch(r)][:2]
    return ".".join(runs)
