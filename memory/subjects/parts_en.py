"""English statements: word shapes (capitals, digits) and snowball stems separate the subject
from the value, clause by clause."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

import memory.subjects.vocabulary as V
from memory.extraction.timeexpr import find_times
from memory.subjects.statement import PartsFound, StatementParts

__all__ = ["parse_en"]

# A code ("C-2", "P-101") and a number with thousands separators ("2,000") are one token each.
_EN_TOKEN = re.compile(r"[A-Za-z]{1,3}-\d[\w-]*|[A-Za-z][A-Za-z'’-]*|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d[\w.:/-]*|[^\sA-Za-z\d]")
_EN_STOP, _EN_PREP_STOP = V.EN_STOP, V.EN_PREP_STOP
_EN_NUMBERISH = re.compile(r"\d")
_EN_CLAUSE = re.compile(r"(?<!\d),|,(?!\d{3}\b)|[;!?]|\.\s+(?=[A-Z])|\bbut\b|\band now\b|(?=\binstead of\b)")
# Counts written out ("twenty-four trucks", "a dozen", "three hundred"): values, as digits are.
_EN_NUMBER_WORD = re.compile(r"(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:-(?:one|two|three|four|five|six|"
                             r"seven|eight|nine))?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|"
                             r"fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|hundred|thousand|dozen|half)")
_REF = datetime.fromisoformat("2026-01-01T00:00:00+00:00")  # any reference: only "is it a time" is asked
# Copulas and stance verbs name no attribute ("I want X", "I prefer Y"); "I drive a Civic" does.
_EN_STANCE = {"prefer", "prefers", "preferred", "like", "likes", "want", "wants", "need", "needs"}
_EN_COPULA = {"is", "are", "am", "was", "were", "be", "=", "as", "by", "prefer", "prefers", "preferred", "like",
              "likes", "want", "wants", "choose", "chose", "pick", "use", "uses", "using", "used", "via", "through"}
_EN_CHANGE_VERBS = {"switched", "switch", "changed", "change", "moved", "move", "upgraded", "migrated", "replaced",
                    "set", "put"}


@lru_cache(maxsize=1)
def _stemmer():
    import snowballstemmer

    return snowballstemmer.stemmer("english")


_EN_AGENT = re.compile(r"(?:ant|ent|ist|ian|er|or|eer)$")


def _en_canon(word: str) -> str:
    low = word.lower().replace("’", "'")
    base = low[:-1] if low.endswith("s") and not low.endswith("ss") and len(low) > 3 else low
    if _EN_AGENT.search(base):
        # A person is not the activity: snowball turns "accountant" into "account", "manager"
        # into "manag" (as "manages"); agent nouns are kept whole.
        return V.EN_SYNONYMS.get(base, base)
    stem = _stemmer().stemWord(low)
    return V.EN_SYNONYMS.get(stem, stem)


def _en_marker_at(words: list[str], i: int) -> tuple[str, int] | None:
    for span in (3, 2, 1):
        if i + span <= len(words):
            joined = " ".join(words[i:i + span]).lower()
            if joined in V.EN_MARKERS:
                return V.EN_MARKERS[joined], span
    return None


@dataclass(frozen=True)
class _Delivery:
    verb: int  # index of the delivery verb
    obj: list[str]  # the thing sent ("the weekly sales report")
    value: list[str]  # where it goes ("the shared drive"), or the channel the verb names ("email")
    channel_verb: bool = False


_EN_PHRASE_END = {"every", "each", "when", "whenever", "once", "instead", "unless", "only"}


def _en_place(words: list[str], k: int) -> list[str]:
    """The noun phrase from k: articles and owners skipped, up to a preposition or a stop word."""
    while k < len(words) and words[k].lower() in _EN_STOP:
        k += 1
    out: list[str] = []
    while k < len(words) and words[k][0].isalnum() and words[k].lower() not in _EN_STOP \
            and words[k].lower() not in _EN_PREP_STOP and words[k].lower() not in _EN_PHRASE_END:
        out.append(words[k])
        k += 1
    return out


_EN_WHEN = re.compile(r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|\b(?:morning|afternoon|evening|night|noon|"
                      r"midnight|weekend|weekday|day|week|month|year)s?\b|\b\d{1,2}(?::\d{2})?\s?(?:am|pm)\b", re.I)


def _en_when(phrase: str) -> bool:
    """"on Friday afternoons" / "at 8 am": when a thing is sent, not where."""
    return bool(_EN_WHEN.search(phrase) or find_times(phrase, _REF, "en"))


def _en_delivery(words: list[str]) -> _Delivery | None:
    """"put the report on the shared drive" / "invoices go to the portal" / "email me the receipts":
    where a thing is sent is the value and the thing sent the attribute. A recipient ("to me") is
    who receives it, not where; a channel after "by/via" is left to the value markers."""
    low = [w.lower() for w in words]
    for v, w in enumerate(low):
        if w not in V.EN_DELIVERY_VERBS or (v and low[v - 1] in V.EN_NOUN_LEADS):
            continue
        if w in V.EN_NOUN_VERBS and v and low[v - 1] not in V.EN_VERB_LEADS and low[v - 1] not in V.EN_ADVERBS:
            continue
        obj: list[str] = []
        for j in range(v + 1, len(words)):
            if low[j] in V.EN_DEST_PREPS and j + 1 < len(words) and low[j + 1] not in V.EN_RECIPIENTS:
                place = _en_place(words, j + 1)
                if place and not _en_when(" ".join(place)):
                    return _Delivery(verb=v, obj=obj, value=place)
            if low[j] in ("by", "via", "through", "as", "with", "for", "from", "if") or low[j] in _EN_PHRASE_END:
                break
            if words[j][0].isalpha() and low[j] not in _EN_STOP and low[j] not in _EN_PREP_STOP \
                    and low[j] not in V.EN_RECIPIENTS and low[j] not in V.EN_ADVERBS:
                obj.append(words[j])
        if w in V.EN_CHANNEL_VERBS and obj:
            return _Delivery(verb=v, obj=obj, value=[words[v]], channel_verb=True)
        return None
    return None


def parse_en(text: str) -> StatementParts:
    found = PartsFound(lang="en", weak_words=V.EN_WEAK)
    body = re.sub(r"\b(Dr|Mr|Mrs|Ms|No|St|Prof|Nr)\.", r"\1", text.strip()).rstrip(".!?。 ")
    masked = body
    lower = f" {text.lower()} "
    body = re.sub(r"\bby default\b|\bfrom now on\b|\bgoing forward\b", " ", body, flags=re.I)
    cue = any(c in lower for c in V.EN_CHANGE_CUES)
    # Not inside a number: "2,000 hours" is one value.
    clauses = [c for c in _EN_CLAUSE.split(body) if c and c.strip()]
    multi = len(clauses) > 1
    for clause in clauses:
        words = _EN_TOKEN.findall(clause)
        low = f" {clause.lower()} "
        negated = any(n in low for n in V.EN_NEGATION)
        if negated and multi:
            found.old_values.extend(w.lower() for w in words if w.lower() not in _EN_STOP and w.lower() not in _EN_PREP_STOP
                              and not any(w.lower() in n for n in V.EN_NEGATION))
            continue
        delivery = _en_delivery(words)
        marker_at = None if delivery else next(((i, m) for i in range(len(words)) if (m := _en_marker_at(words, i))), None)
        pre_end = delivery.verb if delivery else marker_at[0] if marker_at else len(words)
        clause_terms: list[str] = []
        for j in range(pre_end):
            word = words[j]
            low_w = word.lower()
            if low_w in ("no", "#", "number") and j + 1 < len(words) and _EN_NUMBERISH.search(words[j + 1]):
                continue
            if _EN_NUMBER_WORD.fullmatch(low_w):
                found.values.append(low_w)
                continue
            if _EN_NUMBERISH.search(word):
                prev = words[j - 1].lower() if j else ""
                # "C-2", "RX7" name a thing; "9am", "10mg" are amounts with their unit.
                if prev in ("no", "#", "number") or word[0].isalpha():
                    found.idents.add(low_w)
                else:
                    found.values.append(low_w)
                continue
            if low_w in _EN_STOP or low_w in _EN_PREP_STOP or not word[0].isalpha():
                continue
            clause_terms.append(_en_canon(word))
        if delivery is not None:
            found.preds.add(V.DEST)
            obj = [_en_canon(w) for w in delivery.obj]
            phrase = " ".join(delivery.value)
            found.values.append(V.EN_CHANNEL_VERBS[phrase.lower()] if delivery.channel_verb else phrase.lower())
            masked = masked.replace(phrase, V.EN_PLACEHOLDER, 1)
            strong = [t for t in clause_terms if t not in V.EN_WEAK]
            # The thing sent is the attribute; "invoices go to …" names it before the verb.
            obj_strong = [t for t in obj if t not in V.EN_WEAK]
            found.heads.add(obj_strong[-1] if obj_strong else strong[-1] if strong else f"@{V.DEST}")
            found.terms.extend(clause_terms + obj)
            continue
        if marker_at is not None:
            pred, span = marker_at[1]
            found.preds.add(pred)
            i = marker_at[0] + span
            if pred == "change" and words[marker_at[0]].lower() in _EN_CHANGE_VERBS:
                # "switched our CRM to HubSpot": the words before "to" name the subject.
                while i < len(words) and words[i].lower() not in ("to", "with", "by"):
                    if words[i][0].isalpha() and words[i].lower() not in _EN_STOP:
                        clause_terms.append(_en_canon(words[i]))
                    i += 1
                i += 1
            strong = [t for t in clause_terms if t not in V.EN_WEAK]
            value: list[str] = []
            nouns: list[str] = []
            while i < len(words):
                word = words[i]
                low_w = word.lower()
                if value and (low_w in _EN_PREP_STOP or low_w in _EN_STOP or _en_marker_at(words, i)):
                    break
                if not value and (low_w in _EN_STOP or low_w in ("now", "to", "a", "an", "the")):
                    i += 1
                    continue
                if not word[0].isalnum():
                    if value:
                        break
                    i += 1
                    continue
                if pred == "have" and not _EN_NUMBERISH.search(word) and not _EN_NUMBER_WORD.fullmatch(low_w):
                    nouns.append(_en_canon(word))
                else:
                    value.append(word)
                i += 1
            stance = words[marker_at[0]].lower() in _EN_STANCE and not strong
            if stance and len(value) >= 2 and value[0].isalpha() and value[0].islower():
                # "I want invoices sent as PDF": what is wanted names the attribute.
                nouns.append(_en_canon(value.pop(0)))
            elif len(value) >= 2 and value[-1].isalpha() and value[-1].islower() and not strong:
                # "prefer short answers": the last common noun names the attribute, the rest is the value.
                nouns.append(_en_canon(value.pop()))
            if value:
                phrase = " ".join(value)
                found.values.append(phrase.lower())
                masked = masked.replace(phrase, V.EN_PLACEHOLDER, 1)
            clause_terms.extend(nouns)
            after = [_en_canon(w) for w in words[i:] if w[0].isalpha() and w.lower() not in _EN_STOP
                     and w.lower() not in _EN_PREP_STOP]
            clause_terms.extend(after)
            if nouns and (pred == "have" or not strong):
                found.heads.add(nouns[-1])
            elif strong:
                found.heads.add(strong[-1])
            elif after:
                found.heads.add(after[0])
            elif pred == "loc":
                found.heads.add("address")  # "I live in Boston" / "I moved to Seattle": where the user lives
            elif pred == "be" and words[marker_at[0]].lower() not in _EN_COPULA:
                found.heads.add("@" + _en_canon(words[marker_at[0]]))  # "I drive a Civic": the verb is the attribute
            else:
                found.heads.add(f"@{pred}")
        else:
            strong = [t for t in clause_terms if t not in V.EN_WEAK]
            if strong:
                found.heads.add(strong[-1])
        found.terms.extend(clause_terms)
    return found.parts(cue=cue, masked=masked)

