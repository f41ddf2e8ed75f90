"""Generate the Chinese long-dialogue recall set (docs/evaluation.md, "Long dialogue queries").

Each case is one user with ~110 event/fact memories (20–80 characters) over ten domains; each
probe's query is a dialogue of 300–800 characters (small talk, other topics, the assistant's
answers) ending in the user turn that needs one memory, which is the probe's only expected label.
Memories of one template differ only in their details (another trip, another car service), so the
right one must be picked by what the last turn says, in words that are often not the memory's.

    python -m bench.longdialog_zh --seed 1 --users 4 --out evaluation/data/longdialog-zh-tune.jsonl
    python -m bench.longdialog_zh --seed 2 --users 4 --out evaluation/data/longdialog-zh-report.jsonl

Written from templates in this file (no third-party text). The tuning half (seed 1) is for choosing
weights; the report half (seed 2, other users, other values) is only measured.
"""
import argparse
import json
import random
from datetime import datetime, timedelta, timezone

TZ = timezone(timedelta(hours=8))

V = {
    "pet": ["豆豆", "球球", "年糕", "可乐", "旺财", "咪咪", "橘子", "小黑", "奶茶", "花卷"],
    "breed": ["柯基", "金毛", "英短", "布偶猫", "柴犬", "泰迪", "边牧", "橘猫"],
    "clinic": ["瑞鹏宠物医院", "安安动物诊所", "爱诺宠物医院", "小区门口那家宠物店", "新瑞鹏", "宠颐生"],
    "vaccine": ["狂犬疫苗", "猫三联", "犬八联", "体内驱虫", "体外驱虫"],
    "food": ["鸡肉", "牛奶", "海鲜", "芒果", "花生", "鸡蛋", "牛肉", "小麦"],
    "symptom": ["掉毛", "呕吐", "拉肚子", "身上起疹子", "一直挠耳朵"],
    "car": ["那辆白色的卡罗拉", "家里的思域", "老婆开的model 3", "我那台途观", "单位配的帕萨特", "新买的比亚迪汉"],
    "shop": ["4S店", "途虎养车", "楼下的修理厂", "朋友开的汽修店", "天猫养车"],
    "service": ["换了机油和机滤", "换了四条轮胎", "补了左后轮的胎", "做了五万公里保养", "换了刹车片", "修了空调不制冷"],
    "insurer": ["平安", "人保", "太平洋", "大地保险"],
    "indicator": ["尿酸", "血脂", "转氨酶", "血糖", "胆固醇", "血压"],
    "advice": ["少喝啤酒少吃海鲜", "每周运动三次", "三个月后复查", "戒掉夜宵", "少吃甜食"],
    "drug": ["青霉素", "头孢", "阿莫西林", "布洛芬", "磺胺类药"],
    "city": ["成都", "厦门", "西安", "大理", "青岛", "长沙", "哈尔滨", "桂林", "苏州", "三亚", "重庆", "昆明"],
    "companion": ["老婆", "爸妈", "大学室友", "同事小周", "女儿", "表哥一家"],
    "hotel": ["亚朵", "全季", "一家海边民宿", "希尔顿欢朋", "古城里的客栈", "汉庭"],
    "project": ["会员积分系统", "仓库盘点小程序", "年度预算报表", "新门店选址", "客服知识库", "供应商对账平台"],
    "colleague": ["王磊", "李静", "陈晨", "赵敏", "刘洋", "孙悦", "周航", "吴倩"],
    "dept": ["财务部", "法务", "采购部", "市场部", "运维组", "人事"],
    "relative": ["我妈", "我爸", "外婆", "岳父", "小姨", "我哥", "婆婆"],
    "gift": ["养生壶", "羊毛围巾", "按摩椅", "茶叶", "智能手环", "老花镜"],
    "child": ["儿子", "女儿", "侄子", "外甥女"],
    "school": ["实验小学", "第二中学", "阳光幼儿园", "外国语学校"],
    "grade": ["三年级", "大班", "初一", "五年级", "高二"],
    "appliance": ["洗碗机", "空调", "冰箱", "热水器", "扫地机器人", "净水器", "洗衣机"],
    "brand": ["美的", "海尔", "西门子", "格力", "小米", "松下"],
    "gym": ["小区旁边的健身房", "乐刻", "超级猩猩", "公司楼下的游泳馆", "羽毛球馆"],
    "sport": ["游泳", "羽毛球", "瑜伽", "动感单车", "力量训练", "跑步"],
    "instrument": ["吉他", "钢琴", "尤克里里", "古筝", "架子鼓"],
    "surname": ["张", "何", "林", "郑", "黄", "马"],
    "bank": ["招行", "工行", "建行", "支付宝", "微众银行"],
    "product": ["一款理财", "三年期大额存单", "货币基金", "定期存款", "国债"],
    "reason": ["小时候吃伤了", "信佛", "一吃就胃疼", "受不了那个味道", "在减脂"],
    "restaurant": ["巷口那家湘菜馆", "海底捞", "楼下的潮汕砂锅粥", "一家日料店", "西贝"],
    "dish": ["小炒黄牛肉", "番茄锅底", "虾蟹粥", "三文鱼刺身", "莜面"],
    "weekday": ["周二", "周三", "周四", "周六", "周日"],
}

