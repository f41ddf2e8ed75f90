"""Entity access checked at use time. Memory never grants access: a memory or episode linked to an
entity the user may not read is hidden, however it was recalled.

The policy is pluggable (setting ENTITY_ACCESS_POLICY): `local` uses EntityAccess rows; `http`
asks the business service (HttpCallbackPolicy, fails closed).
"""
from collections.abc import Collection

from django.conf import settings
from django.db import connections, router
from django.db.models import Q

from entities.models import Entity, EntityAccess

# Up to this many ids, a user's rules are read for those ids only (an indexed IN); above it, all of
# the user's rules in the org are read once (an IN over thousands of ids costs more than that).
RULES_BY_ID_MAX = 500


_restricted: dict[int, tuple[int, frozenset[int]]] = {}


def _restricted_ids(org_id: int) -> frozenset[int]:
    """The org's restricted entities, kept per registry generation (a grants change bumps it);
    the per-user rules are read every time, so a revocation applies at once."""
    from entities.selectors import registry_generation

    generation = registry_generation(org_id)
    cached = _restricted.get(org_id)
    if cached and cached[0] == generation:
        return cached[1]
    ids = frozenset(Entity.objects.filter(org_id=org_id, restricted=True).values_list("id", flat=True))
    _restricted[org_id] = (generation, ids)
    return ids


def _rules_for(user_id: str, entity_ids: Collection[int]) -> dict[int, str]:
    """This user's rules on these entities: one indexed query, read every time (a revocation
    applies at once). Plain SQL: on the resolution path the ORM's query building costs ~10x the
    query itself."""
    table = EntityAccess._meta.db_table
    connection = connections[router.db_for_read(EntityAccess)]
    qn = connection.ops.quote_name
    sql = (f"SELECT {qn('entity_id')}, {qn('effect')} FROM {qn(table)} "
           f"WHERE {qn('user_id')} = %s AND {qn('entity_id')} IN ({', '.join(['%s'] * len(entity_ids))})")
    with connection.cursor() as cursor:
        cursor.execute(sql, [user_id, *entity_ids])
        return dict(cursor.fetchall())


class LocalGrantPolicy:
    """Visible to every user of the org unless restricted (then allow rows only); deny rows always win."""

    def allowed_ids(self, *, org_id: int, user_id: str, entity_ids: Collection[int], registry=None,
                    org_slug: str | None = None) -> set[int]:
        """At most one query whatever the number of candidates ("那台收割机" can name thousands):
        this user's rules, then set arithmetic with the org's restricted entities (cached per
        registry generation; `registry`, the org's matcher snapshot, already holds them)."""
        if not entity_ids:
            return set()
        ids = set(entity_ids)
        if len(ids) <= RULES_BY_ID_MAX:
            rules = _rules_for(user_id, ids)
        else:
            rules = dict(EntityAccess.objects.filter(user_id=user_id, entity__org_id=org_id)
                         .values_list("entity_id", "effect"))
        if registry is not None and ids <= registry.refs.keys():
            restricted = registry.restricted
        else:
            restricted = _restricted_ids(org_id)
        denied = {e for e, effect in rules.items() if effect == EntityAccess.DENY}
        granted = {e for e, effect in rules.items() if effect == EntityAccess.ALLOW}
        return ids - denied - (restricted - granted)

    def visible_q(self, *, user_id: str) -> Q:
        """A queryset filter with the same meaning, for listing and resolution over the registry."""
        denied = EntityAccess.objects.filter(user_id=user_id, effect=EntityAccess.DENY).values("entity_id")
        allowed = EntityAccess.objects.filter(user_id=user_id, effect=EntityAccess.ALLOW).values("entity_id")
        return ~Q(id__in=denied) & (Q(restricted=False) | Q(id__in=allowed))


class HttpPolicyAdapter:
    def __init__(self) -> None:
        from entities.policy_http import HttpCallbackPolicy

        self.http = HttpCallbackPolicy(settings.ENTITY_POLICY_URL, timeout=settings.ENTITY_POLICY_TIMEOUT,
                                       cache_ttl=settings.ENTITY_POLICY_CACHE_TTL,
                                       api_key=settings.ENTITY_POLICY_API_KEY or None)

    def allowed_ids(self, *, org_id: int, user_id: str, entity_ids: Collection[int], registry=None,
                    org_slug: str | None = None) -> set[int]:
        """Names the entities to the business service by (type, external id). With `registry` (the
        org's matcher snapshot: its active entities) and `org_slug`, without a query; an id that is
        not an active entity of the org is denied either way."""
        if not entity_ids:
            return set()
        if registry is not None and org_slug is not None:
            refs = registry.refs
            external = {i: (refs[i].type, refs[i].external_id) for i in entity_ids if i in refs}
        else:
            rows = Entity.objects.filter(org_id=org_id, id__in=entity_ids, active=True).values_list(
                "id", "type", "external_id", "org__slug")
            external = {row[0]: (row[1], row[2]) for row in rows}
            org_slug = rows[0][3] if external else None
        if not external:
            return set()
        return self.http.allowed_ids(org_slug, user_id, list(external), external)

    def visible_q(self, *, user_id: str) -> Q:
        return Q()  # the HTTP policy is asked per candidate set instead


_policy = None


def get_access_policy():
    global _policy
    if _policy is None or getattr(_policy, "_kind", None) != settings.ENTITY_ACCESS_POLICY:
        _policy = HttpPolicyAdapter() if settings.ENTITY_ACCESS_POLICY == "http" else LocalGrantPolicy()
        _policy._kind = settings.ENTITY_ACCESS_POLICY
    return _policy


def allowed_entity_ids(*, org_id: int, user_id: str, entity_ids: Collection[int], registry=None,
                       org_slug: str | None = None) -> set[int]:
    """The subset of `entity_ids` the user may read now. `registry` (the org's current matcher, from
    `entity_matcher_for_org`) and `org_slug` only save queries; they never change the answer."""
    return get_access_policy().allowed_ids(org_id=org_id, user_id=user_id, entity_ids=set(entity_ids),
                                           registry=registry, org_slug=org_slug)
