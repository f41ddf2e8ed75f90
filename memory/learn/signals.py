"""The rule signals the gate reads beside a sentence's embeddings: which closed class a sentence may
belong to (a question, a request to the assistant, a greeting/thanks/ack, a do-not-remember, a
feeling about the moment, a one-time instruction), what cue words it carries, who it is about, and its
shape (numbers, times, language, length). Each is a feature with a weight the training learns; none
decides alone except the closed classes ``closed_class`` names."""
from __future__ import annotations

import re
from datetime import UTC, datetime

import numpy as np

from common.text import detect_lang
from memory.extraction.patterns import load_patterns
from memory.extraction.rules_en import EN
from memory.extraction.rules_zh import ZH
from memory.extraction.standing import onset, task_scope
from memory.extraction.text import strip_end
from memory.extraction.timeexpr import find_times

__all__ = ["SIGNALS", "closed_class", "signals", "split_question"]

_PATTERNS = load_patterns("gate")  # memory/extraction/lexicons/gate.toml
_CJK = re.compile(r"[\u4e00-\u9fff]")
_LATIN = re.compile(r"[A-Za-z]{2,}")
_REF = datetime(2026, 1, 15, 12, tzinfo=UTC)  # times are read for their tense only
_CLAUSE_END = re.compile(r"(?<=[，,；;])\s*")

SIGNALS = (
    "question", "request", "ack", "do_not_remember", "feeling", "task_scope", "long_term", "habit",
    "correction", "change", "first_person", "second_person", "third_person", "number", "past_time",
    "future_time", "onset", "zh", "mixed", "length",
)


def _lexicon(lang: str):
    return ZH if lang == "zh" else EN


def closed_class(sentence: str) -> str | None:
    """The closed class that decides a user sentence without the model: "question", "ack" (a greeting,
    thanks or acknowledgement and nothing else), "do_not_remember", "forget_request" (asking to forget
    something said before: the sentence is not kept, but unlike a do-not-remember the rest of its
    message is) or "task" (an instruction for the task at hand only). None: the model decides."""
    s = strip_end(sentence.strip())
    lang = detect_lang(s)
    lex = _lexicon(lang)
    if ZH.do_not_remember(s) or EN.do_not_remember(s):
        return "do_not_remember"
    if ZH.forget_request.search(s) or EN.forget_request.search(s):
        return "forget_request"
    if lex.is_question(sentence.strip()):
        return "question"
    if _PATTERNS.zh.ack.match(s) or _PATTERNS.en.ack.match(s):
        return "ack"
    if (lex.task_marker.search(s) and lex.task_instruction.search(s) and not lex.long_term.search(s)) \
            or task_scope(s, lang):
        return "task"
    return None


def split_question(sentence: str) -> list[str]:
    """A question that opens with what the user states, as that statement and the question: "我的TSH是5.2，
    这个正常吗" → ["我的TSH是5.2", "这个正常吗"], "my son is 7, is that too young for a tablet?" → ["my son is
    7", "is that too young for a tablet?"]. The question's closed class then drops only the question,
    and the statement is read like any other sentence (remember by default). The statement is the
    clauses before the first one that asks; a clause that only supposes or asks ("如果下雨", "if it
    rains", "我想问一下") states nothing, so then the sentence stays whole. Any other sentence: itself."""
    s = sentence.strip()
    lang = detect_lang(s)
    lex = _lexicon(lang)
    if not lex.is_question(s):
        return [sentence]
    clauses = [c for c in _CLAUSE_END.split(s) if c]
    asks = next((i for i, c in enumerate(clauses) if lex.is_question(c.rstrip("，,；; "))), len(clauses))
    if asks == 0 or asks == len(clauses):
        return [sentence]
    lead = "".join(clauses[:asks]).rstrip("，,；; ")
    words = _PATTERNS.zh if lang == "zh" else _PATTERNS.en
    # A name or a topic alone ("老王，…", "Sam, …") is whom or what the question is put to.
    short = len(lead) < 4 if lang == "zh" else len(lead.split()) < 2
    if short or words.supposes.match(lead) or closed_class(lead) is not None:
        return [sentence]
    return [lead, "".join(clauses[asks:]).strip()]


def signals(sentence: str) -> np.ndarray:
    """The sentence's rule signals, in the order of SIGNALS (0/1 flags, length as log chars / 5)."""
    s = strip_end(sentence.strip())
    lang = detect_lang(s)
    lex, words = _lexicon(lang), _PATTERNS.zh if lang == "zh" else _PATTERNS.en
    times = find_times(s, _REF, lang)
    cjk, latin = bool(_CJK.search(s)), bool(_LATIN.search(s))
    flags = (
        lex.is_question(sentence.strip()),
        lex.is_request(s) or bool(lex.proposal.search(s)),
        bool(_PATTERNS.zh.ack.match(s) or _PATTERNS.en.ack.match(s)),
        ZH.do_not_remember(s) or EN.do_not_remember(s),
        bool(lex.opinion.search(s)),
        bool(lex.task_marker.search(s) and lex.task_instruction.search(s)) or task_scope(s, lang),
        bool(lex.long_term.search(s)),
        bool(lex.habit.search(s)),
        bool(lex.correction_lead.match(s) or lex.correction_any.search(s)),
        bool(lex.migration.search(s) or lex.update.search(s)),
        bool(words.first.search(s)),
        bool(words.second.search(s)),
        bool(words.third.search(s)),
        bool(words.number.search(s)),
        any(t.tense == "past" for t in times),
        any(t.tense == "future" for t in times),
        onset(s, lang),
        lang == "zh",
        cjk and latin,
    )
    return np.array([float(f) for f in flags] + [np.log1p(len(s)) / 5.0], dtype=np.float32)
