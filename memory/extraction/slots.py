"""Slot keys: the subject a memory is about, with the value taken out (shared part; the
language-specific derivation is in slots_zh.py and slots_en.py).

The write path supersedes an older memory only when the slot key (or a linked entity) matches,
so a key must come out the same for "维保计划默认给我看未来两周的" and "以后维保计划默认改成看未来
一个月的": subject 维保计划, attribute 时间范围, the values differ. A key is
`<prefix>:<subject>.<attribute>`; the attribute comes from what kind of value the sentence states
(a database name -> 数据库, a place -> 位置, "两周" -> 时间范围, "按...排序" -> 排序) or from an
explicit "X的Y是Z". When neither structure is recognised the key is None: a wrong key would make
the write path replace an unrelated memory, a missing one only costs a semantic comparison.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["KIND_PREFIX", "SlotParts", "tech_category", "value_slot"]

KIND_PREFIX = {"preference": "pref", "fact": "fact", "event": "event", "context": "task", "suggestion": "sugg"}


@dataclass(frozen=True)
class SlotParts:
    subject: str
    attribute: str | None
    value: str | None  # the stated value, used to tell a repetition from an update
    # False when only the kind of value was recognised ("两周" -> 时间范围) and the subject is
    # whatever words were left: good enough for a preference, too weak to call a sentence a fact.
    structural: bool = True

    def key(self, kind: str) -> str:
        prefix = KIND_PREFIX[kind]
        return f"{prefix}:{self.subject}.{self.attribute}" if self.attribute else f"{prefix}:{self.subject}"


def value_slot(subject: str, attr: str, value: str, kind: str, *, current_task: str) -> SlotParts | None:
    """A slot known only by the kind of its value: the subject is whatever words are left; with none
    left, a task-only instruction is about the current task and anything else has no slot."""
    if subject:
        return SlotParts(subject, attr, value, structural=False)
    if kind == "context":
        return SlotParts(current_task, attr, value, structural=False)
    return None


# ---------------------------------------------------------------------------- value catalogue
# (attribute zh, attribute en, pattern). Versions ("MySQL 8", "Java 17") belong to the value.
_TECH: list[tuple[str, str, re.Pattern[str]]] = [
    ("数据库", "database", re.compile(
        r"(?<![A-Za-z])(?:MySQL|MariaDB|PostgreSQL|Postgres|Oracle|SQL\s?Server|SQLite|MongoDB|Redis|"
        r"Elasticsearch|ClickHouse|TiDB|OceanBase|DB2|Cassandra|HBase|Doris|StarRocks|达梦|人大金仓|Access)"
        r"(?:\s*\d+(?:\.\d+)*)?(?![A-Za-z])", re.I)),
    ("编程语言", "programming language", re.compile(
        r"(?<![A-Za-z])(?:Java|Python|Golang|Go(?=语言)|Rust|C\+\+|C#|JavaScript|TypeScript|PHP|Kotlin|Swift|"
        r"Ruby|Scala|Perl|Lua|Dart|Elixir)(?:\s*\d+(?:\.\d+)*)?(?![A-Za-z+#])", re.I)),
    ("操作系统", "operating system", re.compile(
        r"(?<![A-Za-z])(?:Windows|Linux|macOS|Ubuntu|CentOS|Debian|Fedora|麒麟|统信)(?:\s*\d+(?:\.\d+)*)?(?![A-Za-z])",
        re.I)),
    ("云平台", "cloud platform", re.compile(r"(?<![A-Za-z])(?:AWS|Azure|GCP|阿里云|腾讯云|华为云)(?![A-Za-z])", re.I)),
    ("格式", "format", re.compile(r"(?<![A-Za-z])(?:Excel|PDF|Markdown|CSV|Word|JSON)(?![A-Za-z])", re.I)),
]


def tech_category(text: str, lang: str) -> tuple[str, str] | None:
    """(attribute, value) of the first known technology named in `text`."""
    best: tuple[int, str, str] | None = None
    for zh, en, pattern in _TECH:
        m = pattern.search(text)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), zh if lang == "zh" else en, m.group(0).strip())
    return (best[1], best[2]) if best else None
