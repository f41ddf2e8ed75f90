from django.db import models
from django.utils import timezone

from tenancy.identifiers import IdentifierField
from tenancy.models import Org


class Entity(models.Model):
    """A business object known by a stable external ID (asset, asset_model, workorder, ...).

    Types are open strings; the same ID string under two types is two entities.
    """

    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="entities")
    type = IdentifierField(max_length=50)
    external_id = IdentifierField(max_length=200)
    name = models.CharField(max_length=300)
    aliases = models.JSONField(default=list, blank=True)
    attributes = models.JSONField(default=dict, blank=True)
    active = models.BooleanField(default=True)
    # When true only users with an explicit allow grant may read it; otherwise every org user may, minus denials.
    restricted = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["type", "external_id"]
        verbose_name_plural = "entities"
        constraints = [
            models.UniqueConstraint(fields=["org", "type", "external_id"], name="entity_unique_org_type_external_id"),
        ]
        indexes = [models.Index(fields=["org", "active"])]

    def __str__(self) -> str:
        return f"{self.type}:{self.external_id} {self.name}"


class EntityAccess(models.Model):
    """Local access grants per entity and user (the default access policy)."""

    class Effect(models.TextChoices):
        ALLOW = "allow", "allow"
        DENY = "deny", "deny"

    ALLOW, DENY = Effect.ALLOW, Effect.DENY
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="access_rules")
    user_id = IdentifierField(max_length=128)
    effect = models.CharField(max_length=5, choices=Effect.choices)
    changed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["entity", "user_id"], name="entity_access_unique_user")]
        indexes = [models.Index(fields=["user_id"])]

    def __str__(self) -> str:
        return f"{self.effect} {self.user_id} on {self.entity_id}"


class EntityRelation(models.Model):
    """A typed, directed relation between two entities of one org (work order —about→ asset), synced
    from the business service. A relation that ends is kept with `valid_to` set: it is history (the
    asset was moved, the work order closed), and the audit may need it; a later upsert of the same
    triple opens a new row."""

    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="entity_relations")
    from_entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="relations_out")
    type = models.CharField(max_length=50)
    to_entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="relations_in")
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_to = models.DateTimeField(null=True, blank=True)
    # Who asserted it: the caller's source label ("erp-sync", "crm") or, when none is given, the API actor.
    source = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["from_entity", "type"]),
            models.Index(fields=["to_entity", "type"]),
            models.Index(fields=["org", "valid_to"]),
        ]

    def __str__(self) -> str:
        return f"{self.from_entity_id} -{self.type}-> {self.to_entity_id}"

    @property
    def current(self) -> bool:
        now = timezone.now()
        return (self.valid_from is None or self.valid_from <= now) and (self.valid_to is None or self.valid_to > now)