# domain -> list of (memory template, [cue templates]) ; a cue is the last user turn that needs it.
DOMAINS = {
    "pet": [
        ("{m}月{d}日带{pet}去{clinic}打了{vaccine}", ["{pet}下一针该什么时候打了？上次是在哪儿打的我都忘了", "上回给{pet}打针是哪天来着，我想算算间隔"]),
        ("{pet}对{food}过敏，吃了会{symptom}", ["我想给{pet}买点零食，有什么它不能碰的吗", "{pet}今天又{symptom}了，是不是吃错东西了"]),
        ("{pet}是只{breed}，体重{w}公斤，医生让控制饮食", ["{pet}最近是不是又胖了，医生上次怎么说的", "给{pet}换狗粮猫粮之前，它现在多重来着"]),
    ],
    "car": [
        ("{m}月{d}日{car}在{shop}{service}，花了{money}元", ["{car}上次保养是什么时候、在哪做的", "{car}又该去店里了吧，上回做了什么项目"]),
        ("{car}的车险{m}月到期，去年买的是{insurer}", ["{car}的保险是不是快到期了", "续保的时候要比价，{car}现在是哪家承保的"]),
    ],
    "health": [
        ("{m}月体检查出{indicator}偏高，医生建议{advice}", ["我最近在调整作息，之前体检哪项指标有问题", "下周要复查，医生当时对{indicator}给了什么建议"]),
        ("对{drug}过敏，用了会起红疹，{y}年在医院试过一次，差点送急诊", ["我嗓子发炎想去药店买点消炎药，有要避开的吗", "医生要开药的话，我得提醒他什么"]),
    ],
    "travel": [
        ("{m}月和{companion}去{city}玩了{n}天，住在{hotel}", ["想再去一趟{city}，上回住的那家叫什么来着", "{companion}问我们上次出去玩了几天，是去{city}那次"]),
        ("护照{y}年{m}月到期，签发地是{city}，上次出境是和{companion}一起", ["我想办个签证出国，证件还能用多久", "出境之前护照有效期够不够"]),
    ],
    "work": [
        ("负责{project}，截止时间是{m}月底，对接人是{colleague}", ["{project}那边的进度得跟谁确认", "{project}最晚哪天要交"]),
        ("{colleague}是{dept}的接口人，报销和合同找他", ["合同盖章的事情我该去找{dept}的谁", "有一笔报销卡住了，{dept}那边谁管这个"]),
    ],
    "family": [
        ("{relative}的生日是{m}月{d}日，{relative}一直想要个{gift}", ["{relative}生日快到了吧，送什么好呢", "帮我想想给{relative}准备什么礼物，日子是哪天"]),
        ("{child}在{school}读{grade}，班主任姓{surname}，每天下午四点半放学", ["家长会要找班主任，{child}的老师姓什么", "{child}现在上几年级了，在哪个学校"]),
    ],
    "home": [
        ("家里的{appliance}是{y}年买的{brand}，保修{n}年", ["{appliance}好像坏了，还在保修期吗", "{appliance}是什么牌子的，报修要用"]),
        ("房租每月{money}元，每月{d}号转给房东，押一付三，合同明年到期", ["这个月房租该哪天交，交多少", "房东问我转账日期，我们约的是几号"]),
    ],
    "hobby": [
        ("在{gym}办了年卡，每周{wd}晚上练{sport}", ["我这周{wd}晚上有空吗，平时那天要去干嘛", "健身卡是在哪家办的来着，想续一下"]),
        ("周末在学{instrument}，老师姓{surname}，一节课{money}元，一次一个半小时", ["{instrument}课一节多少钱来着", "学琴的老师姓什么，我要给他发消息"]),
    ],
    "finance": [
        ("在{bank}买了{product}，{y}年{m}月到期", ["我那笔钱什么时候到期能取出来", "{bank}那边买的东西到期了没"]),
        ("信用卡账单日每月{d}号，还款日是账单日后二十天", ["信用卡哪天出账单", "这个月信用卡最晚哪天要还"]),
    ],
    "food": [
        ("吃饭不吃{food}，因为{reason}，点菜的时候要提前说", ["帮我点个外卖，有什么忌口你记得吗", "朋友请吃饭让我报忌口，我不吃什么来着"]),
        ("最喜欢{restaurant}的{dish}，每次去都必点，一般坐靠窗的位置", ["周末想出去吃顿好的，我常去的那家是哪", "帮我订个位，就是我最爱吃{dish}的那家"]),
    ],
}

