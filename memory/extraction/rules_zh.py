"""Chinese cues for the rule extractor (data; the flow is in rules.py)."""
from __future__ import annotations

import re

from memory.extraction.lexicon import Lexicon
from memory.extraction.slots_zh import event_subject_zh, slot_zh
from memory.extraction.text import strip_end, strip_leading

__all__ = ["ZH"]

_DNR = re.compile(
    r"(?:别|不要|不用|无需|不必|请勿|勿|千万别|不需要|没必要)(?:帮我|给我|再|把它|把这个)?"
    r"(?:记|保存|存|记录|存储|留存|保留|备份)(?!错|得|性|忆|在|不住)"
    r"|忘掉(?:这|它|吧|刚才|刚刚)|把(?:这|它|刚才|刚刚)[^，。,]{0,12}(?:忘了|忘掉|删了|删掉)")


def _do_not_remember(text: str) -> bool:
    return bool(_DNR.search(text))


_Q_END = re.compile(r"(?:[？?]|[吗呢么嘛][。！!…\s]*)\s*$")
_Q_WORD = re.compile(r"^(?:为什么|为啥|怎么|怎样|如何|哪|谁|是否|是不是|有没有|能否|可否|能不能|可不可以)"
                     r"|什么|为什么|为啥|怎么样|怎么办|哪里|哪儿|哪个|哪些|哪家|哪台|几点|几号|几台|多少|是否|是不是"
                     r"|有没有|行不行|对不对|好不好")


def _is_question(text: str) -> bool:
    return bool(_Q_END.search(text) or _Q_WORD.search(text))


_REQUEST = re.compile(
    r"^(?:请你?|麻烦你?|劳驾|能不能|能否|可不可以|可以帮|你(?:能|可以|帮|给|去)|帮我|帮忙|替我|请帮)"
    r"|^(?:查一下|查查|查询|查看|看一下|看看|列一下|列出|列个|统计|算一下|计算|生成|写一?个|发给我|整理|导出|打印)"
    r"|^给我(?:查|看|列|找|算|发|写|生成|安排|做|出|整理|推荐|说|讲|来)"
    r"|^把.+(?:列|查|发|整理|导出|打印|删|看|算|汇总)一?下"
    r"|(?:一下|一下吧)$")


def _is_request(text: str) -> bool:
    return bool(_REQUEST.search(strip_end(text)))


_CORRECTION_LEAD = re.compile(
    r"^(?:不对|不是的|不是这样的?|错了|你记错了|你弄错了|你搞错了|记错了|弄错了|搞错了|说错了|我说错了|我记错了|"
    r"更正一下|更正|纠正一下|纠正|订正|修正一下|修正|其实|准确地说|准确来说|实际上|确切地说|"
    r"我?(?:之前|刚才|前面|上次)(?:说的|讲的|告诉你的)?(?:不对|有误|错了|说错了))[，,：:。！!\s]*")
_NOT_X_BUT_Y = re.compile(r"^(?P<pre>.*?)不是(?P<old>[^，,]+?)[，,]?\s*(?:而是|是)(?P<new>[^，,]+)(?P<post>.*)$")
_Y_NOT_X = re.compile(r"[，,]\s*(?:而)?(?:不是|并非|并不是)(?P<old>[^，,。]+)")
_PREDICATE_START = re.compile(r"^(?:在|用|住|叫|有|位于)")


# "…，我前天说岔了" / "…，是我记错了": the speaker's comment on the mistake, not part of the fact.
_SELF_ERROR = re.compile(r"[，,]\s*(?:是|都是)?(?:我|我们)?[^，,]{0,6}?(?:说|记|写|讲|弄|搞|看)(?:错|岔|反|混)了?[^，,]{0,6}$")


def _strip_correction(text: str) -> tuple[str, list[str]]:
    s = _SELF_ERROR.sub("", text)
    s = strip_leading(_CORRECTION_LEAD, s)
    olds: list[str] = []
    m = _NOT_X_BUT_Y.match(s)
    if m and m.group("pre").strip():
        old, new = m.group("old").strip(), m.group("new").strip()
        olds.append(re.sub(r"^(?:在|用|住在|叫)", "", old))
        # "我们农场不是在佳木斯，是在齐齐哈尔" -> "我们农场在齐齐哈尔"; "车不是白的，是黑的" -> "车是黑的"
        joiner = "" if _PREDICATE_START.match(new) or _PREDICATE_START.match(old) else "是"
        s = m.group("pre") + joiner + new + m.group("post")
    for m2 in list(_Y_NOT_X.finditer(s)):
        olds.append(re.sub(r"^(?:在|用|住在|叫)", "", m2.group("old").strip()))
    s = _Y_NOT_X.sub("", s)
    return s.strip("，, "), [o for o in olds if o]


_SUBJECTLESS = re.compile(r"^(?:应该是|应该在|其实是|是在|是|在|叫)(?P<v>[^，,]{1,20})$")


def _subjectless(text: str) -> str | None:
    m = _SUBJECTLESS.match(strip_end(text))
    return m.group("v").strip() if m else None


_OLD_VALUE = [
    re.compile(r"从(?P<old>[^，,到]{1,20}?)(?:迁移|迁|换|改|切换|升级|搬|转)"),
    re.compile(r"不再(?:用|使用|采用|是)?(?P<old>[^，,。了的]{1,20})"),
    re.compile(r"(?:已经)?不用(?P<old>[^，,。了的]{1,20})了"),
]


def _old_values(text: str) -> list[str]:
    out = []
    for pattern in _OLD_VALUE:
        for m in pattern.finditer(text):
            old = m.group("old").strip()
            if old:
                out.append(old)
    return out


