"""Which business entity a text is about, for one user in one conversation (DESIGN §8).

The resolver in `entities` is pure; this module feeds it the mentions that live here: the recent
window of the current conversation and the user's past mentions in conversations they may read.
Both are read only when the text has the cue that needs them ("它", "上次") and no earlier rule
decided, so an explicit id or name costs one query: the access check of what it matched.
"""
from django.conf import settings

from conversations.models import Conversation, EntityMention, Message
from conversations.selectors import conversation_readable_q
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
        readable = Conversation.objects.filter(org=org).filter(conversation_readable_q(user_id))
        # "上次那台" may point into the current conversation too, so past mentions include it.
        past_qs = EntityMention.objects.filter(conversation__in=readable).order_by("-at")
        return [MentionEvidence(entity_id=e, at=at, conversation_id=c)
                for e, at, c in past_qs.values_list("entity_id", "at", "conversation_id")[: settings.RESOLVE_PAST_MENTIONS]]

    def allowed_many(ids):
        # The matcher is this registry generation's snapshot: it names the entities (and which are
        # restricted) without a query; the user's rules are still read at every call.
        return allowed_entity_ids(org_id=org.id, user_id=user_id, entity_ids=ids, registry=matcher, org_slug=org.slug)

    resolution = resolve(text, matcher=matcher, entities=refs, recent=recent if conversation is not None else (),
                         past=past, allowed_many=allowed_many, max_candidates=settings.RESOLVE_MAX_CANDIDATES)
    return resolution, refs
