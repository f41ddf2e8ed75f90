"""RuleExtractor: the offline default (zh + en). Remember by default (issue 39, D25): every user
sentence is offered to the learned gate (memory/learn/gate.py), which decides keep / task-only / drop
and the kind (fact, preference, event): the closed classes (a question, a greeting/thanks/ack, a
do-not-remember, a one-time instruction) first, a small model over the sentence's embeddings and
rule signals for everything else. The rules that remain here shape what the gate keeps: the change a
sentence announces (correction, migration, update) and the old values it names, its times, its slot
key, and the state an event leaves. Assistant turns yield only suggestions, never facts.
"""
from __future__ import annotations

import re
from datetime import datetime, time, timedelta

from common.text import clean, detect_lang, split_message_sentences, split_speaker
from memory.extraction.base import Candidate, ExtractionInput, ExtractionResult, Extractor
from memory.extraction.candidates import (
    MAX_SENTENCE_CHARS,
    Statement,
    attribute_to,
    complete_subjectless,
    lexicon_for,
    merge_retractions,
    norm,
    resolve,
    retracts,
)
from memory.extraction.lexicon import Lexicon
from memory.extraction.standing import onset_at, reverts
from memory.extraction.text import strip_end
from memory.extraction.timeexpr import TimeRef, find_times, recurring, rewrite_times
from memory.learn.gate import GateReading, get_gate
from memory.learn.signals import closed_class, split_question

__all__ = ["RuleExtractor", "gate_texts"]

_PRECISE_GRAINS = ("day", "week", "instant", "recent")
# Trailing bracketed annotations ("[shares a photo: ...]") describe the message, they are not said.
_ANNOTATION = re.compile(r"\s*\[[^\[\]]{0,300}\]\s*$")
# "它/这台/this one ..." points back into the conversation; without entity resolution the subject is
# unknown, so such a clause does not name the subject of a change.
_DEMONSTRATIVE = re.compile(r"^(?:这|那|它|他|她)|^(?:this|that|it|they|he|she|his|her|their)\b", re.I)
# "现在/目前/now/currently": the clause states what holds from now on.
_NOW = re.compile(r"现在|目前|如今|眼下|\bnow\b|\bcurrently\b", re.I)


def _sentences(content: str, user: bool = True) -> tuple[str | None, list[str]]:
    """The speaker a transcript line names, and the sentences the gate reads: a user's question that
    opens with a statement is two (signals.split_question), so the statement is remembered."""
    text = _ANNOTATION.sub("", clean(content or ""))
    speaker, text = split_speaker(text)
    sentences = split_message_sentences(text)
    return speaker, [part for s in sentences for part in split_question(s)] if user else sentences


def gate_texts(content: str) -> list[str]:
    """The texts whose vectors the gate reads for a user message: the message itself when it is one
    sentence (the vector its episode stores anyway), else each sentence."""
    speaker, sentences = _sentences(content)
    if len(sentences) == 1 and speaker is None and sentences[0] == clean(content or ""):
        return [content]
    return sentences


