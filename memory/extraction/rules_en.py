"""English cues for the rule extractor (data; the flow is in rules.py)."""
from __future__ import annotations

import re

from memory.extraction.lexicon import Lexicon
from memory.extraction.slots_en import event_subject_en, slot_en
from memory.extraction.text import strip_end, strip_leading

__all__ = ["EN"]

_DNR = re.compile(
    r"(?:^|[,.;:!]\s*|\bplease\s+|\band\s+|\bbut\s+|\bso\s+|\bjust\s+)"
    r"(?:don'?t|do not|dont|never|no need to|you don'?t need to|you do not need to|there'?s no need to)\s+"
    r"(?:remember|save|store|keep|record|memori[sz]e|log|write down|note)\b"
    r"|\boff the record\b|\b(?:keep|leave) (?:this|that|it) out of (?:your )?memory\b"
    r"|\bnot (?:to be|for you to) (?:remembered|saved|stored|kept)\b", re.I)
_FORGET = re.compile(r"(?P<neg>\b(?:don'?t|do not|never)\s+)?\bforget (?:this|that|it|what i (?:just )?said|about (?:this|that|it))\b",
                     re.I)


def _do_not_remember(text: str) -> bool:
    if _DNR.search(text):
        return True
    # "forget this" asks us not to keep it; "don't forget this" asks the opposite.
    return any(not m.group("neg") for m in _FORGET.finditer(text))


_WH = re.compile(r"^(?:what|where|when|who|whom|whose|which|why|how)\b", re.I)
_INVERSION = re.compile(r"^(?:is|are|was|were|do|does|did|can|could|would|will|should|shall|may|have|has|had|am)\s+"
                        r"(?:i|you|we|it|they|he|she|there|this|that|the|my|our|your)\b", re.I)


def _is_question(text: str) -> bool:
    t = text.strip()
    return t.endswith("?") or bool(_WH.match(t) or _INVERSION.match(t))


_REQUEST = re.compile(
    r"^(?:please\s+)?(?:can|could|would|will)\s+you\b"
    r"|^(?:please\s+)?(?:check|find|show|list|look\s+up|look|tell|give|help|send|schedule|book|create|make|generate|write|"
    r"draft|calculate|compute|summari[sz]e|explain|search|get|fetch|remind|set\s+up|order|pull|print|export|"
    r"let\s+me\s+know|sort|translate|plan|arrange)\b"
    r"|^i\s+(?:want|need|would like|'d like)\s+you\s+to\b", re.I)


def _is_request(text: str) -> bool:
    return bool(_REQUEST.search(text.strip()))


_CORRECTION_LEAD = re.compile(
    r"^(?:actually|correction|to correct (?:myself|that)|let me correct (?:that|myself)|no|nope|sorry|wrong|"
    r"that'?s (?:wrong|not right|incorrect|not correct)|you (?:got|have) (?:it|that) wrong|you'?re wrong|"
    r"you misremembered|i (?:made a mistake|misspoke|was wrong)|i meant|what i meant (?:was|is)|to be precise)\b"
    r"[,:;.!\-\s]*", re.I)
_NOT_X_BUT_Y = re.compile(r"^(?P<pre>.*?)\bnot\s+(?P<old>[^,]+?),?\s+but\s+(?P<new>[^,;]+)(?P<post>.*)$", re.I)
_Y_NOT_X = re.compile(r",\s*(?:and\s+)?(?:not|rather than|instead of)\s+(?:in\s+|at\s+)?(?P<old>[^,.;]+)", re.I)


# "I miscounted earlier: ..." / "we got that wrong, ...": the speaker's comment on the mistake.
_SELF_ERROR = re.compile(r"^(?:i|we)\b[^:;,]{0,30}?\b(?:mis\w+|wrong|a mistake)\b[^:;,]{0,20}[:;,]\s*", re.I)


def _strip_correction(text: str) -> tuple[str, list[str]]:
    s = text
    while True:
        stripped = _SELF_ERROR.sub("", _CORRECTION_LEAD.sub("", s, count=1), count=1)
        if stripped == s:
            break
        s = stripped
    s = strip_leading(_CORRECTION_LEAD, s)
    olds: list[str] = []
    m = _NOT_X_BUT_Y.match(s)
    if m and m.group("pre").strip():
        olds.append(re.sub(r"^(?:in|at|on)\s+", "", m.group("old").strip(), flags=re.I))
        s = m.group("pre") + m.group("new") + m.group("post")
    for m2 in _Y_NOT_X.finditer(s):
        olds.append(m2.group("old").strip())
    s = _Y_NOT_X.sub("", s)
    return s.strip(" ,"), [o for o in olds if o]


