"""Echoes of what is being forgotten (DESIGN §9): the episodes that restate it.

Forgetting a fact must not leave it readable in a past message: the user's own turn it came
from, the assistant's acknowledgement ("好的，记下了：钥匙柜密码 58372"), or the same fact said in
another conversation. They are found two ways:

- by link: episodes of the forgotten memories' source messages, and of the assistant turn that
  directly answers such a user turn (data model, no wording);
- by similarity: the user's other episodes whose text restates the forgotten content. Cosine alone
  does not separate an echo from a sentence on the same topic (both near 0.55 with the default
  embedder), so the score adds how much of the forgotten text's character bigrams and codes the
  episode repeats, and an episode that carries other numbers/codes than the fact is not its echo
  ("2号收割机…" does not echo "1号收割机…"). Calibrated on evaluation/data/echo_pairs.jsonl
  (docs/evaluation.md, "Forget echoes"); `FORGET_ECHO_MIN_SCORE` overrides.

Runs before the targets are redacted (it reads their content and vectors).
"""
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.conf import settings

from common.text import is_cjk
from conversations.selectors import assistant_replies
from memory.choices import MemoryKind, MemoryStatus
from memory.models import Memory, MemoryEmbedding, MemorySource
from memory.vectors import active_embedder, from_bytes, similarity

_TOKEN = re.compile(r"[a-z0-9]+|[\u3400-\u9fff]")
_CODE = re.compile(r"[a-z]*\d[a-z0-9]*")
_IDENTIFIER = re.compile(r"[a-z0-9]+(?:[-_/.#][a-z0-9]+)*")
_YEAR = re.compile(r"(?:19|20)\d\d")


@dataclass
class Echo:
    memory: Memory
    why: str  # "source message" | "acknowledgement" | "restates it"
    of: int  # the forgotten memory it echoes
    score: float | None = None


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(unicodedata.normalize("NFKC", text or "").casefold())


def grams(text: str) -> set[str]:
    """Character bigrams (CJK and whole Latin/digit tokens alike), plus the Latin/digit tokens themselves."""
    toks = _tokens(text)
    return {a + b for a, b in zip(toks, toks[1:])} | {t for t in toks if len(t) > 1 and t.isascii()}


def codes(text: str) -> set[str]:
    return {t for t in _tokens(text) if t.isascii() and _CODE.fullmatch(t)}


def identifiers(text: str) -> set[str]:
    """The fact's identifiers: door codes, room and phone numbers, plates, serials ("4471", "B2-087",
    "27-14-33", "tp8823kk"); a year is a date, not an identifier."""
    found = set()
    for match in _IDENTIFIER.finditer(unicodedata.normalize("NFKC", text or "").casefold()):
        token = match.group(0)
        digits = sum(c.isdigit() for c in token)
        letters = sum(c.isalpha() for c in token)
        if _YEAR.fullmatch(token):
            continue
        if digits >= 3 or (digits and letters and len(token) >= 4):
            found.add(token)
    return found


def echo_score(cosine: float, fact: str, text: str, *, by_identifier: bool = True) -> float:
    """cosine + the share of the fact's bigrams the text repeats; 0 when the text carries numbers or
    codes and none of the fact's; above any threshold when it repeats one of the fact's identifiers
    (the value itself, whatever the wording around it). `by_identifier` is off for an episode: a
    whole message may list several values, and which one the user meant cannot be told from it."""
    fact_ids, text_ids = identifiers(fact), identifiers(text)
    if by_identifier and fact_ids & text_ids:
        return 2.0
    if fact_ids and text_ids and not fact_ids & text_ids:
        return 0.0  # "1802" is another room than "1803", however alike the sentences
    fact_codes, text_codes = codes(fact), codes(text)
    if fact_codes and text_codes and not fact_codes & text_codes:
        return 0.0
    fact_grams = grams(fact)
    contained = len(fact_grams & grams(text)) / len(fact_grams) if fact_grams else 0.0
    return cosine + contained


def is_echo(cosine: float, fact: str, text: str) -> bool:
    return echo_score(cosine, fact, text) >= settings.FORGET_ECHO_MIN_SCORE


def forget_echoes(*, org_id: int, user_id: str, memory_ids: list[int], said_before: datetime | None = None) -> list[Echo]:
    """Active episodes of the user that restate one of `memory_ids` (not themselves in it). `said_before`:
    the time the user asked to forget; an episode of a message stored since is a new act, not an echo
    (DESIGN §9), also when the request executes later (a worker's queue, an operator's approval)."""
    targets = {m.id: m for m in Memory.objects.filter(org_id=org_id, user_id=user_id, id__in=memory_ids)}
    if not targets:
        return []
    found: dict[int, Echo] = {}
    sources: dict[int, int] = {}  # source message → the forgotten memory it is a source of
    for memory_id, message_id in MemorySource.objects.filter(memory_id__in=targets, message_id__isnull=False) \
            .values_list("memory_id", "message_id"):
        sources.setdefault(message_id, memory_id)
    acks = assistant_replies(message_ids=set(sources))
    linked = {**{m: ("source message", t) for m, t in sources.items()},
              **{a: ("acknowledgement", sources[u]) for a, u in acks.items()}}
    episodes = Memory.objects.filter(org_id=org_id, user_id=user_id, kind=MemoryKind.EPISODE, status=MemoryStatus.ACTIVE)
    if said_before is not None:
        episodes = episodes.exclude(sources__message__created_at__gte=said_before)
    for episode in episodes.filter(sources__message_id__in=linked).exclude(id__in=targets).distinct():
        message_id = next(m for m in episode.sources.values_list("message_id", flat=True) if m in linked)
        why, of = linked[message_id]
        found[episode.id] = Echo(episode, why, of)
    _similar_echoes(org_id, user_id, targets, episodes.exclude(id__in=list(targets) + list(found)), found)
    return sorted(found.values(), key=lambda e: e.memory.id)


def _similar_echoes(org_id: int, user_id: str, targets: dict[int, Memory], episodes, found: dict[int, Echo]) -> None:
    embedder = active_embedder()
    with_text = {i: m for i, m in targets.items() if m.status != MemoryStatus.FORGOTTEN and m.content}
    fact_vectors = dict(MemoryEmbedding.objects.filter(memory_id__in=with_text, model_id=embedder.model_id)
                        .values_list("memory_id", "vector"))
    if not fact_vectors:
        return
    candidates = list(episodes.order_by("-id")[: settings.FORGET_ECHO_SCAN])
    by_id = {m.id: m for m in candidates}
    pairs = list(MemoryEmbedding.objects.filter(memory_id__in=by_id, model_id=embedder.model_id)
                 .values_list("memory_id", "vector"))
    if not pairs:
        return
    stored = np.vstack([from_bytes(blob) for _, blob in pairs])
    for fact_id, blob in fact_vectors.items():
        fact = with_text[fact_id].content
        vector = from_bytes(blob)
        cjk_fact = is_cjk(fact)
        cjk = np.array([cjk_fact or is_cjk(by_id[e].content) for e, _ in pairs])
        sims = np.where(cjk, similarity(embedder, vector, stored, cjk=True), similarity(embedder, vector, stored, cjk=False))
        for (episode_id, _), cosine in zip(pairs, sims):
            if episode_id in found:
                continue
            score = echo_score(float(cosine), fact, by_id[episode_id].content,
                               by_identifier=with_text[fact_id].kind != MemoryKind.EPISODE)
            if score >= settings.FORGET_ECHO_MIN_SCORE:
                found[episode_id] = Echo(by_id[episode_id], "restates it", fact_id, round(score, 3))
