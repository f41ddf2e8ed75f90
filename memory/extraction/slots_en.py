"""Slot keys for English statements: structure first ("our X is in Y", "we migrated X to Y",
"X runs on <tech>"), then the kind of value; the subject is what is left once determiners,
pronouns, auxiliaries and instruction verbs are dropped."""
from __future__ import annotations

import re

from memory.extraction.patterns import load_patterns
from memory.extraction.slots import SlotParts, tech_category, value_slot

__all__ = ["event_subject_en", "slot_en"]

_PATTERNS = load_patterns("slots_en")  # memory/extraction/lexicons/slots_en.toml

_EN_STOP = set(
    "a an the our my your their his her its we i us me you it they them this that these those is are was were be "
    "been being am do does did have has had will would should could can may might please always never default "
    "by from now on in at to for of with and or just only also really very currently already still show give "
    "send list sort sorted order ordered rank display use uses using used want wants like likes prefer prefers "
    "love going forward future time today yesterday tomorrow week weeks month months year years last next this "
    "new old current main primary existing some any all every each one there here then than so as if when "
    "get got make made keep let lets set see tell me mine ours from now on anymore instead written built developed "
    "implemented based write writing answer reply respond usually normally typically mostly generally tend no "
    "longer not don't dont".split()
)
_EN_OWNER_USER = {"my", "i", "me", "mine", "user"}
_EN_USER_NOUNS = {"home", "house", "family", "place", "apartment", "flat"}


def _en_words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9][a-z0-9+#.'-]*", text.lower())


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and len(word) > 3 and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _en_clean(np: str) -> str:
    words = [w[:-2] if w.endswith("'s") else w for w in _en_words(np)]
    words = [w.strip(".'") for w in words if w.strip(".'") and w not in _EN_STOP and not w.isdigit()]
    if not words:
        return ""
    words[-1] = _singular(words[-1])
    return " ".join(words)


def _en_owner(span: str) -> str | None:
    words = set(_en_words(span))
    if words & {"we", "our", "us", "ours"}:
        return "org"
    if words & _EN_OWNER_USER:
        return "user"
    return None


def _en_subject(span: str) -> str:
    subject = _en_clean(span)
    if subject in _EN_USER_NOUNS:
        return "user"
    return subject or _en_owner(span) or ""


def _en_is_place(text: str) -> bool:
    text = text.strip()
    return bool(text) and (text[:1].isupper() or bool(_PATTERNS.words.place_words.search(text)))


def _en_value_attr(text: str) -> tuple[str, str, re.Match[str] | None] | None:
    tech = tech_category(text, "en")
    if tech:
        return tech[0], tech[1], None
    m = _PATTERNS.value.sort.search(text)
    if m:
        return "sort order", m.group("v").strip(), m
    m = _PATTERNS.value.duration.search(text)
    if m:
        return "time range", m.group(0).strip(), m
    m = _PATTERNS.value.style.search(text)
    if m:
        return "style", m.group(0), m
    m = _PATTERNS.value.language.search(text)
    if m:
        return "language", m.group(0), m
    return None


def slot_en(text: str, kind: str) -> SlotParts | None:
    text = text.strip().rstrip(".!;")
    m = _PATTERNS.structure.change.match(text) or _PATTERNS.structure.replace.match(text)
    if m:
        value = m.group("v").strip()
        found = _en_value_attr(value)
        obj = m.groupdict().get("o") or ""
        subject = _en_subject(obj) if obj else _en_subject(m.group("s"))
        attr = found[0] if found else None
        if attr is None and (m.groupdict().get("verb") or "").lower() in ("moved", "relocated") and _en_is_place(value):
            attr = "address" if subject == "user" else "location"
        if attr and subject:
            return SlotParts(subject, attr, found[1] if found else value)

    m = _PATTERNS.structure.possessive.match(text)
    if m:
        np, value = m.group("np"), m.group("v").strip()
        owner = "user" if m.group("owner").lower() == "my" else "org"
        head = np.split("'s", 1)
        loc = re.match(r"(?:located\s+|based\s+|situated\s+|kept\s+|stored\s+)?(?:in|at)\s+(?P<p>.+)$", value, re.I)
        tech = tech_category(value, "en")
        if len(head) == 2 and _en_clean(head[1]):
            return SlotParts(_en_subject(head[0]) or owner, _en_clean(head[1]), value)
        subject = _en_subject(np) or owner
        if loc and _en_is_place(loc.group("p")):
            return SlotParts(subject, "address" if subject == "user" else "location", loc.group("p").strip())
        if tech:
            return SlotParts(subject, tech[0], tech[1])
        if _en_clean(np):
            return SlotParts(owner, _en_clean(np), value)

    tech = tech_category(text, "en")
    if tech:
        before, _, after = text.partition(tech[1])
        use = _PATTERNS.structure.tech_use.match(before)
        # "I like writing backends in Java": the owner is the subject, the activity is not.
        subject = _en_subject(use.group("s")) if use else (_en_owner(before) or _en_clean(before))
        role = _PATTERNS.structure.role.match(after)
        if role and role.group("prep").lower() == "as":
            return SlotParts(subject or "user", _en_clean(role.group("np")), tech[1])
        if role and subject in ("org", "user", "") and _en_clean(role.group("np")):
            subject = _en_clean(role.group("np"))
        if not subject and kind == "preference":
            subject = "user"
        if subject:
            return SlotParts(subject, tech[0], tech[1])

    m = _PATTERNS.structure.location.match(text)
    if m and _en_is_place(m.group("v")) and not _PATTERNS.value.duration.search(m.group("v")):
        subject = _en_subject(m.group("s"))
        if subject:
            verb = (m.group("verb") or "").lower()
            attr = "address" if subject == "user" or verb.startswith("liv") else "location"
            return SlotParts(subject, attr, m.group("v").strip())

    found = _en_value_attr(text)
    if found and not (found[0] == "time range" and kind in ("fact", "event")):
        attr, value, match = found
        if attr in ("style", "language"):
            reply = _PATTERNS.words.reply_noun.search(text)
            return SlotParts(_singular(reply.group(0).lower()) if reply else "answer", attr, value, structural=False)
        if attr == "sort order" and match is not None and _en_clean(match.group("np")):
            return SlotParts(_en_clean(match.group("np")), attr, value, structural=False)
        rest = text[: match.start()] + " " + text[match.end():] if match else text.replace(value, " ")
        return value_slot(_en_clean(rest), attr, value, kind, current_task="current task")
    return None


_EN_PAST_IRREGULAR = set(
    "bought sold broke broken went came got had made took paid spent built found left lost ran sent shut began "
    "brought caught did drove fell flew gave held kept knew met put rode saw stood told thought won wrote hired "
    "fired installed replaced repaired fixed failed stopped leaked overheated harvested planted delivered signed "
    "received ordered purchased opened closed started finished completed moved".split()
)


def event_subject_en(text: str) -> str:
    """The first two content-word runs of an event ("cooperative", "grain dryer"), dot-joined."""
    runs: list[str] = []
    current: list[str] = []
    for word in re.findall(r"[A-Za-z0-9][A-Za-z0-9'-]*|[^\sA-Za-z0-9]", text):
        w = word.lower()
        content = (w[:1].isalnum() and w not in _EN_STOP and w not in _EN_PAST_IRREGULAR and not w.endswith("ed")
                   and w not in ("ago", "before", "after", "then"))
        if content:
            current.append(w)
        elif current:
            runs.append(" ".join(current))
            current = []
    if current:
        runs.append(" ".join(current))
    return ".".join(runs[:2])
