from django.db import models

from tenancy.identifiers import IdentifierField, IdentifierSlugField


class Org(models.Model):
    """A tenant. Every row of every app belongs to exactly one org; the API key decides which."""

    slug = IdentifierSlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200, blank=True)
    # Whether a user's forget request through the API executes at once or waits for an operator.
    forget_requires_approval = models.BooleanField(default=False)
    # Per-user cap on active long-term memories (eviction beat job); null = the global default.
    memory_capacity = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


# Scopes a key can carry. `mem0_compat`: the key may name the acting user in a Mem0 request body
# (`user_id`), the same trust as the X-Memory-User header (docs/mem0.md).
SCOPE_MEM0_COMPAT = "mem0_compat"
API_KEY_SCOPES = (SCOPE_MEM0_COMPAT,)


class ApiKey(models.Model):
    """Machine credentials of an agent service. Only a SHA-256 of the secret is stored."""

    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = IdentifierField(max_length=16, unique=True)
    secret_hash = models.CharField(max_length=64)
    scopes = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.org.slug}:{self.name} ({self.prefix})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def has_scope(self, scope: str) -> bool:
        return scope in (self.scopes or [])


class AuditEvent(models.Model):
    """Append-only log of who did what to which record. Never holds memory or message text."""

    org = models.ForeignKey(Org, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    org_slug = IdentifierField(max_length=100, blank=True)  # survives an org purge
    actor = models.CharField(max_length=200)
    actor_kind = models.CharField(max_length=20)  # api | operator | system
    action = models.CharField(max_length=50)
    target_type = models.CharField(max_length=50)
    target_id = models.CharField(max_length=100, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["target_type", "target_id"])]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.target_type}:{self.target_id}"


class IdempotencyRecord(models.Model):
    """The first answer to a write sent with an `Idempotency-Key` header (tenancy/idempotency.py).

    Inserted in the write's own transaction, before the write: the unique constraint makes a
    concurrent duplicate wait for the first to commit (or roll back) instead of writing twice, and a
    write that fails leaves no record, so its retry runs again. Kept IDEMPOTENCY_RETENTION_HOURS."""

    org = models.ForeignKey(Org, on_delete=models.CASCADE, related_name="+")
    user_id = IdentifierField(max_length=128)
    endpoint = IdentifierField(max_length=200)  # method and path: one key per endpoint and object
    key = IdentifierField(max_length=255)
    fingerprint = models.CharField(max_length=64)  # SHA-256 of the canonical request body
    status_code = models.PositiveSmallIntegerField(null=True)
    body = models.JSONField(null=True)
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["org", "user_id", "endpoint", "key"], name="idempotency_key_unique")]

    def __str__(self) -> str:
        return f"{self.endpoint} {self.key}"
