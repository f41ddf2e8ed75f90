import threading
import time
from datetime import datetime

from django.core.cache import cache
from django.db.models import Q, QuerySet, Value
from django.db.models.functions import Lower
from django.http import Http404
from django.utils import timezone

from entities.models import Entity, EntityRelation
from tenancy.models import Org

MAX_MATCHERS = 64  # orgs whose matcher stays in process
_matchers: dict[int, tuple[int, object]] = {}
_matchers_lock = threading.Lock()


def entity_list(*, org: Org | int, type: str | None = None, search: str | None = None,
                include_inactive: bool = False) -> QuerySet[Entity]:
    qs = Entity.objects.filter(org=org)
    if not include_inactive:
        qs = qs.filter(active=True)
    if type:
        qs = qs.filter(type=type)
    if search:
        # A search, not an identity check: it ignores case. The external id's column compares bytes
        # (binary collation on MySQL, where `icontains` would then respect case), so it is lowered first.
        qs = qs.alias(external_id_lower=Lower("external_id")).filter(
            Q(external_id_lower__contains=Lower(Value(search))) | Q(name__icontains=search) | Q(aliases__icontains=search))
    return qs


def entity_get(*, org: Org, type: str, external_id: str) -> Entity:
    entity = Entity.objects.filter(org=org, type=type, external_id=external_id).first()
    if entity is None:
        raise Http404
    return entity


def registry_generation(org_id: int) -> int:
    """Bumped by every registry change (entities/services.py); a lost counter restarts from the clock."""
    key = f"entity-gen:{org_id}"
    value = cache.get(key)
    if value is None:
        cache.add(key, time.time_ns(), None)
        value = cache.get(key)
    return int(value) if value is not None else time.time_ns()


def registry_changed(org_id: int) -> None:
    try:
        cache.incr(f"entity-gen:{org_id}")
    except ValueError:
        cache.set(f"entity-gen:{org_id}", time.time_ns(), None)


def entity_refs(*, org_id: int) -> dict:
    from entities.matcher import EntityRef

    return {
        row[0]: EntityRef(id=row[0], type=row[1], external_id=row[2], name=row[3], aliases=tuple(row[4] or ()))
        for row in Entity.objects.filter(org_id=org_id, active=True).values_list("id", "type", "external_id", "name", "aliases")
    }


def _entity_snapshot(org_id: int) -> tuple[dict, frozenset[int], dict[int, dict]]:
    """The org's active entities as EntityRefs, which of them are restricted, and their attributes: one query."""
    from entities.matcher import EntityRef

    refs, restricted, attributes = {}, set(), {}
    rows = Entity.objects.filter(org_id=org_id, active=True).values_list(
        "id", "type", "external_id", "name", "aliases", "restricted", "attributes")
    for id_, type_, external_id, name, aliases, is_restricted, attrs in rows:
        refs[id_] = EntityRef(id=id_, type=type_, external_id=external_id, name=name, aliases=tuple(aliases or ()))
        if is_restricted:
            restricted.add(id_)
        if attrs:
            attributes[id_] = attrs
    return refs, frozenset(restricted), attributes


def entity_matcher_for_org(*, org_id: int):
    """The org's Aho-Corasick matcher (None when it has no entities), rebuilt only when the registry
    generation moved. `matcher.refs` holds the EntityRefs it was built from, for the resolver, and
    `matcher.restricted` which of them are restricted (a grants change in `entity_upsert` bumps the
    generation too), for the access policy."""
    from entities.matcher import EntityMatcher

    version = registry_generation(org_id)
    cached = _matchers.get(org_id)
    if cached and cached[0] == version and _in_force(cached[1]):
        return cached[1]
    with _matchers_lock:
        cached = _matchers.get(org_id)
        if cached and cached[0] == version and _in_force(cached[1]):
            return cached[1]
        refs, restricted, attributes = _entity_snapshot(org_id)
        matcher = EntityMatcher(refs.values()) if refs else None
        if matcher is not None:
            matcher.refs = refs
            matcher.restricted = restricted
            matcher.attributes = attributes
            matcher.graph, matcher.history, matcher.changes_at = relation_graph(org_id=org_id)
        _matchers[org_id] = (version, matcher)
        while len(_matchers) > MAX_MATCHERS:
            _matchers.pop(next(iter(_matchers)))
        return matcher


