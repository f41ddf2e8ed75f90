"""Recall and open possible conflicts: when both memories of an open conflict are recalled, the
newer ranks first, and `explain` marks each with the pair (DESIGN §5: both kept, the newer first)."""
from __future__ import annotations

from django.db.models import Q

from memory.choices import STANDING_KINDS
from memory.models import MemoryConflict


def conflicts_apply(items: list, *, org, user_id: str, explain: bool) -> list:
    ids = [item.memory.id for item in items if item.memory.kind in STANDING_KINDS]
    if not ids:
        return items
    pairs = list(MemoryConflict.objects.filter(Q(older_id__in=ids) | Q(newer_id__in=ids), org=org, user_id=user_id,
                                               status="open").values_list("id", "older_id", "newer_id"))
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
