"""RuleExtractor: the offline default (zh + en). "The extractor is the gate": a sentence becomes a
memory only when a cue says it is a standing preference, a fact about the user or organisation,
a dated event, a correction/change of one of those, a task-only instruction or (for assistant
turns) a suggestion. Everything else — chit-chat, questions, requests, acknowledgements —
returns nothing.

Per user sentence the order of the checks matters and is: question -> temporary instruction ->
correction (strip the preamble and the negated old value, then classify what is left) ->
standing preference -> request -> change/migration -> future plan -> event -> fact.
"""
from __future__ import annotations

import re
from datetime import datetime, time, timedelta

from common.text import clean, split_message_sentences, split_speaker
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
)
from memory.extraction.lexicon import Lexicon
from memory.extraction.rules_en import EN
from memory.extraction.rules_zh import ZH
from memory.extraction.standing import habitual, onset, read, task_scope
from memory.extraction.text import strip_end
from memory.extraction.timeexpr import TimeRef, find_times, recurring, rewrite_times

__all__ = ["RuleExtractor"]

_PRECISE_GRAINS = ("day", "week", "instant", "recent")
# "它/这台/this one ..." points back into the conversation; without entity resolution the
# subject is unknown, so such a sentence is not a standalone fact.
# Trailing bracketed annotations ("[shares a photo: ...]") describe the message, they are not said.
_ANNOTATION = re.compile(r"\s*\[[^\[\]]{0,300}\]\s*$")
# Third persons ("他们公司在上海") are about someone else, not the user.
_DEMONSTRATIVE = re.compile(r"^(?:这|那|它|他|她)|^(?:this|that|it|they|he|she|his|her|their)\b", re.I)


# "现在/目前/now/currently": the clause states what holds from now on.
_NOW = re.compile(r"现在|目前|如今|眼下|\bnow\b|\bcurrently\b", re.I)