def entity_ids_from_refs(*, org: Org, refs: list[str]) -> tuple[list[int], list[str]]:
    """Map 'type:external_id' (or a bare external id unique in the org) to entity ids.
    Returns (ids, refs that did not name exactly one entity of this org)."""
    ids, unknown = [], []
    for ref in refs:
        type_, _, external_id = ref.partition(":") if ":" in ref else ("", "", ref)
        qs = Entity.objects.filter(org=org, external_id=external_id or ref)
        if type_ and external_id:
            typed = qs.filter(type=type_)
            qs = typed if typed.exists() else Entity.objects.filter(org=org, external_id=ref)
        found = list(qs.values_list("id", flat=True)[:2])
        if len(found) == 1:
            ids.append(found[0])
        else:
            unknown.append(ref)
    return ids, unknown


def entity_labels(*, entity_ids) -> dict[int, str]:
    if not entity_ids:
        return {}
    return {row[0]: f"{row[1]}:{row[2]}" for row in Entity.objects.filter(id__in=set(entity_ids)).values_list("id", "type", "external_id")}


def current_q(at: datetime | None = None, prefix: str = "") -> Q:
    """Relations in force at `at` (now by default): begun, and not yet ended."""
    at = at or timezone.now()
    return ((Q(**{f"{prefix}valid_from__isnull": True}) | Q(**{f"{prefix}valid_from__lte": at}))
            & (Q(**{f"{prefix}valid_to__isnull": True}) | Q(**{f"{prefix}valid_to__gt": at})))


def _in_force(matcher) -> bool:
    """A snapshot's relations in force stay so until the first dated begin or end after it was built
    (a relation upserted with a future `valid_to` ends then, with no write to move the generation)."""
    changes_at = getattr(matcher, "changes_at", None)
    return changes_at is None or time.time() < changes_at


Adjacency = dict[int, tuple[tuple[int, str, str], ...]]
History = dict[int, tuple[tuple[int, str, str, datetime], ...]]


def relation_graph(*, org_id: int, at: datetime | None = None) -> tuple[Adjacency, History, float | None]:
    """The org's relations between active entities, as adjacency: entity id → ((other id, type, "out" |
    "in"), ...) for those in force at `at` (now), and the ended ones apart with their end, newest end
    first ((other id, type, direction, valid_to), ...): history, which recall dates. Also the first
    begin or end after `at` (epoch seconds, None when no relation has one), when the snapshot expires.
    One query; the resolver's snapshot keeps it per registry generation."""
    at = at or timezone.now()
    rows = (EntityRelation.objects.filter(org_id=org_id, from_entity__active=True, to_entity__active=True)
            .values_list("from_entity_id", "to_entity_id", "type", "valid_from", "valid_to"))
    graph: dict[int, list[tuple[int, str, str]]] = {}
    history: dict[int, list[tuple[int, str, str, datetime]]] = {}
    changes_at = None
    for source_id, target_id, type_, valid_from, valid_to in rows:
        for boundary in (valid_from, valid_to):
            if boundary is not None and boundary > at and (changes_at is None or boundary < changes_at):
                changes_at = boundary
        if valid_to is not None and valid_to <= at:
            history.setdefault(source_id, []).append((target_id, type_, "out", valid_to))
            history.setdefault(target_id, []).append((source_id, type_, "in", valid_to))
        elif valid_from is None or valid_from <= at:
            graph.setdefault(source_id, []).append((target_id, type_, "out"))
            graph.setdefault(target_id, []).append((source_id, type_, "in"))
    return ({k: tuple(v) for k, v in graph.items()},
            {k: tuple(sorted(v, key=lambda r: r[3], reverse=True)) for k, v in history.items()},
            changes_at.timestamp() if changes_at is not None else None)
