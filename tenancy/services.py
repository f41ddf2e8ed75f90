import hashlib
import hmac
import secrets

from django.db import transaction
from django.utils import timezone

from common.plain_reads import plain_instances
from tenancy.models import ApiKey, AuditEvent, Org

KEY_PREFIX = "mk"


def _hash_secret(secret: str) -> str:
    # Keys are 256-bit random: a fast hash is enough, a slow KDF would only add latency per request.
    return hashlib.sha256(secret.encode()).hexdigest()


def org_get_or_create(*, slug: str, name: str = "") -> Org:
    org, _ = Org.objects.get_or_create(slug=slug, defaults={"name": name or slug})
    return org


@transaction.atomic
def api_key_create(*, org: Org, name: str, scopes: list[str] | None = None, actor: str = "system",
                   actor_kind: str = "system") -> tuple[ApiKey, str]:
    """Returns the key row and the plaintext key, which is shown once and never stored."""
    prefix = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    key = ApiKey(org=org, name=name, prefix=prefix, secret_hash=_hash_secret(secret), scopes=scopes or [])
    key.full_clean()
    key.save()
    # The caller says who it is: usernames are free, so an operator named "system" must not pass as it.
    audit_record(org=org, actor=actor, actor_kind=actor_kind, action="api_key.create", target_type="api_key",
                 target_id=str(key.id))
    return key, f"{KEY_PREFIX}_{prefix}_{secret}"


def api_key_verify(*, raw_key: str) -> ApiKey | None:
    parts = raw_key.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX:
        return None
    # Plain statements (every API request runs this; compiling the ORM query cost more than the reads).
    key = next(iter(plain_instances(ApiKey, None, prefix=parts[1], revoked_at=None)), None)
    if key is None or not hmac.compare_digest(key.secret_hash, _hash_secret(parts[2])):
        return None
    org = next(iter(plain_instances(Org, [key.org_id])), None)
    if org is None:  # the org was purged between the two reads
        return None
    key.org = org
    return key


def api_key_revoke(*, key: ApiKey, actor: str = "system") -> ApiKey:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
        audit_record(org=key.org, actor=actor, actor_kind="operator", action="api_key.revoke",
                     target_type="api_key", target_id=str(key.id))
    return key


def audit_record(*, org: Org | None, actor: str, actor_kind: str, action: str, target_type: str,
                 target_id: str = "", detail: dict | None = None) -> AuditEvent:
    return AuditEvent.objects.create(
        org=org, org_slug=org.slug if org else "", actor=actor[:200], actor_kind=actor_kind, action=action,
        target_type=target_type, target_id=str(target_id), detail=detail or {},
    )
