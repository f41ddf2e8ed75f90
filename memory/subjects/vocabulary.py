"""Generic vocabulary of the subject parser: attribute synonyms, weak attribute words, value
markers and change cues. Words, not sentences: each entry is a word any statement may use."""
from __future__ import annotations

# Attribute synonyms: every word of a group maps to the group's first word. Chinese groups are
# compared on jieba tokens and on the joined subject string; English groups on snowball stems.
_ZH_SYNONYMS = [
    "回复 回答 答复 应答 答案 回应",
    "提醒 通知 提示 告知 推送 通报",
    "地址 住址 住处 住所 家庭住址",
    "位置 地点 所在地 地方 所在",
    "名字 姓名 名称 全名 称呼",
    "语言 语种",
    "邮箱 电子邮件 邮件地址 email",
    "电话 手机 手机号 电话号码 号码 联系电话",
    "师傅 技师 技工 修理工 维修工 师父",
    "维修 修理 检修 维保",
    "医生 大夫 医师",
    "妻子 老婆 爱人 太太 媳妇",
    "丈夫 老公 先生",
    "工资 薪水 薪资 月薪 收入",
    "生日 出生日期 出生年月",
    "司机 驾驶员",
    "会计 财务",
    "领导 上级 主管 老板 上司 经理",
    "车 汽车 车辆 座驾 用车",
    "价格 价钱 售价 报价",
    "格式 形式",
    "风格 语气 口吻 文风",
    "喝 饮用",
    "住 居住",
    "排序 排列 顺序",
]
_EN_SYNONYMS = [
    "repli answer respons respond",
    "remind notifi notif alert notic ping",
    "address home resid live",
    "locat place base",
    "name call",
    "languag tongu",
    "email e-mail mail",
    "phone mobil cell telephon number",
    "doctor physician gp",
    "wife spous husband partner",
    "salari pay wage incom",
    "car vehicl",
    "price cost",
    "format layout",
    "style tone",
    "mechanic mechan technician repairman",
    "accountant bookkeeper",
    "manager boss supervisor lead",
    "order sort",
    "drink",
]


def _table(groups: list[str]) -> dict[str, str]:
    table: dict[str, str] = {}
    for group in groups:
        words = group.split()
        for word in words:
            table.setdefault(word, words[0])
    return table


ZH_SYNONYMS = _table(_ZH_SYNONYMS)
EN_SYNONYMS = _table(_EN_SYNONYMS)

# Words that qualify an attribute without naming it ("提醒方式" is 提醒, "主力拖拉机" is 拖拉机).
ZH_WEAK = set("方式 方法 情况 东西 时候 问题 事情 事 设置 种类 类型 主力 主要 常用 首选 默认 日常 平时 目前 现在 当前 "
              "现用 这个 那个 一下 一点 以后 今后 之后 所有 全部 一般 通常 总是 每次 都 一律".split())
EN_WEAK = set("way method kind type main primari default prefer usual set thing current now stuff usual "
              "regular normal general all everi time".split())

# Value markers: what follows states the value. The class says what kind of statement it is, so
# "农场在齐齐哈尔" (where) and "农场有三台收割机" (how many) never share a subject.
BE, LOC, HAVE, NAME, CHANGE = "be", "loc", "have", "name", "change"


def _classes(groups: tuple[tuple[str, str], ...], sep: str | None = None) -> dict[str, str]:
    """Each word (or phrase, split on ``sep``) of a group -> the group's class; a later group wins."""
    return {word: cls for words, cls in groups for word in words.split(sep)}


ZH_MARKERS: dict[str, str] = _classes((
    ("是 为 就是 都是 还是 用 使用 采用 改用 换用 通过 走 选 选择 优先选 选用 定为 设为 设成 设置为 设置成 "
     "喜欢 偏好 偏爱 爱 习惯 倾向 要 需要 控制在 保持在 定在 安排在", BE),
    ("在 住在 位于 坐落在 坐落于 设在 搬到 搬去 搬迁到 迁到 落户在 住 放在 存放在 放到 挪到 移到 转移到 "
     "寄到 发到 送到 传到 交到 存到 寄往 发往 送往", LOC),
    ("有 拥有 共有 养了 养 种了 种植了 种植", HAVE),
    ("叫 名叫 叫做 姓 称为", NAME),
    ("改成 改为 改到 换成 换为 换到 切换到 切换成 切到 变成 变为 更新为 更新成 调整为 调整成 调整到 调成 调到 "
     "升级到 升级为 升级成 替换成 替换为 迁移到 迁移至 转到 改 换", CHANGE),
))
# English markers are phrases ("is set to"), so they are listed with "|" between them.
EN_MARKERS: dict[str, str] = _classes((
    ("is|are|am|was|were|be|=|use|uses|using|used|via|through|prefer|prefers|preferred|like|likes|choose|"
     "chose|pick|want|wants|drink|drinks|eat|eats|drive|drives|runs on|run on|set to|is set to|by|as", BE),
    ("in|at|is in|are in|is at|located at|based at|live in|lives in|living in|located in|based in|moved to|move to|"
     "relocated to|live at|lives at", LOC),
    ("has|have|own|owns|keep|keeps", HAVE),
    ("called|named|name is|go by|is called|are called|is named", NAME),
    ("switched to|switch to|changed to|change to|changed it to|changed that to|moved over to|upgraded to|"
     "replaced with|replaced by|migrated to|became|become|switched|changed|upgraded|migrated|replaced|moved|move", CHANGE),
), sep="|")

