"""Extractive rolling summary of the messages that fell out of the window (zh + en).

This is the offline default; an LLM summariser can replace it behind the same
signature. It picks whole sentences, so it never invents anything: the ones that carry
information (user turns, numbers, dates, ids, names, places, corrections, decisions)
win, repeated filler appears at most once, and tool outputs are only mentioned.
The result is one line per source message, ``用户: …`` / ``user: …``, chronological.
Passing the previous summary back in makes it roll forward: its sentences compete
with the new ones, as the oldest material.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from common.text import (
    cjk_ratio,
    is_cjk,
    jaccard,
    normalize_for_compare,
    overlap,
    pos_tag,
    split_sentences,
    tokenize,
)
from conversations.tokens import count_tokens, truncate_to_tokens
from conversations.window import WindowMessage, normalize_tool_call

__all__ = ["summarize_extractive"]

_LABELS = {
    "zh": {"user": "用户", "assistant": "助手", "tool": "工具", "system": "系统"},
    "en": {"user": "user", "assistant": "assistant", "tool": "tool", "system": "system"},
}
_PREFIX = re.compile(r"^\s*(用户|助手|工具|系统|user|assistant|tool|system)\s*[:：]\s*", re.IGNORECASE)
_ROLE_OF_LABEL = {label.lower(): role for labels in _LABELS.values() for role, label in labels.items()}

# A sentence longer than this is split at commas/colons, so one padded sentence
# cannot eat the budget and its repeated clauses can be told apart.
_LONG_SENTENCE_TOKENS = 48
_CLAUSE_BREAK = re.compile(r"(?<=[，；：])|(?<=[,;:])(?=\s)")

_NEAR_DUP_JACCARD = 0.8
_NEAR_DUP_CONTAINMENT = 0.9

# ---------------------------------------------------------------------------
# Information signals (each a regex; zh and en side by side)
# ---------------------------------------------------------------------------

_ZH_NUM = "零一二两三四五六七八九十百千万半"
_NUMBER = re.compile(
    rf"\d|[{_ZH_NUM}]+(?:点|号|月|日|天|周|年|个|台|次|元|块|小时|分钟|公里|吨|亩|斤|人|辆|批)"
)
_DATE_TIME = re.compile(
    r"\d{4}[-/.年]\d{1,2}|\d{1,2}月\d{1,2}[日号]?|\b\d{1,2}:\d{2}\b|\b\d{1,2}\s?(?:am|pm)\b"
    rf"|[\d{_ZH_NUM}]+点|今天|明天|后天|昨天|前天|上午|下午|晚上|早上|中午|凌晨|周[一二三四五六日末]|星期|下周|本周|上周|月底|月初"
    r"|\b(?:today|tomorrow|yesterday|tonight|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    r"|january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|next week|last week|morning|afternoon|evening)\b",
    re.IGNORECASE,
)
_IDENTIFIER = re.compile(r"\b[A-Za-z]+[-_#]?\d+[A-Za-z0-9-]*\b|\b\d+[A-Za-z]+\d*\b|#\d+")
_LATIN = re.compile(r"[A-Za-z]{2,}")
_PLACE = re.compile(
    r"地点|地址|位于|在[^，。；\s]{1,10}?(?:区|棚|库|场|厂|站|室|楼|路|村|镇|县|市|省|基地|车间|仓|店|园|港)"
    r"|\b(?:address|located|warehouse|barn|building|room|site|office|depot|yard|field)\b",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"不对|不是.{0,8}而是|改到|改成|改为|改在|换成|换到|更正|纠正|其实|应该是|取消|搞错|说错|弄错"
    r"|\b(?:actually|instead|correction|changed?|moved?|rather|no longer|cancel(?:led|ed)?|not\s+\w+\s+but|mistake)\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"决定|确定|确认|定了|就这样|同意|安排|计划|预约|预订|需要|必须|要求|务必|优先|记住|偏好|喜欢|不要|别"
    r"|\b(?:decided?|decision|confirm(?:ed)?|agreed?|let's|plan(?:ned)?|schedul\w*|book(?:ed)?|must|need(?:s|ed)?"
    r"|prefer\w*|always|never|remember|deadline|due)\b",
    re.IGNORECASE,
)
_ACK = re.compile(
    r"^(?:好的?|嗯+|谢谢|多谢|收到|明白|可以|行|没问题|ok(?:ay)?|thanks?(?: you)?|got it|sure|great|cool|yes|no)\W*$",
    re.IGNORECASE,
)
_PROPER_FLAGS = {"nr", "ns", "nt", "nz", "nrt", "nrfg"}


@dataclass
class _Candidate:
    order: int  # chronological position (previous summary first)
    source: int  # sentences of one source share a line in the output
    role: str | None  # None: a previous-summary line without a role prefix
    text: str
    from_summary: bool = False
    score: float = 0.0
    cost: int = 0
    terms: frozenset[str] = frozenset()


# ---------------------------------------------------------------------------
# Candidates
# ---------------------------------------------------------------------------


def _pieces(text: str) -> list[str]:
    pieces: list[str] = []
    for sentence in split_sentences(text):
        if count_tokens(sentence) <= _LONG_SENTENCE_TOKENS:
            pieces.append(sentence)
            continue
        pieces.extend(c.strip() for c in _CLAUSE_BREAK.split(sentence) if normalize_for_compare(c))
    return pieces


def _tool_names(messages: list[WindowMessage]) -> dict[str, str]:
    names: dict[str, str] = {}
    for message in messages:
        for call in message.tool_calls or []:
            normal = normalize_tool_call(call)
            names[normal["id"]] = normal["function"]["name"]
    return names


def _call_mention(call: dict, lang: str) -> str:
    normal = normalize_tool_call(call)
    # Arguments often hold the ids the user talks about; keep a short head of them.
    arguments = truncate_to_tokens(normal["function"]["arguments"], 24)
    verb = "调用" if lang == "zh" else "called"
    return f"{verb} {normal['function']['name']}({arguments})"


def _result_mention(name: str, lang: str) -> str:
    if lang == "zh":
        return f"{name or '工具'} 返回了结果（内容略）"
    return f"{name or 'a tool'} returned a result (content omitted)"


def _collect(messages: list[WindowMessage], previous_summary: str | None, lang: str) -> list[_Candidate]:
    found: list[_Candidate] = []

    def add(source: int, role: str | None, text: str, *, from_summary: bool = False) -> None:
        found.append(_Candidate(len(found), source, role, text, from_summary))

    source = 0
    for line in (previous_summary or "").splitlines():
        match = _PREFIX.match(line)
        role = _ROLE_OF_LABEL[match.group(1).lower()] if match else None
        for piece in _pieces(line[match.end() :] if match else line):
            add(source, role, piece, from_summary=True)
        source += 1

    tool_names = _tool_names(messages)
    for message in messages:
        if message.role == "tool":
            # Tool output is bulky and re-fetchable: one line says that it happened.
            add(source, "tool", _result_mention(tool_names.get(message.tool_call_id or "", ""), lang))
        else:
            for piece in _pieces(message.content or ""):
                add(source, message.role, piece)
            for call in message.tool_calls or []:
                add(source, message.role, _call_mention(call, lang))
        source += 1
    return found


# ---------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------

_ROLE_WEIGHT = {"user": 1.5, "assistant": 0.3, "tool": -0.5}


def _proper_noun_bonus(text: str) -> float:
    if cjk_ratio(text) > 0:
        return 1.0 if any(flag in _PROPER_FLAGS for _, flag in pos_tag(text)) else 0.0
    words = re.findall(r"[A-Za-z][\w'-]*", text)
    # Capitalised words past the first one (which is capitalised anyway), "I" excepted.
    return 1.0 if any(w[0].isupper() and w != "I" for w in words[1:]) else 0.0


def _place_bonus(text: str) -> float:
    if _PLACE.search(text):
        return 1.0
    if cjk_ratio(text) > 0 and any(flag == "ns" for _, flag in pos_tag(text)):
        return 1.0
    return 0.0


def _score(candidate: _Candidate, repeats: int, position: float) -> float:
    text = candidate.text
    score = 1.0 + _ROLE_WEIGHT.get(candidate.role or "", 0.0)
    if candidate.from_summary:
        score += 0.5  # it already won a place once; keeps the summary stable as it rolls
    score += 1.0 if _NUMBER.search(text) else 0.0
    score += 1.5 if _DATE_TIME.search(text) else 0.0
    score += 1.5 if _IDENTIFIER.search(text) else 0.0
    score += 0.5 if cjk_ratio(text) > 0 and _LATIN.search(text) else 0.0
    score += _proper_noun_bonus(text)
    score += _place_bonus(text)
    score += 2.5 if _CORRECTION.search(text) else 0.0
    score += 1.0 if _DECISION.search(text) else 0.0
    if _ACK.match(text.strip()):
        score -= 2.0
    elif len(candidate.terms) < 3:
        score -= 1.0
    # Text said over and over (same words, numbers aside) is padding, not news.
    score -= min(2.0, math.log2(repeats)) if repeats > 1 else 0.0
    # Later statements supersede earlier ones, so recency breaks near-ties.
    return score + 0.5 * position


def _repeat_key(text: str) -> str:
    return re.sub(r"\d+", "0", normalize_for_compare(text))


# ---------------------------------------------------------------------------
# Selection and rendering
# ---------------------------------------------------------------------------


def _is_near_duplicate(candidate: _Candidate, chosen: list[_Candidate]) -> bool:
    key = normalize_for_compare(candidate.text)
    for other in chosen:
        if key == normalize_for_compare(other.text):
            return True
        if jaccard(candidate.terms, other.terms) >= _NEAR_DUP_JACCARD:
            return True
        # A sentence and the same sentence with a prefix ("第3轮补充说明：…") are one.
        if min(len(candidate.terms), len(other.terms)) >= 3 and (
            overlap(candidate.terms, other.terms) >= _NEAR_DUP_CONTAINMENT
        ):
            return True
    return False


def _render(chosen: list[_Candidate], lang: str) -> str:
    labels = _LABELS[lang]
    joiner = "" if lang == "zh" else " "
    lines: list[str] = []
    current: tuple[int, str | None] | None = None
    for candidate in sorted(chosen, key=lambda c: c.order):
        if (candidate.source, candidate.role) == current:
            lines[-1] += joiner + candidate.text
            continue
        current = (candidate.source, candidate.role)
        prefix = f"{labels.get(candidate.role, candidate.role)}: " if candidate.role else ""
        lines.append(prefix + candidate.text)
    return "\n".join(lines)


def _line_cost(candidate: _Candidate, lang: str) -> int:
    # Priced as its own line (prefix + newline): an upper bound when lines get merged.
    label = _LABELS[lang].get(candidate.role or "", candidate.role or "")
    return count_tokens(f"{label}: {candidate.text}\n" if label else f"{candidate.text}\n")


def _select(candidates: list[_Candidate], budget_tokens: int) -> list[_Candidate]:
    chosen: list[_Candidate] = []
    used = 0
    for candidate in sorted(candidates, key=lambda c: (-c.score, -c.order)):
        if used + candidate.cost > budget_tokens or _is_near_duplicate(candidate, chosen):
            continue
        chosen.append(candidate)
        used += candidate.cost
    return chosen


def _fallback(best: _Candidate, budget_tokens: int, lang: str) -> str:
    """Not one sentence fits: hard-truncate the best one rather than return nothing."""
    label = _LABELS[lang].get(best.role or "", best.role or "")
    prefix = f"{label}: " if label else ""
    room = budget_tokens - count_tokens(prefix)
    text = truncate_to_tokens(best.text, room) if room > 0 else ""
    return prefix + text if text else ""


def _language(messages: list[WindowMessage], previous_summary: str | None) -> str:
    sample = (previous_summary or "") + "".join(m.content or "" for m in messages if m.role != "tool")
    return "zh" if is_cjk(sample) else "en"


def summarize_extractive(
    messages: list[WindowMessage], *, budget_tokens: int, previous_summary: str | None = None
) -> str:
    """A summary of ``messages`` (chronological) merged with ``previous_summary``, within ``budget_tokens``."""
    if budget_tokens <= 0:
        return ""
    lang = _language(messages, previous_summary)
    candidates = _collect(messages, previous_summary, lang)
    if not candidates:
        return ""
    repeats = Counter(_repeat_key(c.text) for c in candidates)
    last = max(len(candidates) - 1, 1)
    for candidate in candidates:
        candidate.terms = frozenset(tokenize(candidate.text))
        candidate.score = _score(candidate, repeats[_repeat_key(candidate.text)], candidate.order / last)
        candidate.cost = _line_cost(candidate, lang)

    chosen = _select(candidates, budget_tokens)
    summary = _render(chosen, lang)
    # Lines are priced separately; make sure the joined text really fits.
    while chosen and count_tokens(summary) > budget_tokens:
        chosen.remove(min(chosen, key=lambda c: c.score))
        summary = _render(chosen, lang)
    if not chosen:
        return _fallback(max(candidates, key=lambda c: (c.score, c.order)), budget_tokens, lang)
    return summary
