"""Which business entity a text is about, for one user in one conversation (DESIGN §8).

The resolver in `entities` is pure; this module feeds it the mentions that live here: the recent
window of the current conversation and the user's past mentions in conversations they may read.
Both are read only when the text has the cue that needs them ("它", "上次") and no earlier rule
decided, so an explicit id or name costs one query: the access check of what it matched.
"""
from django.conf import settings
from django.db import connection

from conversations.models import Conversation, ConversationAccess, EntityMention, Message
from entities.policy import allowed_entity_ids
from entities.selectors import entity_matcher_for_org
from tenancy.models import Org


def entity_resolve(*, org: Org, user_id: str, text: str, conversation: Conversation | None = None):
    from entities.resolver import MentionEvidence, Resolution, resolve

    matcher = entity_matcher_for_org(org_id=org.id)
    if matcher is None:
        return Resolution(status="none", evidence=[{"rule": "registry", "detail": "no entities registered"}]), {}
    refs = matcher.refs

    def recent():
        last_seqs = list(Message.objects.filter(conversation=conversation).order_by("-seq")
                         .values_list("id", flat=True)[: settings.RESOLVE_RECENT_MESSAGES])
        return [MentionEvidence(entity_id=e, at=at, conversation_id=conversation.id) for e, at in
                EntityMention.objects.filter(message_id__in=last_seqs).values_list("entity_id", "at")]

    def past():
        # "上次那台" may point into the current conversation too, so past mentions include it.
        return [MentionEvidence(entity_id=e, at=at, conversation_id=c)
                for e, at, c in readable_mentions(org_id=org.id, user_id=user_id, limit=settings.RESOLVE_PAST_MENTIONS)]

    def allowed_many(ids):
        # The matcher is this registry generation's snapshot: it names the entities (and which are
        # restricted) without a query; the user's rules are still read at every call.
        return allowed_entity_ids(org_id=org.id, user_id=user_id, entity_ids=ids, registry=matcher, org_slug=org.slug)

    resolution = resolve(text, matcher=matcher, entities=refs, recent=recent if conversation is not None else (),
                         past=past, allowed_many=allowed_many, max_candidates=settings.RESOLVE_MAX_CANDIDATES)
    return resolution, refs


def readable_mentions(*, org_id: int, user_id: str, limit: int) -> list[tuple]:
    """(entity id, at, conversation id) of the newest mentions in the conversations of the org this user may
    read (`conversation_readable_q`'s rule: owned and not revoked, or granted), newest first. One plain
    statement: building the ORM's two access subqueries cost ~1 ms, most of a "上次那台" resolution."""
    mention, conversation, access = EntityMention._meta, Conversation._meta, ConversationAccess._meta
    qn = connection.ops.quote_name

    def col(opts, name, alias):
        return f"{alias}.{qn(opts.get_field(name).column)}"

    sql = (f"SELECT {col(mention, 'entity', 'm')}, {col(mention, 'at', 'm')}, {col(mention, 'conversation', 'm')} "
           f"FROM {qn(mention.db_table)} m INNER JOIN {qn(conversation.db_table)} c "
           f"ON {col(conversation, 'id', 'c')} = {col(mention, 'conversation', 'm')} "
           f"LEFT OUTER JOIN {qn(access.db_table)} a ON {col(access, 'conversation', 'a')} = {col(mention, 'conversation', 'm')} "
           f"AND {col(access, 'user_id', 'a')} = %s "
           f"WHERE {col(conversation, 'org', 'c')} = %s AND (({col(conversation, 'owner_user', 'c')} = %s "
           f"AND ({col(access, 'state', 'a')} IS NULL OR {col(access, 'state', 'a')} <> %s)) "
           f"OR {col(access, 'state', 'a')} = %s) "
           f"ORDER BY {col(mention, 'at', 'm')} DESC LIMIT %s")
    at_field = mention.get_field("at")
    at_col = at_field.get_col(mention.db_table)
    converters = [*connection.ops.get_db_converters(at_col), *at_field.get_db_converters(connection)]
    with connection.cursor() as cursor:
        cursor.execute(sql, [user_id, org_id, user_id, ConversationAccess.REVOKED.value, ConversationAccess.GRANTED.value,
                             int(limit)])
        rows = cursor.fetchall()
    out = []
    for entity_id, at, conversation_id in rows:
        for convert in converters:
            at = convert(at, at_col, connection)
        out.append((entity_id, at, conversation_id))
    return out
