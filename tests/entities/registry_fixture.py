"""A small in-memory registry for pure-resolver tests: the matcher over its entities, their attributes
and the relation graph both ways, as entities/matcher.py builds it from the database."""
from entities.matcher import EntityMatcher, EntityRef


def build_matcher(entities, attributes: dict | None = None,
                  relations: list[tuple[EntityRef, str, EntityRef]] = ()) -> EntityMatcher:
    m = EntityMatcher(entities)
    if attributes is not None:
        m.attributes = dict(attributes)
    graph: dict[int, list] = {}
    for a, type_, b in relations:
        graph.setdefault(a.id, []).append((b.id, type_, "out"))
        graph.setdefault(b.id, []).append((a.id, type_, "in"))
    m.graph = {k: tuple(v) for k, v in graph.items()}
    return m