class RuleExtractor(Extractor):
    name = "rules"

    def extract(self, inp: ExtractionInput) -> ExtractionResult:
        text = clean(inp.content or "")
        if not text or inp.role not in ("user", "assistant"):
            return ExtractionResult(candidates=[], produced_by="rules")
        # Either language's cue counts: "别记这个 ok?" / "don't save this, 谢谢" are common.
        if inp.role == "user" and closed_class(text) == "do_not_remember":
            return ExtractionResult(candidates=[], do_not_remember=True, produced_by="rules")

        speaker, sentences = _sentences(inp.content, user=inp.role == "user")
        statements: list[Statement] = []
        if inp.role == "assistant":
            for sentence in sentences:
                statements.extend(self._assistant(sentence, lexicon_for(sentence), inp.occurred_at))
        else:
            after_retraction = False
            for sentence, reading, until in zip(sentences, self._read(inp, sentences), _until_usual(sentences)):
                if after_retraction and reading.label == "none" and reading.closed is None:
                    # "We don't use X anymore; invoices now live in Xero": what follows a retraction says
                    # what replaced it, however plainly (merge_retractions joins the two).
                    reading = GateReading(label="fact", p=reading.p)
                found = self._user(sentence, lexicon_for(sentence), inp.occurred_at, reading, reported=speaker is not None,
                                   temporary=until)
                gate = {"p": reading.p, "model": get_gate().version}
                for st in found:
                    st.gate = gate
                statements.extend(found)
                after_retraction = any(retracts(st) for st in found)

        statements = merge_retractions(statements)
        candidates: list[Candidate] = []
        seen: set[str] = set()
        for st in statements:
            if st.new_value is not None and not complete_subjectless(st, inp):
                continue
            if speaker:
                attribute_to(st, speaker)
            # A state left by an event is the event's words again, as a fact that only replaces.
            key = norm(st.content) + ("\0replaces" if st.replaces_only else "")
            if not norm(st.content) or key in seen:
                continue
            seen.add(key)
            candidates.append(resolve(st, inp.existing))
        return ExtractionResult(candidates=candidates, produced_by="rules")

    @staticmethod
    def _read(inp: ExtractionInput, sentences: list[str]) -> list[GateReading]:
        """The gate's reading of each sentence, on the write path's vectors when it has them."""
        gate = get_gate()
        texts = gate_texts(inp.content)
        vectors = inp.vectors(texts) if inp.vectors is not None and len(texts) == len(sentences) else None
        return gate.read(sentences, vectors)

    # ------------------------------------------------------------------ assistant turns
    def _assistant(self, sentence: str, lex: Lexicon, at: datetime) -> list[Statement]:
        # Only advice is kept, and only as the model's suggestion: "好的/已记录/3号拖拉机最近一次
        # 保养是2月15日" are echoes or tool output, never a source of user facts.
        if lex.is_question(sentence) or not lex.suggestion.search(sentence):
            return []
        body = strip_end(sentence)
        if len(body) > MAX_SENTENCE_CHARS:
            return []
        content = lex.finish(rewrite_times(body, find_times(body, at, lex.lang), lex.lang))
        return [Statement(kind="suggestion", content=content, assertion="model_suggestion")]

    # ------------------------------------------------------------------ user turns
    def _user(self, sentence: str, lex: Lexicon, at: datetime, reading: GateReading, reported: bool = False,
              temporary: bool = False) -> list[Statement]:
        """What the gate keeps of one user sentence, shaped by the change it announces, its times and
        its slot. `reported`: a transcript line that names its speaker ("Jon: ..."), said between
        people, not to the agent. `temporary`: the message says the usual comes back after it
        (_until_usual): whatever the sentence asks or states holds for this task only."""
        if reading.label == "none" and (reading.closed or not onset_at(sentence, find_times(sentence, at, lex.lang), lex.lang)):
            # A time the state holds from ("这周起前台改由小周值班") dates a standing state, whatever the
            # model read; a closed class still decides.
            return []
        s, explicit = self._strip_leads(strip_end(sentence), lex)
        if not s or len(s) > MAX_SENTENCE_CHARS:
            return []
        if temporary and not reported:
            return [] if _only_reverts(s, lex.lang) else [self._task(s, lex, at, explicit)]
        clauses = [c for c in re.split(r"[，,]", s) if c.strip()]
        if lex.long_term.search(s) and len(clauses) > 1 and any(closed_class(c) == "task" for c in clauses):
            # "这次先按A，以后都按B": two instructions with different lifetimes, one per clause.
            return [self._task(c, lex, at, explicit) if closed_class(c) == "task"
                    else self._statement("preference", c, lex, at, find_times(c, at, lex.lang), change=None, old_values=[],
                                         explicit=explicit)
                    for c in clauses]
        if reading.label == "task" and (reading.closed or not (lex.long_term.search(s)
                                                               or onset_at(s, find_times(s, at, lex.lang), lex.lang))):
            return [self._task(s, lex, at, explicit)]

        change, s, old_values, decided = self._change(s, lex, explicit)
        if decided is not None:
            return decided
        times = find_times(s, at, lex.lang)
        future = [t for t in times if t.tense == "future" and not recurring(s, t)]
        past = [t for t in times if t.tense != "future"]
        kind = self._kind(s, lex, reading.label, change, times)
        if kind == "preference":
            if change == "migration":
                change = "update"  # a changed preference replaces the old one; nothing moved
            return [self._statement("preference", s, lex, at, times, change=change, old_values=old_values, explicit=explicit)]
        if future and not past and lex.task_marker.search(s) and not reported:
            # "模拟就这一次挪到周五", "上课推到十一点，就明天": a one-off change of an arrangement, said
            # with its one-off word; the routine stays. A plan or a date ahead without one ("opening
            # night is October 10", "6月12号开庭") is remembered like any statement.
            return [self._task(s, lex, at, explicit)]
        if kind == "event":
            if future and not past:
                return [self._event(s, lex, at, future[0], explicit, planned=True)]
            when = next((t for t in past if t.grain in _PRECISE_GRAINS), past[0] if past else None)
            # "老王上个月走了，现在是小李带技术": what happened, and the state it leaves, which may
            # replace a standing memory on its subject (the event itself never replaces anything).
            state = (self._now_state(s, lex, at, times, change=change, old_values=old_values, explicit=explicit)
                     if lex.now_time.search(s) else [])
            return [self._event(s, lex, at, when, explicit, change=change)] + state
        if change != "correction" and len(re.split(r"[，,；;]", s)) > 1:
            # "小马上个月离职了，嘉兴仓现在是郑丽在对接": what happened, then what holds now; the
            # standing part is what later turns need, so the sentence is kept keyed by that clause.
            now_fact = self._clause_fact(s, lex, at, times, old_values, explicit)
            if now_fact:
                return now_fact
        return [self._statement("fact", s, lex, at, times, change=change, old_values=old_values, explicit=explicit)]

    @staticmethod
    def _kind(s: str, lex: Lexicon, label: str, change: str | None, times: list[TimeRef]) -> str:
        """The gate's kind, with two readings it cannot outvote: an explicit standing cue ("以后",
        "默认", "from now on", "是我的主力") makes a preference (the model's task-only included: a
        one-time instruction is a closed class, decided before the model), and a dated occurrence that announces no
        change ("我们2月20日签了合同", "we installed a pump today") an event: a change told with a
        date stays the fact it changes (the labelled data files those as facts); a request to the assistant
        or a routine on recurring days is no event."""
        if lex.long_term.search(s) or lex.habit.search(s):
            return "preference"
        if label != "preference" and onset_at(s, times, lex.lang):
            # "下周起发货全换极兔", "今天开始去心内科报到了": the date says from when a state holds, so the
            # sentence is that state, told with the day it began (what a later question asks about); the
            # model's one-time reading included, as for a lasting word (the closed classes decided first).
            return "fact"
        dated = [t for t in times if t.tense != "future" and not recurring(s, t)
                 and (t.grain in _PRECISE_GRAINS or t.tense == "past")]
        if label == "fact" and dated and change is None:
            return "event"
        if label == "event" and (lex.is_request(s) or (times and all(recurring(s, t) for t in times))):
            # "Please send my summary on Friday afternoons": what is asked of the assistant has not
            # happened, and a day that recurs is a routine: neither is an occurrence. Asked of the
            # assistant, it is how the user wants things done.
            return "preference" if lex.is_request(s) else "fact"
        return label

    @staticmethod
    def _change(s: str, lex: Lexicon, explicit: bool) -> tuple[str | None, str, list[str], list[Statement] | None]:
        """What kind of change the sentence announces (correction, migration, update or None), the
        sentence without its correction wording, the old values it names, and the statements when
        that already decides the sentence (nothing left once the correction is stripped, or a correction
        with no subject of its own)."""
        change: str | None = None
        old_values: list[str] = []
        if lex.correction_lead.match(s) or lex.correction_any.search(s):
            stripped, olds = lex.strip_correction(s)
            if stripped != s or olds:
                change, s, old_values = "correction", stripped, olds
            if not s:
                return change, s, old_values, []
            value = lex.subjectless(s)
            if value:
                return change, s, old_values, [Statement(kind="fact", content=s, change="correction", old_values=old_values,
                                                         new_value=value, explicit=explicit)]
        if lex.migration.search(s):
            change = change or "migration"
        elif lex.update.search(s):
            change = change or "update"
        old_values += [v for v in lex.old_values(s) if v not in old_values]
        return change, s, old_values, None

    def _clause_fact(self, s: str, lex: Lexicon, at: datetime, times: list[TimeRef], old_values: list[str],
                     explicit: bool) -> list[Statement]:
        """"李明离职了，现在维修师傅是赵刚": the sentence as a whole is no fact, but one of its clauses
        states one. The whole sentence is kept (it says what changed), keyed by that clause."""
        clauses = [c.strip() for c in re.split(r"[，,；;]", s) if c.strip()]
        if len(clauses) < 2:
            return []
        for clause in reversed(clauses):
            if lex.is_question(clause) or lex.opinion.search(clause):
                continue
            if not _NOW.search(clause):
                continue
            slot = lex.slot(clause, "fact")
            if slot is not None and slot.structural and not _DEMONSTRATIVE.match(clause):
                content = lex.finish(rewrite_times(s, times, lex.lang))
                return [Statement(kind="fact", content=content, slot=slot, slot_key=slot.key("fact"),
                                  change="update", old_values=old_values, explicit=explicit, said=lex.finish(s))]
        return []

    def _now_state(self, s: str, lex: Lexicon, at: datetime, times: list[TimeRef], *, change: str | None,
                   old_values: list[str], explicit: bool) -> list[Statement]:
        """The state an event leaves, said to hold now ("老王上个月走了，现在是小李带技术", "Karen left, and I
        report to Dev now"): the event's words again, as a fact that only replaces: the write path stores
        it when the subject judge finds the standing memory it updates."""
        if lex.opinion.search(s) or _DEMONSTRATIVE.match(s):
            return []
        st = self._statement("fact", s, lex, at, times, change=change or "update", old_values=old_values,
                                 explicit=explicit)
        st.replaces_only = True
        return [st]

    @staticmethod
    def _strip_leads(s: str, lex: Lexicon) -> tuple[str, bool]:
        explicit = False
        while True:
            before = s
            s = lex.filler_lead.sub("", s, count=1)
            m = lex.remember_lead.match(s)
            if m:
                explicit, s = True, s[m.end():]
            if s == before:
                return s.strip(), explicit

    # ------------------------------------------------------------------ builders
    def _task(self, s: str, lex: Lexicon, at: datetime, explicit: bool) -> Statement:
        slot = lex.slot(s, "context")
        valid_to = None
        if lex.task_today.search(s):
            valid_to = datetime.combine(at.date() + timedelta(days=1), time(0), tzinfo=at.tzinfo)
        # Kept verbatim: it lives only as long as the conversation, where the same words are read.
        return Statement(kind="context", content=lex.finish(s), scope="task", slot=slot,
                         slot_key=slot.key("context") if slot else None, valid_to=valid_to, explicit=explicit)

    def _statement(self, kind: str, s: str, lex: Lexicon, at: datetime, times: list[TimeRef], *,
                   change: str | None, old_values: list[str], explicit: bool) -> Statement:
        slot = lex.slot(s, kind)
        # A preference's "未来两周 / next month" is a rolling window, not a date: keep its words.
        # A fact's bare weekday recurs ("例会改到周三下午了"); its dated words become dates.
        content = s if kind == "preference" else rewrite_times(s, [t for t in times if not recurring(s, t)], lex.lang)
        valid_from = None
        if change in ("migration", "update") and times:
            started = [t for t in times if t.tense != "future"]
            valid_from = started[0].at if started else None
        return Statement(kind=kind, content=lex.finish(content), slot=slot,
                         slot_key=slot.key(kind) if slot else None, change=change, old_values=old_values,
                         valid_from=valid_from, explicit=explicit, said=lex.finish(s))

    def _event(self, s: str, lex: Lexicon, at: datetime, when: TimeRef | None, explicit: bool, *,
               planned: bool = False, change: str | None = None) -> Statement:
        times = find_times(s, at, lex.lang)
        occurred = when.at if when else datetime.combine(at.date(), time(0), tzinfo=at.tzinfo)
        subject = lex.event_subject(_drop_spans(s, times))
        # Events never replace each other: the key carries the day, so two breakdowns of the same
        # harvester on different days are two memories, and a repeat on the same day is one.
        key = f"event:{subject}@{occurred.date().isoformat()}" if subject else None
        return Statement(kind="event", content=lex.finish(rewrite_times(s, times, lex.lang)),
                         assertion="user_stated" if planned else "confirmed_event", slot_key=key,
                         occurred_at=occurred, change=change, explicit=explicit, said=lex.finish(s))


