"""Slot keys for Chinese statements: structure first ("X的Y是Z", "把X迁移到Z", "X在<地名>"), then
the kind of value, with jieba separating the subject words from pronouns, time words and the
instruction verbs around them."""
from __future__ import annotations

import re

from conversations.textutil import pos_cut
from memory.extraction.slots import SlotParts, tech_category, value_slot

__all__ = ["event_subject_zh", "slot_zh"]

_ZH_DROP_FLAGS = {"r", "t", "tg", "d", "p", "c", "u", "uj", "ul", "uz", "ug", "uv", "ud", "y", "e", "o", "x",
                  "w", "f", "df", "dg"}
_ZH_STOP = set(
    "默认 请 给 看 帮 让 把 要 想 能 会 可以 就 都 也 还 又 只 再 一直 总是 平时 一般 已经 改成 改为 换成 设置 显示 "
    "展示 列 列出 以后 今后 就行 就好 即可 是 有 在 用 做 喜欢 偏好 习惯 希望 需要 觉得 记得 记住 注意 一律 始终 "
    "每次 务必 主力 常用 首选 最 比较 更 不要 别 不 没 没有 一下 目前 现在 当前 叫 家住 住 位于 使用 采用 基于 "
    "迁移 迁 换 改 切换 升级 搬 转 替换 到 成 为 至 了 的 未来 接下来 最近 从 按 按照 排序 排列 倾向 倾向于 "
    "发 给我 看看 列一下 安排 我们 我 你 您 咱们".split()
)
_ZH_FIRST_PERSON_ORG = re.compile(r"我们|咱们|我司|本公司|我方|我们公司")
_ZH_FIRST_PERSON = re.compile(r"我|本人|用户|俺")
_ZH_ATTR_MODIFIERS = re.compile(r"^(?:主力|主要|常用|首选|最常用的?|最喜欢的?|默认|平时|日常|目前|现在|当前|现用)+")
_ZH_ATTR_SYNONYMS = {
    "开发语言": "编程语言", "主力语言": "编程语言", "编程语言": "编程语言", "后端语言": "编程语言", "语言": "编程语言",
    "地址": "住址", "家庭住址": "住址", "住址": "住址", "所在地": "位置", "地点": "位置", "位置": "位置",
    "地方": "位置", "名字": "姓名", "姓名": "姓名", "全名": "姓名",
}
_ZH_PLACE_SUFFIX = re.compile(r"[省市区县镇乡村路街道巷号楼栋层室仓库棚厂场园站城湾港]|基地|车间|仓库|农场|地块|园区|小区|大厦")
_ZH_PROVINCES = re.compile(
    r"北京|天津|上海|重庆|河北|山西|辽宁|吉林|黑龙江|江苏|浙江|安徽|福建|江西|山东|河南|湖北|湖南|广东|海南|四川|贵州|"
    r"云南|陕西|甘肃|青海|台湾|内蒙古|广西|西藏|宁夏|新疆|香港|澳门|杭州|南京|广州|深圳|成都|武汉|西安|哈尔滨")
_ZH_DURATION = re.compile(
    r"(?:未来|最近|近|接下来|之后|往后)?(?:\d+|[一二两三四五六七八九十半几]+)个?(?:小时|天|日|周|星期|礼拜|月|季度|年)(?:内|以内)?"
    r"|本周|这周|本月|这个月|当天|今天|当月|本季度|今年|全年")
_ZH_SORT = re.compile(
    r"按照?(?P<v>[^，,。；;]+?)(?:从高到低|从低到高|由高到低|由低到高|从大到小|从小到大|从新到旧|从旧到新|降序|升序|倒序|正序|先后)?"
    r"(?:的顺序)?(?:来)?(?:排序|排列|排)")
_ZH_STYLE = re.compile(r"简洁|简短|简要|简明|详细|详尽|口语化|正式|幽默|严谨|精简|啰嗦|长篇大论|直接|通俗")
_ZH_LANGUAGE = re.compile(r"中文|英文|英语|汉语|日语|日文|韩语|法语|德语|俄语|西班牙语|粤语")
_ZH_MONEY = re.compile(r"(?:\d+(?:\.\d+)?|[一二两三四五六七八九十百千万亿]+)(?:万|千|百|亿)?[一二三四五六七八九]?(?:元|块|万元|美元)?")
_ZH_REPLY_NOUN = re.compile(r"回答|回复|答复|答案|说明|解释|报告|总结|摘要")

# "X的Y是Z": the attribute is named; "Z是我的Y": the value comes first.
_ZH_REVERSED = re.compile(r"^(?P<v>[^，,]+?)是(?P<o>我们|咱们|我家|我司|我|用户)的(?P<a>[^，,]+)$")
_ZH_POSSESSIVE = re.compile(r"^(?P<s>[^，,]+?)的(?P<a>[^的，,]+?)(?:是|为|有|达到|约为|大约是?|大概是?)(?P<v>[^，,]+)")
_ZH_BA_CHANGE = re.compile(r"把(?P<s>.+?)(?:从(?P<old>.+?))?(?:迁移|迁|换|改|切换|升级|搬迁|搬|转|替换)(?:到|成|为|至)了?(?P<v>.+)$")
_ZH_CHANGE = re.compile(
    r"^(?P<s>.*?)(?:从(?P<old>.+?))?(?:已经|已)?(?:迁移|迁|换|改用|改|切换|升级|搬迁|搬家|搬|转|替换)(?:到|成|为|至)?了?(?P<v>.+)$")
