"""How the context budget is shared between sections (DESIGN §7; the order is stated in docs/api.md).

Pure arithmetic over token costs, no I/O, so the placement rules can be property-tested alone.

Every section (a *part*) has a share of the budget left after the system prompt and the new message.
1. Reservation: in priority order each part takes what it needs, up to its own share.
2. The rest (shares a part did not need, and the remainder) goes to the parts still short of room,
   again in priority order, the highest first.

So a part is never squeezed below its share by a part of lower priority, and a lower-priority part
only gets more than its share with room no higher-priority unit could use: a unit is dropped only
when it (plus its message's framing, if its part took nothing) costs more than what was left when
its turn came. Strictly handing an unused share "to the next section down" would break that: an
unused task-state share would flow past the evidence that overflowed its share, to recent messages.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Part", "Stream", "allocate"]


class Stream:
    """Units taken newest first and contiguously (the message window): only the next one may go in."""

    def __init__(self, length: int, cost: Callable[[int], int]) -> None:
        self.length = length
        self.cost = cost
        self.cursor = 0  # units taken so far, by every part drawing on this stream


@dataclass
class Part:
    name: str
    share: int  # tokens reserved for this part
    costs: list[int] = field(default_factory=list)  # item costs in the part's own order (rank), for non-stream parts
    stream: Stream | None = None  # parts drawing on one stream continue each other (recent → older history)
    frame: int = 0  # tokens paid once with the first unit: the message framing and the header
    frame_group: str = ""  # parts rendered into one message pay its frame once (preferences + memories)
    extendable: bool = True  # may take room beyond its share (the summary is made to fit its share)
    taken: list[int] = field(default_factory=list)  # indexes into costs, or stream positions
    used: int = 0
    reserved: int = 0  # how many of `taken` came within the part's own share

    @property
    def group(self) -> str:
        return self.frame_group or self.name

    def _candidates(self):
        if self.stream is not None:
            while self.stream.cursor < self.stream.length:
                yield self.stream.cursor, self.stream.cost(self.stream.cursor)
            return
        chosen = set(self.taken)
        for i, cost in enumerate(self.costs):
            if i not in chosen:
                yield i, cost

    def fill(self, room: int, opened: set[str]) -> int:
        """Take units in order while they fit ``room``; returns the tokens spent."""
        spent = 0
        for i, cost in self._candidates():
            cost += 0 if self.group in opened else self.frame
            if spent + cost > room:
                if self.stream is not None:
                    break  # contiguous: an older message never jumps a newer one that did not fit
                continue
            spent += cost
            opened.add(self.group)
            self.taken.append(i)
            if self.stream is not None:
                self.stream.cursor += 1
        self.used += spent
        return spent


def allocate(parts: list[Part], total: int) -> int:
    """Fill ``parts`` (highest priority first) within ``total`` tokens; returns what is left unused."""
    opened: set[str] = set()
    spent = 0
    for part in parts:
        spent += part.fill(max(0, min(part.share, total - spent)), opened)
        part.reserved = len(part.taken)
    for part in parts:
        if part.extendable and spent < total:
            spent += part.fill(total - spent, opened)
    return total - spent
