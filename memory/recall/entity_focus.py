"""What a recall query is about, in the business registry (DESIGN §8): the entities it names, resolved as
`POST /entities/resolve` would (the conversation's window included), and their neighbours one hop away
along relations in force. Memories linked to the named entities rank higher; memories linked to a
neighbour (an asset's work orders, a work order's asset) are candidates too, ranked below direct links.
A relation that has ended (the work order closed, the asset moved) is history: its neighbours are
followed too, below the current ones, and the path carries the relation's end so recall dates it.

Every entity here passed the access policy now, and recall's back-check checks every linked entity of a
candidate again, so a relation never brings in what the user may not read.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings

from memory.recall.snapshot_sql import linked_memories

MAX_ANCHORS = 5  # an ambiguous mention names a few entities; a category word alone names too many to help


@dataclass
class EntityFocus:
    direct: set[int] = field(default_factory=set)
    # neighbour entity id → how it was reached: {"from": anchor id, "relation": type, "direction": "out" | "in"}
    hops: dict[int, dict] = field(default_factory=dict)
    # reached only through a relation that has ended: the same path plus "valid_to"
    past: dict[int, dict] = field(default_factory=dict)
    memory_ids: list[int] = field(default_factory=list)  # linked to a direct or hop entity, newest first

    def part(self, links) -> tuple[str | None, dict | None]:
        """Which kind of link a candidate with these linked entities has: "direct", "hop" or "past" (with
        its path), or None; the strongest when it has several."""
        if self.direct & set(links):
            return "direct", None
        for kind, reached in (("hop", self.hops), ("past", self.past)):
            for entity_id in links:
                if entity_id in reached:
                    return kind, reached[entity_id]
        return None, None


def entity_focus(*, org, user_id: str, query: str, conversation_id: int | None) -> EntityFocus | None:
    """None when the query names no entity the user may read (or the feature is off)."""
    if not settings.RECALL_ENTITY_FOCUS:
        return None
    from conversations.entity_resolution import entity_resolve
    from conversations.selectors import conversation_in_org
    from entities.policy import allowed_entity_ids
    from entities.selectors import entity_matcher_for_org

    matcher = entity_matcher_for_org(org_id=org.id)
    if matcher is None:
        return None
    conversation = conversation_in_org(org=org, conversation_id=conversation_id) if conversation_id else None
    resolution, _refs = entity_resolve(org=org, user_id=user_id, text=query, conversation=conversation)
    if resolution.status == "resolved":
        anchors = [resolution.entity_id]
    elif resolution.status == "ambiguous" and len(resolution.candidates) <= MAX_ANCHORS:
        anchors = list(resolution.candidates)
    else:
        return None
    focus = EntityFocus(direct=set(anchors))
    reached: dict[int, dict] = {}
    ended: dict[int, dict] = {}
    for anchor in anchors:
        for other, type_, direction in matcher.neighbours(anchor):
            if other not in focus.direct:
                reached.setdefault(other, {"from": anchor, "relation": type_, "direction": direction, "to": other})
        for other, type_, direction, valid_to in matcher.past_neighbours(anchor):
            if other not in focus.direct and other not in reached:
                ended.setdefault(other, {"from": anchor, "relation": type_, "direction": direction, "to": other,
                                         "valid_to": valid_to})
    for other in reached:  # related now and before: the current relation is the one presented
        ended.pop(other, None)
    if reached or ended:
        allowed = allowed_entity_ids(org_id=org.id, user_id=user_id, entity_ids=set(reached) | set(ended),
                                     registry=matcher, org_slug=org.slug)
        focus.hops = {e: path for e, path in reached.items() if e in allowed}
        focus.past = {e: path for e, path in ended.items() if e in allowed}
    focus.memory_ids = linked_memories(focus.direct | set(focus.hops) | set(focus.past), org.id, user_id,
                                       settings.RECALL_ENTITY_CANDIDATES)
    return focus