_TRAILING_PARTICLES = re.compile(r"(?:的话|吧|啊|呀|哦|哈|啦|呢)+$")


def _finish(text: str) -> str:
    return _TRAILING_PARTICLES.sub("", strip_end(text)).strip()


ZH = Lexicon(
    lang="zh",
    do_not_remember=_do_not_remember,
    is_question=_is_question,
    is_request=_is_request,
    proposal=re.compile(r"吧[。！!～~]*$"),
    remember_lead=re.compile(r"^(?:请|你)?(?:帮我)?(?:记住|记一下|记下|记好了?)[，,：:\s]*"),
    filler_lead=re.compile(r"^(?:跟你说一下|跟你讲一下|对了|另外|还有|顺便说一下|顺便|嗯+|哦+|噢|哎呀|哎|唉|诶|好的|好|那个|"
                           r"说一下|补充一下|补充|说明一下|"
                           r"告诉你|跟你说|是这样的?)[，,：:\s]*"),
    chit_chat=re.compile(r"天气|下雨|下雪|刮风|气温|心情|吃饭|午饭|晚饭|早饭|早餐|午餐|晚餐|睡觉|周末愉快|闲聊|哈哈|呵呵|"
                         r"嘿嘿|无聊|开心|好累|累死|你好|谢谢|再见|早上好|晚上好"),
    task_marker=re.compile(r"这次|本次|这一次|这回|此次|这一回|今天只|今天先|今天就|暂时|临时|这一单|本轮|这一轮|当前任务|"
                           r"这个任务|仅此一次|就这一次|只是这次"),
    task_instruction=re.compile(r"只|就行|就好|即可|先|按|用|给我|不用|不要|别|请|改|换|看|列|显示|发|需要|要"),
    task_today=re.compile(r"今天只|今天先|今天就"),
    long_term=re.compile(
        r"(?<![了完之])以后(?!再|的事)|今后|往后|从今往后|从今以后|从现在起|从现在开始|从今天起|从今天开始|默认|"
        r"(?:我|用户)(?:一直|比较|更|最|很|特别|还是|都|向来)?(?:喜欢|偏好|偏爱|倾向于?|习惯|讨厌|不喜欢)|"
        r"请(?:一直|总是|始终|每次|永远|务必)|(?:一律|始终|永远|每次都|一直都|总是)(?:给我|用|按|要|请|以|不要|别|先)"),
    habit=re.compile(r"我(?:平时|平常|一般|通常|经常|常|习惯)(?:都)?(?:用|使用|写)|是我的(?:主力|常用|首选|最爱|最喜欢)|"
                     r"我的(?:主力|常用|首选)"),
    correction_lead=_CORRECTION_LEAD,
    correction_any=re.compile(r"记错|弄错|搞错|说错|说岔|记岔|记混|搞混|更正|纠正|[，,]\s*(?:而)?(?:不是|并非)[^，,。]+$|不是[^，,]+[，,]\s*(?:而是|是)"),
    strip_correction=_strip_correction,
    subjectless=_subjectless,
    migration=re.compile(r"迁移到|迁移至|迁到|迁至|换成|换到|换用|改用|切换到|切换成|切到|转到|升级到|升级成|搬到|搬去|"
                         r"搬迁到|搬家到|挪到|移到|替换成|替换为|迁移了"),
    update=re.compile(r"改成|改为|改到|调整为|调整成|调成|变成|变为|更新为|更新成|不再|已经不用|不用了|停用"),
    old_values=_old_values,
    opinion=re.compile(r"^我(?:们)?(?:想|要|觉得|认为|感觉|猜|估计|希望|打算|准备|需要|怕|担心|看|可能|不知道|有点|挺|很|太|真|好)"),
    first_person=re.compile(r"^(?:我们|咱们|我家|我司|本公司|我方|我|本人|俺)|(?:我|我们|咱们|我家)的|是我(?:们)?的"),
    fact_predicate=re.compile(r"是|在|有|用|叫|姓|住|负责|管|种|养|经营|属于|位于|来自|占|拥有|承包"),
    event_verb=re.compile(
        r"坏|断|停机|漏油|漏水|故障|报修|维修|修好|修理|大修|保养|检修|更换|换了|买了|购买|购入|采购了|卖了|出售|安装|装了|"
        r"上线|下线|收割|播种|施肥|打药|出现|发生|过热|异响|报警|冒烟|起火|丢了|到货|签了|签订|完成|开始|结束|入职|离职|"
        r"花了|支付|付了|收到|发货|检查|巡检|事故|损坏|磨损|裂|卡住|失灵|熄火|开会|参加|参展|见了|拜访|出差|培训|验收"),
    completion=re.compile(r"了|过|已经|已|完|刚"),
    asset=re.compile(r"\d+号|[一二三四五六七八九十]+号|#\d+|[A-Z]+-?\d+|收割机|拖拉机|烘干机|播种机|插秧机|发电机|设备|"
                     r"机器|车辆|水泵|无人机|喷药机|服务器|仓库|系统|工单|订单|合同"),
    suggestion=re.compile(
        r"(?:^|[，,。；;：:\s]|我|我们|所以|因此|那|还是|这边|个人|另外)(?:建议|推荐)(?![会已书的])|可以考虑|不妨|"
        r"最好(?:是)?(?:先|尽快|在|安排|对|把|给|提前|定期|每)|应该(?:先|尽快|安排|对|把|给|定期|及时)|"
        r"要不要(?:考虑|安排)|我的建议是"),
    slot=slot_zh,
    event_subject=event_subject_zh,
    finish=_finish,
)
