"""How a Chinese personal name is said in part (DESIGN §8): "王工", "老李", "王奶奶", "王晓" of 王晓雯. Only for
types that name people (entities/typenouns.py); the matcher registers these forms and entities/part_index.py
indexes them. Pure Python, no Django.
"""
from __future__ import annotations

import re

from entities.surface import normalize_key

__all__ = ["given_name", "person_forms"]

# How people address or refer to a person by surname: "王工", "张总", "老李", "小陈", "刘老师".
_TITLES = ("工", "总", "老师", "经理", "师傅", "医生", "大夫", "主任", "姐", "哥", "先生", "女士", "阿姨", "叔")
# Titles of a trade or an office said after a surname ("吴教练", "李店长", "陈护士"): forms of the people who work there
# only, never of those served (a patient 王丽 is not "王护士", a student 王思远 not "王教练").
_TRADE_TITLES = ("教练", "老板", "店长", "护士", "律师", "教授", "院长", "校长", "主管", "队长", "班长", "组长", "科长",
                 "处长", "厂长", "部长", "所长", "会计", "司机")
# Kinship titles said after a surname ("王奶奶") or, for a three-character name, after the given name ("桂芳奶奶").
_KIN = ("奶奶", "爷爷", "大爷", "大妈", "婆婆", "伯伯", "叔叔", "阿姨")
_PERSON_NAME = re.compile("^[\u3400-\u9fff]{2,4}$")


def person_forms(name: str, *, staff: bool = False) -> set[str]:
    """The ways a Chinese personal name (of a type that names people, entities/typenouns.py) is said in part: the
    surname with a title or 老/小, and for three characters the surname with the first given character ("王晓" of
    王晓雯 and 王晓东 alike, so it names both)."""
    key = normalize_key(name)
    if not _PERSON_NAME.match(key):
        return set()
    surname = key[0]
    forms = {surname + t for t in (*_TITLES, *_KIN, *(_TRADE_TITLES if staff else ()))} | {"老" + surname, "小" + surname}
    if len(key) == 3:
        forms.add(key[:2])
        forms.update(key[1:] + t for t in _KIN)
    return forms - {key}


def given_name(name: str) -> str | None:
    """The given name of a three-character Chinese personal name ("子豪" of 李子豪): how family, friends and
    colleagues say it. A name part, not a registered form: it names alone only when rare (entities/name_parts.py, rare_word)."""
    key = normalize_key(name)
    return key[1:] if len(key) == 3 and _PERSON_NAME.match(key) else None