FILLER_USER = [
    "今天天气真热，出门走两步就一身汗。", "早上地铁特别挤，差点没挤上去。", "昨晚看了场球赛，熬到一点多才睡。",
    "最近老是失眠，脑子停不下来。", "公司楼下新开了一家咖啡店，味道还行。", "周末本来想出去爬山，结果下雨了。",
    "我在考虑要不要换个手机，现在这个电池不行了。", "你帮我查一下明天会不会下雨。", "今天开了一上午的会，好累。",
    "刚才快递员打电话说包裹放驿站了。", "我想学点做饭，有没有简单的菜推荐。", "孩子的作业越来越难了，我都辅导不了。",
    "最近股市跌得厉害，心情不太好。", "楼上装修好几天了，电钻声吵得不行。", "朋友推荐了一部电视剧，说特别好看。",
    "下午要去银行办点事，不知道排队久不久。", "我们小区最近在搞垃圾分类，挺麻烦的。", "感觉最近肩颈特别酸，可能是坐太久了。",
    "晚上想吃点清淡的，不知道做什么。", "今天路上堵了快一个小时。", "我打算下个月开始早起跑步。",
    "手机上那个记账软件你觉得好用吗。", "过两天同学聚会，不知道穿什么。", "新来的同事人挺好的，就是话有点多。",
]
FILLER_ASSISTANT = [
    "听起来确实挺辛苦的，注意多休息。", "好的，我记下了，需要的时候提醒你。", "可以的，我帮你整理一下要点。",
    "这个我建议先别着急，多比较几家再决定。", "明白，你可以先列个清单，一件件来。", "天气热记得多喝水，出门带把伞防晒。",
    "如果睡不好，可以试试睡前少看手机。", "没问题，有什么需要随时告诉我。", "这个挺常见的，不用太担心。",
    "我查了一下，明天多云转小雨，气温二十五度左右。", "可以试试番茄炒蛋或者清炒时蔬，简单又快。", "嗯，慢慢来，先把最重要的事情做完。",
]


def _fill(template: str, slots: dict) -> str:
    return template.format(**slots)


def _slots(rng: random.Random) -> dict:
    s = {key: rng.choice(values) for key, values in V.items()}
    s.update(m=rng.randint(1, 12), d=rng.randint(1, 28), w=rng.randint(3, 30), n=rng.randint(2, 7),
             y=rng.randint(2027, 2033), money=rng.choice([180, 260, 350, 420, 680, 1200, 2400, 3800, 4500]),
             wd=s["weekday"])
    return s


def _dialogue(rng: random.Random, last: str) -> str:
    lines, size = [], 0
    target = rng.randint(300, 760) - len(last)
    while size < target:
        for speaker, bank in (("用户", FILLER_USER), ("助手", FILLER_ASSISTANT)):
            line = f"{speaker}：{rng.choice(bank)}"
            lines.append(line)
            size += len(line) + 1
    lines.append(f"用户：{last}")
    return "\n".join(lines)[-800:].split("\n", 1)[-1] if size > 800 else "\n".join(lines)


def make_case(rng: random.Random, user_no: int, seed: int, probes: int) -> dict:
    start = datetime(2026, 1, 5, 9, 0, tzinfo=TZ)
    memories, seen = [], set()
    for domain, templates in DOMAINS.items():
        per_domain = 11
        while sum(1 for m in memories if m["domain"] == domain) < per_domain:
            index = rng.randrange(len(templates))
            slots = _slots(rng)
            text = _fill(templates[index][0], slots)
            if text in seen or not 20 <= len(text) <= 80:
                continue
            seen.add(text)
            memories.append({"domain": domain, "template": index, "slots": slots, "text": text})
    rng.shuffle(memories)
    steps = []
    for n, m in enumerate(memories):
        at = (start + timedelta(hours=7 * n)).isoformat()
        steps.append({"op": "memory", "label": f"m{n}", "kind": "event", "content": m["text"], "at": at})
    probe_at = start + timedelta(hours=7 * len(memories) + 24)
    for p, n in enumerate(rng.sample(range(len(memories)), probes)):
        m = memories[n]
        cue = _fill(rng.choice(DOMAINS[m["domain"]][m["template"]][1]), m["slots"])
        steps.append({"op": "probe", "label": f"p{p}-{m['domain']}", "at": (probe_at + timedelta(minutes=p)).isoformat(),
                      "session": f"s{p}", "query": _dialogue(rng, cue), "k": 5, "expect": {"labels": [f"m{n}"]}})
    return {"id": f"longdialog-zh-{seed}-{user_no}", "description": "long dialogue query, one event memory needed",
            "org": "longdialog", "user": f"u{user_no}", "entities": [], "steps": steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--probes", type=int, default=25)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with open(args.out, "w", encoding="utf-8") as handle:
        for user_no in range(1, args.users + 1):
            handle.write(json.dumps(make_case(rng, user_no, args.seed, args.probes), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
