"""The resolver's view of who may see what and of the conversation's mentions (entities/resolver.py): the
visibility gate, memoised for one resolution, and the latest turn of a window that matches. Pure Python."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import islice

from entities.matcher import EntityMatcher, EntityRef
from entities.typewords import Cue

__all__ = ["Gate", "MentionEvidence", "latest_turn", "mention_step", "turn_focus"]


@dataclass
class MentionEvidence:
    entity_id: int
    at: datetime
    conversation_id: int | None = None


class Gate:
    """Visibility = registered in `entities` and allowed; memoised for one resolution."""

    def __init__(
        self,
        entities: Mapping[int, EntityRef],
        allowed: Callable[[int], bool],
        allowed_many: Callable[[Collection[int]], Collection[int]] | None,
    ):
        self._entities = entities
        self._allowed = allowed
        self._allowed_many = allowed_many
        self._known: dict[int, bool] = {}

    def visible(self, ids: Collection[int]) -> set[int]:
        unknown = {i for i in ids if i not in self._known}
        registered = {i for i in unknown if i in self._entities}
        for i in unknown - registered:
            self._known[i] = False
        if registered:
            if self._allowed_many is not None:
                ok = set(self._allowed_many(registered))
                for i in registered:
                    self._known[i] = i in ok
            else:
                for i in registered:
                    self._known[i] = bool(self._allowed(i))
        return {i for i in ids if self._known[i]}

    def visible_list(self, ids: Iterable[int]) -> list[int]:
        ordered = list(dict.fromkeys(ids))
        ok = self.visible(ordered)
        return [i for i in ordered if i in ok]

    def visible_prefix(self, ids: Iterable[int], limit: int | None) -> list[int]:
        """The first `limit` visible ids of `ids` (order kept, duplicates dropped), consuming
        `ids` only as far as needed: access is asked in batches a little larger than what is
        still missing, so hidden entities rarely cost a second call."""
        if limit is None:
            return self.visible_list(ids)
        found: list[int] = []
        seen: set[int] = set()
        pending = (i for i in ids if not (i in seen or seen.add(i)))
        while len(found) < limit:
            missing = limit - len(found)
            batch = list(islice(pending, missing + missing // 4 + 1))
            if not batch:
                break
            ok = self.visible(batch)
            found.extend(i for i in batch if i in ok)
        return found[:limit]


# The kinds (entities/typenouns.py) a pointer's classifier asks for ("这单" an order, "那辆" a vehicle), and the
# kinds a bare pronoun ("它", "it") rarely means when a thing of another kind is in the same turn: the order
# about the thing, the place it stands in.
_CLASSIFIER_KINDS = {"单": {"order"}, "张": {"order"}, "份": {"order"}, "辆": {"vehicle"}, "台": {"device", "vehicle"},
                     "部": {"device", "vehicle"}, "家": {"store", "supplier"}, "位": {"person"}, "间": {"room", "store"},
                     "艘": {"ship"}, "只": {"animal"}, "头": {"animal"}, "她": {"person", "ship", "animal"},
                     "他": {"person"}, "she": {"ship", "person"},
                     "her": {"ship", "person"}}
_CONTEXT_KINDS = frozenset({"order", "store", "room", "site", "supplier"})
# A pronoun for a thing: never the person who spoke of it in the same turn ("妈说它吹热风" is the air conditioner).
_THING_PRONOUNS = frozenset({"它", "它的", "它们", "它们的", "it", "its"})


def classifier_kinds(cue_word: str) -> frozenset[str] | None:
    """The kinds a pointer's classifier asks for ("那台" → device, vehicle), None when it asks for none."""
    kinds = next((k for ch, k in _CLASSIFIER_KINDS.items() if ch in cue_word), None)
    return frozenset(kinds) if kinds else None


def turn_focus(ids: list[int], matcher: EntityMatcher, cue_word: str = "",
               type_of: Callable[[int], str] = lambda _i: "") -> list[int]:
    """Several entities in the turn pointed back at: which one the pointer means.

    A classifier or gendered pronoun asks for its kinds ("这单" → the 售后单, not the air conditioner it is
    about); a bare pronoun prefers a thing over the order about it or the place it stands in ("它的跑带" is the
    treadmill, not its store; "reboot it" the server, not its ticket). Otherwise the entities the others hang off
    by a relation are context: every target of a relation from another entity of the turn is dropped."""
    from entities.typenouns import kinds_of_type

    if len(ids) < 2:
        return ids
    kinds = {i: kinds_of_type(type_of(i)) for i in ids}
    asked = next((k for ch, k in _CLASSIFIER_KINDS.items() if ch in cue_word), None)
    if asked:
        chosen = [i for i in ids if kinds[i] & asked]
        if chosen:
            return chosen
    else:
        things = [i for i in ids if not kinds[i] & _CONTEXT_KINDS]
        if cue_word.lower() in _THING_PRONOUNS:
            things = [i for i in things if "person" not in kinds[i]]
        if things and len(things) < len(ids):
            ids = things
    if len(ids) < 2 or not hasattr(matcher, "neighbours"):
        return ids
    among = set(ids)
    kept = [i for i in ids if not any(o in among and d == "in" for o, _t, d in matcher.neighbours(i))]
    return kept or ids


def mention_step(rule: str, cue: Cue | None, ids: list[int], latest: MentionEvidence) -> dict:
    """The evidence step of a window rule; `cue` None when no word of the text pointed (a tie the window broke)."""
    step = {"rule": rule, **({"cue": cue.word} if cue is not None else {}), "entity_ids": ids,
            "at": latest.at.isoformat()}
    if latest.conversation_id is not None:
        step["conversation_id"] = latest.conversation_id
    return step


def latest_turn(
    mentions: Sequence[MentionEvidence],
    gate: Gate,
    ok: Callable[[int], bool],
    batch: int | None = None,
) -> tuple[list[int], MentionEvidence | None]:
    """Entities of the most recent turn (same `at`) among visible, matching mentions.

    Access is asked newest turn first, for about `batch` entities at a time (None: all at once),
    so an answer from the latest turn checks only the latest turns.
    """
    # Type/category first: cheaper than the access check, which may be a remote call.
    turns: dict[datetime, list[MentionEvidence]] = {}
    for m in mentions:
        if ok(m.entity_id):
            turns.setdefault(m.at, []).append(m)  # input order kept within a turn
    newest_first = sorted(turns, reverse=True)
    i = 0
    while i < len(newest_first):
        ids: set[int] = set()
        j = i
        while j < len(newest_first) and (j == i or batch is None or len(ids) < batch):
            ids.update(m.entity_id for m in turns[newest_first[j]])
            j += 1
        visible = gate.visible(ids)
        for at in newest_first[i:j]:
            turn = [m for m in turns[at] if m.entity_id in visible]
            if turn:
                # the turn's first mention: stable for "newest last" input
                return list(dict.fromkeys(m.entity_id for m in turn)), turn[0]
        i = j
    return [], None