_SUBJECTLESS = re.compile(r"^(?:it'?s|it is|it was|that'?s|that is|it should be|should be|is|was)\s+(?:in\s+|at\s+)?"
                          r"(?P<v>[^,;]{1,40})$", re.I)


def _subjectless(text: str) -> str | None:
    m = _SUBJECTLESS.match(strip_end(text))
    return m.group("v").strip() if m else None


_OLD_VALUE = [
    re.compile(r"\bfrom\s+(?P<old>[\w .+#-]{1,30}?)\s+(?:over\s+)?to\b", re.I),
    re.compile(r"\breplaced\s+(?P<old>.{1,30}?)\s+with\b", re.I),
    re.compile(r"\bno longer\s+(?:use|uses|using|run|runs|on)?\s*(?P<old>[\w.+#-]+(?:\s+\d+)?)", re.I),
    re.compile(r"\b(?:don'?t|do not)\s+use\s+(?P<old>[\w.+#-]+(?:\s+\d+)?)\s+any ?more\b", re.I),
    re.compile(r"\binstead of\s+(?P<old>[\w .+#-]{1,30})", re.I),
]


def _old_values(text: str) -> list[str]:
    return [m.group("old").strip() for p in _OLD_VALUE for m in p.finditer(text) if m.group("old").strip()]


# -ed words that describe a state, not something that happened ("I'm tired", "we are based in").
_ADJECTIVAL_ED = (r"(?:tired|bored|excited|interested|worried|scared|pleased|confused|surprised|stressed|exhausted|"
                  r"annoyed|concerned|relaxed|based|located|called|named|used|supposed|married|retired|need|"
                  r"indeed|speed|seed|feed|red|bed|shed|hundred)\b")


def _finish(text: str) -> str:
    s = strip_end(text)
    return s[:1].upper() + s[1:] if s else s