class RuleExtractor(Extractor):
    name = "rules"

    def extract(self, inp: ExtractionInput) -> ExtractionResult:
        text = clean(inp.content or "")
        if not text or inp.role not in ("user", "assistant"):
            return ExtractionResult(candidates=[], produced_by="rules")
        # Either language's cue counts: "别记这个 ok?" / "don't save this, 谢谢" are common.
        if inp.role == "user" and (ZH.do_not_remember(text) or EN.do_not_remember(text)):
            return ExtractionResult(candidates=[], do_not_remember=True, produced_by="rules")

        text = _ANNOTATION.sub("", text)
        speaker, text = split_speaker(text)
        statements: list[Statement] = []
        for sentence in split_message_sentences(text):
            lex = lexicon_for(sentence)
            if inp.role == "assistant":
                statements.extend(self._assistant(sentence, lex, inp.occurred_at))
            else:
                statements.extend(self._user(sentence, lex, inp.occurred_at, reported=speaker is not None))

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
    def _user(self, sentence: str, lex: Lexicon, at: datetime, reported: bool = False) -> list[Statement]:
        """`reported`: a transcript line that names its speaker ("Jon: ..."), said between people,
        not to the agent."""
        if lex.is_question(sentence):
            return []
        s, explicit = self._strip_leads(strip_end(sentence), lex)
        if not s or len(s) > MAX_SENTENCE_CHARS:
            return []
        standing = bool(lex.long_term.search(s) or lex.habit.search(s))
        # A small-talk topic (meals, weather, weekends) is small talk unless the sentence states a routine.
        if lex.chit_chat.search(s) and not standing and not habitual(s, lex.lang):
            return []

        if (lex.task_marker.search(s) and lex.task_instruction.search(s)) or task_scope(s, lex.lang):
            if lex.long_term.search(s):
                # "这次先按A，以后都按B": two instructions with different lifetimes, one per clause.
                clauses = [c for c in re.split(r"[，,]", s) if c.strip()]
                if len(clauses) > 1:
                    return [st for c in clauses for st in self._user(c, lex, at, reported)]
            else:
                return [self._task(s, lex, at, explicit)]

        change, s, old_values, decided = self._change(s, lex, explicit)
        if decided is not None:
            return decided

        times = find_times(s, at, lex.lang)
        first_person = bool(lex.first_person.search(s))
        future = [t for t in times if t.tense == "future"]
        past = [t for t in times if t.tense != "future"]

        reading = None if standing else self._structural_reading(s, lex)
        if reading is not None and reading.kind == "preference":
            standing = True
        if standing:
            if change == "migration":
                change = "update"  # a changed preference replaces the old one; nothing moved
            return [self._statement("preference", s, lex, at, times, change, old_values, explicit)]
        if (lex.is_request(s) or lex.proposal.search(s)) and change != "correction":
            return []
        if self._states_attribute(s, lex):
            # "我女儿的生日是5月14号": a date can be the value of a standing fact, not an event or a plan.
            return [self._statement("fact", s, lex, at, times, change, old_values, explicit)]
        if onset(s, lex.lang) and (change in ("migration", "update") or (future and not first_person)):
            # "从下个月起，发车时间调到五点半": a change of what holds, announced ahead of time.
            return [self._statement("fact", s, lex, at, times, change or "update", old_values, explicit)]
        if future and not past and not first_person and change != "correction" and not reported:
            # "下周二上午给2号收割机做保养" / "时间改到明天下午三点": arrangements of the task at hand.
            # Not in a transcript line: "Jon: The opening night is tomorrow" tells another person
            # about Jon's life; as a task it would leave every other conversation's recall.
            return [self._task(s, lex, at, explicit)]
        if change in ("migration", "update"):
            return [self._statement("fact", s, lex, at, times, change, old_values, explicit)]
        if future and not past and first_person and not lex.opinion.search(s):
            return [self._event(s, lex, at, future[0], explicit, planned=True)]
        if change != "correction" and len(re.split(r"[，,；;]", s)) > 1:
            # "小马上个月离职了，嘉兴仓现在是郑丽在对接": what happened, then what holds now; the
            # standing part is what later turns need, so the sentence is kept as that fact.
            now_fact = self._clause_fact(s, lex, at, times, old_values, explicit, now_only=True)
            if now_fact:
                return now_fact
        if reading is not None and reading.kind == "fact":
            return [self._statement("fact", s, lex, at, times, change, old_values, explicit)]
        if reading is not None and reading.kind == "event" or self._is_event(s, lex, times, first_person):
            when = next((t for t in past if t.grain in _PRECISE_GRAINS), past[0] if past else None)
            # "老王上个月走了，现在是小李带技术": what happened, and the state it leaves, which may
            # replace a standing memory on its subject (the event itself never replaces anything).
            state = self._now_state(s, lex, at, times, change, old_values, explicit) if lex.now_time.search(s) else []
            return [self._event(s, lex, at, when, explicit, change=change)] + state
        if self._is_fact(s, lex, first_person) or change == "correction":
            st = self._statement("fact", s, lex, at, times, change, old_values, explicit)
            if st.slot is None and not first_person:
                return []  # a correction of something we cannot name is not storable on its own
            return [st]
        return self._clause_fact(s, lex, at, times, old_values, explicit) or \
            self._now_state(s, lex, at, times, change, old_values, explicit)

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

    @staticmethod
    def _structural_reading(s: str, lex: Lexicon):
        """Everyday wording with no cue word: what the sentence's structure says (standing.py)."""
        reading = read(s, lex.lang)
        if reading is not None and reading.kind != "event" and (lex.opinion.search(s) or _DEMONSTRATIVE.match(s)):
            return None  # a feeling or guess ("I think it's fine"), or about someone pointed at
        if reading is not None and reading.kind == "fact" and (lex.is_request(s) or lex.proposal.search(s)):
            return None  # a standing-looking request to act now ("把每周的报表列一下") stays a request
        return reading

    def _clause_fact(self, s: str, lex: Lexicon, at: datetime, times: list[TimeRef], old_values: list[str],
                     explicit: bool, now_only: bool = False) -> list[Statement]:
        """"李明离职了，现在维修师傅是赵刚": the sentence as a whole is no fact, but one of its clauses
        states one. The whole sentence is kept (it says what changed), keyed by that clause."""
        clauses = [c.strip() for c in re.split(r"[，,；;]", s) if c.strip()]
        if len(clauses) < 2:
            return []
        for clause in reversed(clauses):
            if lex.is_question(clause) or lex.opinion.search(clause):
                continue
            if now_only and not _NOW.search(clause):
                continue
            slot = lex.slot(clause, "fact")
            if slot is not None and slot.structural and not _DEMONSTRATIVE.match(clause):
                content = lex.finish(rewrite_times(s, times, lex.lang))
                return [Statement(kind="fact", content=content, slot=slot, slot_key=slot.key("fact"),
                                  change="update", old_values=old_values, explicit=explicit)]
        return []

    def _now_state(self, s: str, lex: Lexicon, at: datetime, times: list[TimeRef], change: str | None,
                   old_values: list[str], explicit: bool) -> list[Statement]:
        """The last resort: a sentence no rule above reads that says a state holds from now on
        ("最近改喝拿铁了，美式太苦", "Karen left, and I report to Dev now"). Kept as a fact that only
        replaces: the write path stores it when the subject judge finds the standing memory it updates."""
        if not (lex.now_state.search(s) or lex.now_time.search(s)) or lex.opinion.search(s) or _DEMONSTRATIVE.match(s):
            return []
        st = self._statement("fact", s, lex, at, times, change or "update", old_values, explicit)
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

    @staticmethod
    def _is_event(s: str, lex: Lexicon, times: list[TimeRef], first_person: bool) -> bool:
        verb = bool(lex.event_verb.search(s))
        done = bool(lex.completion.search(s))
        if not (verb or done) or lex.opinion.search(s):
            return False
        precise = any(t.tense != "future" and (t.grain in _PRECISE_GRAINS or t.tense == "past") for t in times)
        subject = first_person or bool(lex.asset.search(s))
        if precise:
            return verb or (done and subject)
        # No usable date ("2号收割机的割台链条断了，已经报修"): something visibly happened to a
        # named thing or to us; it happened around the message time.
        return verb and done and subject

    @staticmethod
    def _states_attribute(s: str, lex: Lexicon) -> bool:
        """The first clause names an attribute and its value ("X的Y是Z") and nothing happens in it."""
        first = re.split(r"[，,；;]", s, maxsplit=1)[0]
        slot = lex.slot(first, "fact")
        return bool(slot and slot.structural and slot.attribute and slot.value) and not lex.event_verb.search(first) \
            and not _DEMONSTRATIVE.match(first) and not lex.opinion.search(first)

    @staticmethod
    def _is_fact(s: str, lex: Lexicon, first_person: bool) -> bool:
        if lex.opinion.search(s):
            return False
        if first_person:
            return bool(lex.fact_predicate.search(s) or lex.slot(s, "fact"))
        # About a named thing, not us ("1号收割机的型号是S780"): only a recognised structure
        # counts, free text about third parties is too often chatter.
        slot = lex.slot(s, "fact")
        return slot is not None and slot.structural and not _DEMONSTRATIVE.match(s)

    # ------------------------------------------------------------------ builders
    def _task(self, s: str, lex: Lexicon, at: datetime, explicit: bool) -> Statement:
        slot = lex.slot(s, "context")
        valid_to = None
        if lex.task_today.search(s):
            valid_to = datetime.combine(at.date() + timedelta(days=1), time(0), tzinfo=at.tzinfo)
        # Kept verbatim: it lives only as long as the conversation, where the same words are read.
        return Statement(kind="context", content=lex.finish(s), scope="task", slot=slot,
                         slot_key=slot.key("context") if slot else None, valid_to=valid_to, explicit=explicit)

    def _statement(self, kind: str, s: str, lex: Lexicon, at: datetime, times: list[TimeRef], change: str | None,
                   old_values: list[str], explicit: bool) -> Statement:
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
                         valid_from=valid_from, explicit=explicit)

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
                         occurred_at=occurred, change=change, explicit=explicit)


def _drop_spans(s: str, times: list[TimeRef]) -> str:
    for t in sorted(times, key=lambda t: t.start, reverse=True):
        s = s[: t.start] + " " + s[t.end:]
    return s