def _drop_spans(s: str, times: list[TimeRef]) -> str:
    for t in sorted(times, key=lambda t: t.start, reverse=True):
        s = s[: t.start] + " " + s[t.end:]
    return s


# What is left of a sentence once its reversion is taken out, at most, for the sentence to be only that
# ("Back to normal after that.", "之后照旧哈"): it then marks the sentence before it, and keeps nothing.
_BARE_REVERSION = 8


def _only_reverts(s: str, lang: str) -> bool:
    m = reverts(s, lang)
    return bool(m) and len(re.sub(r"[\W_]+", "", s[:m.start()] + s[m.end():])) <= _BARE_REVERSION


def _until_usual(sentences: list[str]) -> list[bool]:
    """Per sentence: does the message say the usual comes back after it? A sentence with a reversion
    ("地图只打1:15000的就行，下次还是照旧", "for the february batch only Ruth needs PEF files, after that it's
    back to normal"), and the sentence a bare reversion follows ("…I'll open with the card fountain. Back
    to normal after that."). A closed class of function words: a one-time deviation, whatever it is about."""
    langs = [detect_lang(s) for s in sentences]
    own = [bool(reverts(s, lang)) for s, lang in zip(sentences, langs)]
    bare = [o and _only_reverts(strip_end(s), lang) for o, s, lang in zip(own, sentences, langs)]
    return [own[i] or (i + 1 < len(sentences) and bare[i + 1]) for i in range(len(sentences))]