EN = Lexicon(
    lang="en",
    do_not_remember=_do_not_remember,
    is_question=_is_question,
    is_request=_is_request,
    proposal=re.compile(r"^let'?s\b|^how about\b|^shall we\b", re.I),
    remember_lead=re.compile(r"^(?:please\s+)?(?:remember|keep in mind|make a note|take note|note|don'?t forget|do not forget)"
                             r"(?:\s+(?:that|this))?[,:\s]+", re.I),
    filler_lead=re.compile(r"^(?:oh|ok|okay|so|well|also|btw|by the way|fyi|just so you know|for your information|"
                           r"hey|hi|right)[,:\s-]+", re.I),
    chit_chat=re.compile(r"\b(?:weather|rain|rainy|raining|sunny|snow|snowing|lunch|dinner|breakfast|weekend|haha|lol|"
                         r"hello|thanks|thank you|good morning|good night|how are you|bye)\b", re.I),
    task_marker=re.compile(r"\bthis time\b|\bjust this once\b|\bjust for now\b|\bfor now\b|\bfor this (?:task|conversation|"
                           r"chat|session|request|report|one|query|order|form)\b|\bonly (?:for )?today\b|\bfor today\b|"
                           r"\btoday only\b|\btemporarily\b|\bfor the moment\b|\bfor the time being\b", re.I),
    task_instruction=re.compile(r"\b(?:only|just|use|show|give|list|sort|don'?t|skip|please|instead|let'?s|go with|switch|"
                                r"send|include|exclude|limit|need|want|answer|reply|write)\b", re.I),
    task_today=re.compile(r"\bonly (?:for )?today\b|\bfor today\b|\btoday only\b", re.I),
    long_term=re.compile(
        r"\bfrom now on\b|\bgoing forward\b|\bfrom here on\b|\bin (?:the )?future\b|\bby default\b|\bas a rule\b|"
        r"\bi (?:really |generally |usually |always |much |strongly )?(?:prefer|like|love|enjoy|hate|dislike|can'?t stand)\b|"
        r"\bi (?:don'?t|do not) like\b|\bi'?d (?:rather|prefer)\b|\bplease (?:always|never)\b|\bmy (?:preferred|favou?rite)\b|"
        r"(?:^|\band\s+)(?:always|never) (?:give|show|answer|reply|use|send|sort|list|write|respond|include|ask|call|"
        r"format|put|keep)\b", re.I),
    habit=re.compile(r"\bi (?:usually|normally|typically|mostly|generally|tend to) (?:use|work with|write|go with)\b|"
                     r"\bis my (?:main|primary|go-to|preferred|favou?rite)\b", re.I),
    correction_lead=_CORRECTION_LEAD,
    correction_any=re.compile(r"\b(?:correction|misremembered|got (?:it|that) wrong|i meant)\b|,\s*(?:and\s+)?not\s+[^,.;]+$|"
                              r"\bnot\s+[^,]+,?\s+but\s+", re.I),
    strip_correction=_strip_correction,
    subjectless=_subjectless,
    migration=re.compile(r"\b(?:switched|migrated|moved|transitioned|ported|relocated|upgraded)\b.*?\b(?:to|into|onto)\b|"
                         r"\breplaced\b.*\bwith\b|\bnow (?:use|uses|run|runs|on)\b.*\binstead\b", re.I),
    update=re.compile(r"\bno longer\b|\bnot\b.*\banymore\b|\bchanged? (?:it |that )?to\b|\binstead\b|"
                      r"\bdon'?t use\b.*\bany ?more\b", re.I),
    old_values=_old_values,
    opinion=re.compile(r"^(?:i|we) (?:think|guess|feel|believe|suppose|wonder|hope|want|need|would like|'d like|"
                       r"am going to|'m going to|are going to|plan to|will|might|may)\b|"
                       r"^(?:i'?m|i am|we'?re|we are)\s+(?:so\s+|very\s+|really\s+|a bit\s+|quite\s+|pretty\s+)?"
                       r"(?:tired|busy|happy|sad|bored|hungry|sick|fine|ok|okay|good|great|excited|worried|stressed|"
                       r"exhausted|sorry|glad|done|back)\b", re.I),
    first_person=re.compile(r"^(?:i|i'm|i've|we|we're|we've|our|my|us)\b|\b(?:our|my)\b", re.I),
    fact_predicate=re.compile(r"\b(?:have|has|use|uses|run|runs|own|owns|live|lives|work|works|grow|grows|keep|keeps|"
                              r"manage|manages|employ|employs|farm|farms|operate|operates|rent|rents)\b", re.I),
    event_verb=re.compile(
        r"\b(?:bought|sold|broke|broken|went|came|paid|spent|built|found|lost|sent|shut|began|began|hired|fired|"
        r"installed|replaced|repaired|fixed|failed|stopped|leaked|overheated|harvested|planted|delivered|signed|"
        r"received|ordered|purchased|opened|closed|started|finished|completed|visited|met|attended|had|held|"
        r"(?!" + _ADJECTIVAL_ED + r")\w+ed)\b", re.I),
    completion=re.compile(r"\b(?:already|just|has been|have been|was|were|did)\b|\b(?!" + _ADJECTIVAL_ED + r")\w+ed\b", re.I),
    asset=re.compile(r"\b(?:no\.?\s*\d+|#\d+|[A-Z]+-\d+|harvesters?|tractors?|dryers?|generators?|pumps?|machines?|trucks?|"
                     r"drones?|servers?|warehouses?|systems?)\b", re.I),
    suggestion=re.compile(
        r"\b(?:i|we)\s+(?:would\s+|strongly\s+)?(?:suggest|recommend|advise)\b|\bi'?d\s+(?:suggest|recommend)\b|"
        r"^(?:i\s+)?(?:suggest|recommend)\b|\byou (?:should|might want to|may want to|could consider|ought to|'d better|"
        r"had better)\b(?!\s+(?:have|be able|see|receive|now))|\bmy (?:suggestion|recommendation|advice) (?:is|would be)\b|"
        r"\bit (?:would|might) be (?:best|wise|good|a good idea) to\b|^consider\b", re.I),
    slot=slot_en,
    event_subject=event_subject_en,
    finish=_finish,
)
