"""The supersede chain of one memory: what it replaced (transitively, through `supersedes`) and what
replaced it (following `superseded_by`). The console's provenance page and the Mem0 delete with
`delete_linked` walk it; recall resolves the heads of many chains at once in its own batched read
(memory/recall/lineage.py)."""
from __future__ import annotations

from dataclasses import dataclass, field

from memory.models import Memory

__all__ = ["SupersedeChain", "supersede_chain"]


@dataclass
class SupersedeChain:
    older: list[Memory] = field(default_factory=list)  # level by level, each level in (created_at, id) order
    newer: list[Memory] = field(default_factory=list)  # the memory that replaced it, then its replacement, ...
    cycle: bool = False  # `superseded_by` led back to a memory already seen
    cut: bool = False  # the walk stopped at `limit` memories


def supersede_chain(*, memory: Memory, limit: int | None = None, same_owner: bool = False,
                    newer: bool = True) -> SupersedeChain:
    """Rows written by a buggy migration could form a cycle: a visited set stops both walks, and
    `limit` (the memory itself counted) bounds them. `same_owner` keeps the walk to the memory's own
    org and user (a deletion must never reach another user's row, whatever the links say)."""
    chain = SupersedeChain()
    seen = {memory.id}
    owner = {"org_id": memory.org_id, "user_id": memory.user_id} if same_owner else {}
    frontier = [memory.id]
    while frontier:
        rows = list(Memory.objects.filter(superseded_by_id__in=frontier, **owner).exclude(id__in=seen)
                    .order_by("created_at", "id"))
        if limit is not None and len(seen) + len(rows) > limit:
            rows, chain.cut = rows[: max(0, limit - len(seen))], True
        chain.older.extend(rows)
        seen.update(r.id for r in rows)
        frontier = [r.id for r in rows]
        if chain.cut:
            break
    next_id = memory.superseded_by_id if newer else None
    while next_id is not None:
        if next_id in seen:
            chain.cycle = True
            break
        if limit is not None and len(seen) >= limit:
            chain.cut = True
            break
        row = Memory.objects.filter(id=next_id).first()
        if row is None:
            break
        chain.newer.append(row)
        seen.add(row.id)
        next_id = row.superseded_by_id
    return chain
