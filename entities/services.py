import logging

from django.db import transaction

from entities.models import Entity, EntityAccess
from entities.selectors import registry_changed
from tenancy.db import retry_on_contention
from tenancy.models import Org
from tenancy.services import audit_record

logger = logging.getLogger(__name__)


@retry_on_contention
def entity_upsert(*, org: Org, type: str, external_id: str, name: str, aliases: list[str] | None = None,
                  attributes: dict | None = None, grants: list[str] | None = None, actor: str = "api") -> tuple[Entity, bool]:
    """Create or update by (org, type, external_id). `grants` (when given) makes the entity readable by
    exactly those users; absent keeps the current access rules."""
    with transaction.atomic():
        entity = Entity.objects.select_for_update().filter(org=org, type=type, external_id=external_id).first()
        created = entity is None
        if created:
            entity = Entity(org=org, type=type, external_id=external_id)
        entity.name = name
        entity.aliases = list(dict.fromkeys(a for a in (aliases or []) if a and a != name))
        entity.attributes = attributes or {}
        entity.active = True
        if grants is not None:
            entity.restricted = True
        entity.full_clean(validate_unique=False, validate_constraints=False)
        entity.save()
        if grants is not None:
            EntityAccess.objects.filter(entity=entity, effect=EntityAccess.ALLOW).exclude(user_id__in=grants).delete()
            for user_id in grants:
                EntityAccess.objects.update_or_create(entity=entity, user_id=user_id, defaults={"effect": EntityAccess.ALLOW})
        transaction.on_commit(lambda: registry_changed(org.id), robust=True)
    return entity, created


@retry_on_contention
@transaction.atomic
def entities_bulk_upsert(*, org: Org, items: list[dict], actor: str = "api") -> list[tuple[Entity, bool]]:
    out = [entity_upsert(org=org, actor=actor, **item) for item in items]
    audit_record(org=org, actor=actor, actor_kind="api", action="entity.bulk_upsert", target_type="entity",
                 detail={"count": len(out), "created": sum(1 for _, c in out if c)})
    return out


@retry_on_contention
def entity_deactivate(*, entity: Entity, actor: str) -> Entity:
    if entity.active:
        entity.active = False
        entity.save(update_fields=["active", "updated_at"])
        transaction.on_commit(lambda: registry_changed(entity.org_id), robust=True)
        audit_record(org=entity.org, actor=actor, actor_kind="api", action="entity.deactivate", target_type="entity",
                     target_id=str(entity.id))
    return entity


@retry_on_contention
@transaction.atomic
def entity_access_set(*, entity: Entity, user_id: str, granted: bool, actor: str) -> None:
    """Grant or revoke one user's access; takes effect at the next read (access is checked at use time)."""
    if granted:
        if entity.restricted:
            EntityAccess.objects.update_or_create(entity=entity, user_id=user_id, defaults={"effect": EntityAccess.ALLOW})
        else:
            EntityAccess.objects.filter(entity=entity, user_id=user_id, effect=EntityAccess.DENY).delete()
    elif entity.restricted:
        EntityAccess.objects.filter(entity=entity, user_id=user_id).delete()
    else:
        EntityAccess.objects.update_or_create(entity=entity, user_id=user_id, defaults={"effect": EntityAccess.DENY})
    audit_record(org=entity.org, actor=actor, actor_kind="api", action="entity.grant" if granted else "entity.revoke",
                 target_type="entity", target_id=str(entity.id), detail={"user_id": user_id})
