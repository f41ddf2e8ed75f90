"""Generic type nouns: the everyday words for a kind of thing, mapped onto whatever a registry calls its types.

A business registers its types in its own words, usually English identifiers (`vehicle`, `truck`,
`medical_device`, `branch`, `po`), while people ask "哪辆车", "那家店", "客厅的电器", "哪家供应商". The
registry's own vocabulary is learnt elsewhere (entities/partial.py: type names, labels every name of a
type carries); what it cannot teach is that "车" and `truck` are one kind. This small table can: each
*kind* lists the generic nouns that name it in text (Chinese and English) and the stems a registered
type identifier of that kind carries. A registered type belongs to a kind when one of the words of its
identifier's head word (its last: `medical_device` → device, `asset_model` → model) is one of the stems
or its plural, or when the identifier is itself one of the kind's nouns (a registry that names its types
in Chinese).

Only generic nouns belong here (a vehicle, a device, a store), never a business's vocabulary (a
harvester, a reefer): a word the registry can teach is learnt from it. A kind no registered type
belongs to says nothing, so a registry without vehicles ignores "车".
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

__all__ = ["KINDS", "heads_pointer", "kinds_of_type", "types_by_kind", "works_here"]

# kind -> (nouns naming it in text, stems of type identifiers of that kind)
KINDS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "vehicle": (("车", "车辆", "车子", "巴士", "卡车", "货车", "vehicle", "vehicles", "car", "cars", "truck", "trucks",
                 "bus", "buses", "van", "vans"),
                ("vehicle", "car", "truck", "bus", "van", "lorry", "fleet")),
    "device": (("设备", "机器", "仪器", "电器", "器材", "器械", "装置", "家电", "device", "devices", "equipment",
                "machine", "machines", "instrument", "instruments", "appliance", "appliances"),
               ("device", "equipment", "machine", "instrument", "appliance", "apparatus", "asset")),
    "store": (("店", "门店", "分店", "店铺", "网点", "store", "stores", "shop", "shops", "branch", "branches", "outlet",
               "outlets"),
              ("store", "shop", "branch", "outlet")),
    "supplier": (("供应商", "供货商", "厂商", "厂家", "supplier", "suppliers", "vendor", "vendors"),
                 ("supplier", "vendor")),
    "order": (("单子", "单据", "订单", "工单", "order", "orders", "ticket", "tickets"),
              ("order", "ticket", "po", "workorder", "repair", "maintenance", "service", "booking", "reservation",
               "incident", "request", "visit", "appointment", "claim", "job", "task", "invoice", "inspection")),
    "person": (("会员", "客户", "顾客", "员工", "人员", "老人", "长者", "病人", "患者", "住户", "业主",
                "member", "members", "customer", "customers", "person", "people",
                "staff", "employee", "employees"),
               ("member", "customer", "client", "person", "people", "staff", "employee", "patient", "user", "contact",
                "driver", "engineer", "technician", "doctor", "nurse", "teacher", "student", "tenant", "resident",
                "guest", "owner", "manager", "agent", "worker", "operator", "farmer",
                # roles a business registers its people under
                "coach", "trainer", "instructor", "tutor", "therapist", "caregiver", "carer", "physician", "surgeon",
                "dentist", "pharmacist", "vet", "chef", "cook", "cashier", "clerk", "receptionist", "mechanic",
                "pilot", "captain", "volunteer", "supervisor", "inspector", "officer", "lawyer", "accountant",
                "cleaner", "guard", "nanny", "relative", "child", "parent", "elder", "senior", "athlete",
                "trainee", "learner", "pupil", "visitor", "passenger", "buyer", "landlord", "family")),
    "room": (("房间", "屋子", "room", "rooms"), ("room",)),
    "ship": (("船", "船舶", "货轮", "ship", "ships", "vessel", "vessels", "boat", "boats"), ("vessel", "ship", "boat")),
    "container": (("集装箱", "货柜", "container", "containers"), ("container",)),
    "animal": (("宠物", "动物", "狗", "狗狗", "猫", "猫咪", "犬", "pet", "pets", "animal", "animals", "dog", "dogs", "cat",
                "cats"),
               ("pet", "animal", "dog", "cat", "horse", "cattle", "livestock")),
    "site": (("场站", "站点", "厂区", "site", "sites", "depot", "depots", "location", "locations"),
             ("depot", "site", "station", "location", "yard", "warehouse", "plant")),
}

# Stems of the person types a business serves rather than employs: a trade title ("王护士") is never theirs.
_SERVED = ("member", "customer", "client", "patient", "user", "contact", "tenant", "resident", "guest", "owner",
           "student", "pupil", "learner", "trainee", "passenger", "visitor", "buyer", "child", "elder", "senior",
           "family", "relative", "parent", "farmer", "person", "people")

_SPLIT = re.compile(r"[\s_\-./]+")
# A generic noun is the thing asked about only as the head of a noun phrase that points: after a determiner
# with its classifier ("那辆车", "哪家供应商", "这台口腔设备"), after "的" ("影像室的设备", "所在的门店"), or in
# English after a determiner or possessive ("the vehicle", "which store", "its device"). Elsewhere it is the
# sentence's other object ("今天有会员用过吗", "收车", "春熙路店"), which says nothing about the mention.
_CLASSIFIERS = "辆台家个张位间部款条只所座栋件份单艘套批把块根架头"
_POINTER_ZH = re.compile(f"(?:(?:[那这哪该此][{_CLASSIFIERS}]|的)[^，。？！,.?!;；的]{{0,6}}|[那这])$")
_POINTER_EN = re.compile(r"\b(?:the|that|this|which|what|its|their|our|my|her|his|each|every|any)\s+(?:[\w-]+\s+){0,3}$",
                         re.IGNORECASE)


def heads_pointer(text: str, start: int) -> bool:
    """The noun starting at `start` heads a pointing noun phrase (see above)."""
    before = text[max(0, start - 40):start]
    return bool(_POINTER_ZH.search(before) or _POINTER_EN.search(before))


@lru_cache(maxsize=4096)
def kinds_of_type(type_: str) -> frozenset[str]:
    """The kinds a registered type identifier belongs to (`medical_device` → {"device"})."""
    words = [w for w in _SPLIT.split(type_.casefold()) if w]
    head = words[-1] if words else ""
    out = set()
    for kind, (nouns, stems) in KINDS.items():
        if type_.casefold() in nouns or any(head in (stem, stem + "s", stem + "es") for stem in stems):
            out.add(kind)
    return frozenset(out)


@lru_cache(maxsize=4096)
def works_here(type_: str) -> bool:
    """A person type of the business's own people (staff, nurse, coach), not of those it serves (see _SERVED)."""
    if "person" not in kinds_of_type(type_):
        return False
    words = [w for w in _SPLIT.split(type_.casefold()) if w]
    head = words[-1] if words else ""
    return not any(head in (stem, stem + "s") for stem in _SERVED)


def types_by_kind(types: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """kind -> the registered types of that kind, for one registry."""
    out: dict[str, list[str]] = {}
    for type_ in sorted(types):
        for kind in kinds_of_type(type_):
            out.setdefault(kind, []).append(type_)
    return {k: tuple(v) for k, v in out.items()}
