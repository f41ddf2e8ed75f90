"""Relations between registered entities (DESIGN §8): typed, directed, dated, with the source that
asserted them. Writes go through here; an ended relation is kept as history, never deleted."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from entities.models import Entity, EntityRelation
from entities.selectors import current_q, registry_changed
from tenancy.db import retry_on_contention
from tenancy.models import Org
from tenancy.services import audit_record

logger = logging.getLogger(__name__)


class RelationError(ValueError):
    """A relation that cannot be stored; `field` names the offending input field."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def _entity(org: Org, ref: dict, field: str) -> Entity:
    entity = Entity.objects.filter(org=org, type=ref["type"], external_id=ref["external_id"]).first()
    if entity is None:
        raise RelationError(field, "No such entity in this org's registry.")
    return entity


@dataclass
class RelationResult:
    relation: EntityRelation
    created: bool


@retry_on_contention
def relation_upsert(*, org: Org, from_ref: dict, type: str, to_ref: dict, valid_from: datetime | None = None,
                    valid_to: datetime | None = None, source: str = "", actor: str = "api",
                    field: str = "relation") -> RelationResult:
    """Create or update the open relation of (from, type, to). An open row is one not yet ended; when
    the triple has only ended rows, a new row opens (the relation holds again, its history stays)."""
    with transaction.atomic():
        source_entity = _entity(org, from_ref, f"{field}.from")
        target = _entity(org, to_ref, f"{field}.to")
        if source_entity.id == target.id:
            raise RelationError(f"{field}.to", "An entity cannot be related to itself.")
        if valid_from and valid_to and valid_to <= valid_from:
            raise RelationError(f"{field}.valid_to", "Must be after valid_from.")
        # The source entity's row lock serialises upserts of its relations: no two open rows per triple.
        Entity.objects.select_for_update().filter(id=source_entity.id).first()
        now = timezone.now()
        relation = (EntityRelation.objects.filter(from_entity=source_entity, type=type, to_entity=target)
                    .filter(Q(valid_to__isnull=True) | Q(valid_to__gt=now)).order_by("-id").first())
        created = relation is None
        if created:
            relation = EntityRelation(org=org, from_entity=source_entity, type=type, to_entity=target)
        if valid_from is not None or created:
            relation.valid_from = valid_from or now
        relation.valid_to = valid_to
        relation.source = (source or actor)[:200]
        relation.full_clean(exclude=["org", "from_entity", "to_entity"])
        relation.save()
        transaction.on_commit(lambda: registry_changed(org.id), robust=True)
    logger.info("relation.upsert org=%s relation=%s created=%s", org.id, relation.id, created)
    return RelationResult(relation, created)


@retry_on_contention
@transaction.atomic
def relations_bulk_upsert(*, org: Org, items: list[dict], actor: str = "api") -> list[RelationResult]:
    out = [relation_upsert(org=org, actor=actor, field=f"relations[{i}]", **item) for i, item in enumerate(items)]
    audit_record(org=org, actor=actor, actor_kind="api", action="relation.bulk_upsert", target_type="entity_relation",
                 detail={"count": len(out), "created": sum(1 for r in out if r.created)})
    return out


@retry_on_contention
@transaction.atomic
def relations_end(*, org: Org, items: list[dict], actor: str = "api") -> int:
    """End the open relations named by (from, type, to): they become history (valid_to = now). Ending a
    relation that is not open is a no-op, so a sync can repeat."""
    now = timezone.now()
    ended = 0
    for i, item in enumerate(items):
        source_entity = _entity(org, item["from_ref"], f"relations[{i}].from")
        target = _entity(org, item["to_ref"], f"relations[{i}].to")
        ended += (EntityRelation.objects.filter(from_entity=source_entity, type=item["type"], to_entity=target)
                  .filter(Q(valid_to__isnull=True) | Q(valid_to__gt=now)).update(valid_to=now, updated_at=now))
    if ended:
        transaction.on_commit(lambda: registry_changed(org.id), robust=True)
    audit_record(org=org, actor=actor, actor_kind="api", action="relation.end", target_type="entity_relation",
                 detail={"count": ended})
    return ended


@retry_on_contention
@transaction.atomic
def relation_end(*, relation: EntityRelation, actor: str = "api") -> EntityRelation:
    if relation.valid_to is None or relation.valid_to > timezone.now():
        relation.valid_to = timezone.now()
        relation.save(update_fields=["valid_to", "updated_at"])
        transaction.on_commit(lambda: registry_changed(relation.org_id), robust=True)
        audit_record(org=relation.org, actor=actor, actor_kind="api", action="relation.end",
                     target_type="entity_relation", target_id=str(relation.id))
    return relation


def entity_neighbours(*, entity: Entity, include_history: bool = False, type: str | None = None) -> QuerySet[EntityRelation]:
    """Relations of `entity` in both directions whose other end is active (deactivating an entity hides
    its relations; the rows stay for the audit). The caller filters the other ends by access."""
    qs = (EntityRelation.objects.filter(Q(from_entity=entity) | Q(to_entity=entity))
          .filter(from_entity__active=True, to_entity__active=True)
          .select_related("from_entity", "to_entity"))
    if not include_history:
        qs = qs.filter(current_q())
    if type:
        qs = qs.filter(type=type)
    return qs.order_by("-valid_from", "-id")


def entity_neighbours_visible(*, entity: Entity, user_id: str, include_history: bool = False,
                              type: str | None = None) -> list[dict]:
    """The neighbours of `entity` this user may read, as plain dicts (REST and MCP serialise the same): each
    other end passes the access policy now, so a relation never shows what the user may not read."""
    from entities.policy import get_access_policy

    rows = list(entity_neighbours(entity=entity, include_history=include_history, type=type))
    others = {r.to_entity_id if r.from_entity_id == entity.id else r.from_entity_id for r in rows}
    allowed = get_access_policy().allowed_ids(org_id=entity.org_id, user_id=user_id, entity_ids=others) if others else set()
    out = []
    for r in rows:
        outgoing = r.from_entity_id == entity.id
        other = r.to_entity if outgoing else r.from_entity
        if other.id in allowed:
            out.append({"relation_id": r.id, "type": r.type, "direction": "out" if outgoing else "in", "entity": other,
                        "valid_from": r.valid_from, "valid_to": r.valid_to, "source": r.source, "current": r.current})
    return out
