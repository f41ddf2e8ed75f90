"""Which business entity a text is about, for one user in one conversation (DESIGN §8).

The resolver in `entities` is pure; this module feeds it the mentions that live here: the recent
window of the current conversation and the user's past mentions in conversations they may read.
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
    recent, past = [], []
    if conversation is not None:
        last_seqs = list(Message.objects.filter(conversation=conversation).order_by("-seq")
                         .values_list("id", flat=True)[: settings.RESOLVE_RECENT_MESSAGES])
        recent = [MentionEvidence(entity_id=e, at=at, conversation_id=conversation.id) for e, at in
                  EntityMention.objects.filter(message_id__in=last_seqs).values_list("entity_id", "at")]
    readable = Conversation.objects.filter(org=org).filter(conversation_readable_q(user_id))
    # "上次那台" may point into the current conversation too, so past mentions include it.
    past_qs = EntityMention.objects.filter(conversation__in=readable).order_by("-at")
    past = [MentionEvidence(entity_id=e, at=at, conversation_id=c)
            for e, at, c in past_qs.values_list("entity_id", "at", "conversation_id")[: settings.RESOLVE_PAST_MENTIONS]]

    def allowed_many(ids):
        return allowed_entity_ids(org_id=org.id, user_id=user_id, entity_ids=ids)

    resolution = resolve(text, matcher=matcher, entities=refs, recent=recent, past=past,
                         allowed=lambda entity_id: entity_id in allowed_many({entity_id}), allowed_many=allowed_many)
    return resolution, refs