_ZH_TECH_USE = re.compile(
    r"^(?P<s>.*?)(?:用的是|使用的是|采用的是|装的是|用的|使用|采用|基于|跑在|部署在|运行在|装了|用)\s*$")
_ZH_ROLE = re.compile(r"^\s*(?:来)?(?:做|作为|当作|当|作)(?P<role>[^，,]+)")
_ZH_NAME = re.compile(r"^(?P<s>我|本人)(?:的名字)?(?:叫|名叫)(?P<v>[^，,]{1,12})")
_ZH_LOCATION = re.compile(r"^(?P<s>.+?)(?P<verb>住在|住|位于|坐落在|坐落于|设在|落户在|搬到了?|搬去了?|搬迁到|迁到|在)(?P<v>[^，,]+)")


def _zh_owner(span: str) -> str | None:
    if _ZH_FIRST_PERSON_ORG.search(span):
        return "组织"
    if _ZH_FIRST_PERSON.search(span):
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
    attr = _ZH_ATTR_MODIFIERS.sub("", _zh_clean(text) or text.strip())
    return _ZH_ATTR_SYNONYMS.get(attr, attr)


def _zh_is_place(text: str) -> bool:
    text = text.strip()
    if not text or len(text) > 30:
        return False
    if _ZH_PROVINCES.search(text) or _ZH_PLACE_SUFFIX.search(text):
        return True
    return any(flag == "ns" for _, flag in pos_cut(text))


def _zh_style(text: str) -> str | None:
    """A style word that says how replies should be ("回答直接一点", "简洁点"). Right before a verb it
    says how to act instead ("直接传到群里", "详细说明"), and names no style."""
    if not _ZH_STYLE.search(text):
        return None
    tokens = pos_cut(text)
    for i, (word, _) in enumerate(tokens):
        if _ZH_STYLE.fullmatch(word) and not (i + 1 < len(tokens) and tokens[i + 1][1].startswith("v")):
            return word
    return None


def _zh_value_attr(text: str) -> tuple[str, str] | None:
    """(attribute, value) of the first recognised value in a clause, in order of specificity."""
    tech = tech_category(text, "zh")
    if tech:
        return tech
    m = _ZH_SORT.search(text)
    if m:
        return "排序", m.group("v")
    m = _ZH_DURATION.search(text)
    if m:
        return "时间范围", m.group(0)
    style = _zh_style(text)
    if style:
        return "风格", style
    m = _ZH_LANGUAGE.search(text)
    if m:
        return "语言", m.group(0)
    return None


# "现在维修师傅是赵刚" / "目前主力拖拉机是东方红": an attribute noun phrase, a copula, a value; only
# with a "now" cue, because a bare "X是Y" about no one in particular is too often chatter.
_ZH_NOW_COPULA = re.compile(r"^(?P<now>现在|目前|如今|眼下|当前|新的|新)?(?P<s>[^，,是]{1,10}?)(?:现在|目前|如今)?"
                            r"(?:是|为|换成了?|改成了?)(?P<v>[^，,]{1,20})$")
# Without a "now" cue only a value that is a name, a number, a date or a model makes "X是Y" a
# fact ("女儿生日是5月18号", "负责人是老钱"); "问题是没时间" / "天空是蓝色的" stay chatter.
_ZH_NAMED_VALUE = ("nr", "m", "eng", "nz", "ns", "nrt", "nrfg", "t")
_ZH_NOMINAL_FLAGS = ("n", "vn", "nr", "nz", "ng", "j", "l")


def _zh_now_copula(text: str) -> SlotParts | None:
    m = _ZH_NOW_COPULA.match(text)
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
    m = _ZH_REVERSED.match(text)
    if m:
        value = m.group("v").strip()
        tech = tech_category(value, "zh")
        attr = _zh_attr(m.group("a"))
        if tech and attr in ("编程语言", "语言"):
            attr = tech[0]
        return SlotParts(_zh_owner(m.group("o")) or "用户", attr, value)

    m = _ZH_POSSESSIVE.match(text)
    if m and not tech_category(m.group("a"), "zh"):
        attr = _zh_attr(m.group("a"))
        subject = _zh_subject(m.group("s"))
        if attr and subject:
            return SlotParts(subject, attr, m.group("v").strip())

    m = _ZH_BA_CHANGE.search(text) or _ZH_CHANGE.match(text)
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
        use = _ZH_TECH_USE.match(before)
        subject_span = use.group("s") if use else before
        subject = _zh_subject(subject_span) or ("用户" if kind == "preference" else "")
        role = _ZH_ROLE.match(after)
        if role:
            return SlotParts(subject or "用户", _zh_attr(role.group("role")), tech[1])
        if subject:
            return SlotParts(subject, tech[0], tech[1])

    m = _ZH_NAME.match(text)
    if m:
        return SlotParts(_zh_subject(m.group("s")) or "用户", "姓名", m.group("v").strip())

    m = _ZH_LOCATION.match(text)
    if m and _zh_is_place(m.group("v")):
        subject = _zh_subject(m.group("s"))
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
            reply = _ZH_REPLY_NOUN.search(text)
            subject = "回答" if reply is None or reply.group(0) in ("回复", "答复", "答案") else reply.group(0)
            return SlotParts(subject, attr, value, structural=False)
        if attr == "语言":
            return SlotParts("回答", attr, value, structural=False)
        rest = text.replace(value, " ", 1)
        if attr == "排序":
            rest = _ZH_SORT.sub(" ", text, count=1)
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
    runs = [r for r in runs if not _ZH_MONEY.fullmatch(r)][:2]
    return ".".join(runs)
