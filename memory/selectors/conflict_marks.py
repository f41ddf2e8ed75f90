"""Recall and open possible conflicts: when both memories of an open conflict are recalled, the
newer ranks first, and `explain` marks each with the pair (DESIGN §5: both kept, the newer first)."""
from __future__ import annotations

from config.plain_reads import plain_rows
from memory.choices import STANDING_KINDS
from memory.models import MemoryConflict


def conflicts_apply(items: list, *, org, user_id: str, explain: bool) -> list:
    ids = [item.memory.id for item in items if item.memory.kind in STANDING_KINDS]
    if not ids:
        return items
    # Two plain reads (either side among the items) instead of one ORM OR-query: recall runs this on
    # every call. Newest conflict first, as the model orders them.
    found = {row[0]: row for side in ("older", "newer") for row in plain_rows(
        MemoryConflict, ("id", "older", "newer", "created_at"), ids, key=side, org=org.id, user_id=user_id, status="open")}
    pairs = [row[:3] for row in sorted(found.values(), key=lambda row: (row[3], row[0]), reverse=True)]
    if not pairs:
        return items
    order = [item.memory.id for item in items]
    for conflict_id, older, newer in pairs:
        if explain:
            for item in items:
                if item.memory.id in (older, newer):
                    role = "older" if item.memory.id == older else "newer"
                    item.parts.setdefault("conflicts", []).append(
                        {"id": conflict_id, "role": role, "with": newer if role == "older" else older})
        if older in order and newer in order and order.index(older) < order.index(newer):
            order.remove(newer)
            order.insert(order.index(older), newer)
    by_id = {item.memory.id: item for item in items}
    return [by_id[i] for i in order]