# Delivery: where a thing is sent is the value, the thing sent is the attribute ("验收单发我微信",
# "报表放到共享盘里", "email me the receipts", "invoices go to the portal"). A delivery verb followed
# by its recipient ("发我", "发给我们") is a value marker of its own class: the word after the
# recipient is the channel or the place ("发我微信", "寄给我家里"), whatever jieba tags it.
DEST = "dest"
ZH_DELIVERY_VERBS = set("发 寄 传 送 转 交 递 投 推 放 存 报 发送 上传 转发 抄送 推送 提交 邮寄 转交 回传 同步".split())
ZH_RECIPIENTS = set("我 我们 咱们 俺".split())
EN_DELIVERY_VERBS = set("send sends sent email emails emailed mail mails mailed post posts posted forward forwards "
                        "forwarded deliver delivers delivered upload uploads uploaded put puts go goes went ship ships "
                        "shipped text texts texted message messages messaged fax faxes faxed submit submits submitted "
                        "drop drops dropped route routes routed push pushes pushed".split())
# Verbs that are themselves the channel ("email me the report": by email).
EN_CHANNEL_VERBS = {"email": "email", "emails": "email", "emailed": "email", "mail": "mail", "mails": "mail",
                    "mailed": "mail", "text": "text", "texts": "text", "texted": "text", "message": "message",
                    "messages": "message", "messaged": "message", "fax": "fax", "faxes": "fax", "faxed": "fax"}
EN_DEST_PREPS = {"to", "into", "onto", "on", "in"}
EN_RECIPIENTS = {"me", "us", "myself", "ourselves"}
# A verb right after one of these is a noun ("by post", "the mail").
EN_NOUN_LEADS = {"the", "a", "an", "by", "via", "my", "our", "your", "their", "his", "her", "its"}
# Words that are nouns as often as verbs ("my work email", "by post"): a verb only where a verb
# stands, at the start of a clause or after a subject, a modal or an adverb.
EN_NOUN_VERBS = set(EN_CHANNEL_VERBS) | set("post posts forward forwards drop drops push pushes route routes ship "
                                            "ships".split())
EN_VERB_LEADS = set("i we you they please to should will would can could must shall do don't dont never and then "
                    "kindly".split())
EN_ADVERBS = set("just straight directly right always usually also only simply please then now instead".split())

# Change cues: evidence that a statement replaces an earlier one (a signal, not the gate).
ZH_CHANGE_CUES = ("改", "换", "切换", "变成", "变为", "更新", "调整", "不再", "不用", "不要", "别再", "现在", "已经",
                  "离职", "退休", "走了", "卖了", "报废", "升级", "替换", "迁移", "搬",
                  # the time from which a state holds, and giving one up (everyday wording without a change verb)
                  "如今", "目前", "最近", "这几年", "这阵子", "后来", "转", "戒", "调到")
EN_CHANGE_CUES = ("switch", "chang", "now", "no longer", "anymore", "instead", "moved", "replac", "upgrad", "migrat",
                  "left", "retired", "stop", "new",
                  "these days", "nowadays", "lately", "started", "quit", "gave up", "took up", "ditched", "relocated",
                  "up to ")

# A clause with one of these says what no longer holds: its words are old values, not the subject.
ZH_NEGATION = ("不要", "不用", "不再", "别", "停用", "取消", "不必", "无需", "没有再", "离职", "退休", "走了", "卖了", "报废")
EN_NEGATION = ("not ", "no need", "no longer", "don't", "do not", "dont ", "stop ", "instead of", "never ", "no more", "left",
               "retired", "sold")

# English words that are neither subject nor value (owners, articles, fillers, time words).
EN_STOP = set("i me my mine we us our ours you your them anymore the a an this that these those it its please from on now "
           "always default currently just also really very so too then still all any some of for to and or "
           "be been being do does did will would should could can may might must shall let let's i'm we're "
           "i've we've i'd we'd going forward onward onwards here there what which who whom whose when "
           "where how again ok okay well actually oh by the way btw remember note last next ago today yesterday user "
           "tomorrow week month year day morning evening default".split())
EN_PREP_STOP = set("for from with when while if because after before since until during per about than as at on to "
                   "in into of".split())

ZH_PLACEHOLDER = "什么"
EN_PLACEHOLDER = "something"
