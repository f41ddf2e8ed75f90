"""Forget rules at write time: which rules a candidate matches (fingerprint or embedding) and whether
they block it. A rule guards against re-extraction of what existed when it was made (DESIGN §9)."""
from __future__ import annotations

import numpy as np
from django.db.models import Q
from django.db.models.functions import Coalesce

from common.text import is_cjk
from memory.thresholds import thresholds_for
from memory.vectors import active_embedder, from_bytes, similarity
from tenancy.models import Org

__all__ = ["forget_rule_matches", "forget_rule_verdict", "forget_rules_for"]


def forget_rules_for(org: Org, user_id: str) -> list[tuple]:
    """The forget rules that apply to this user's writes (their own and the org-wide ones)."""
    from memory.models import ForgetRule

    rules = ForgetRule.objects.filter(org=org).filter(Q(user_id=user_id) | Q(user_id__isnull=True))
    # A rule dates from when the user asked, not from when a worker (or an operator's approval) carried
    # the request out: what the user said in between is a new act (forget_rule_verdict).
    rules = rules.annotate(since=Coalesce("request__created_at", "created_at"))
    return list(rules.values_list("id", "since", "request_id", "fingerprint", "embedding", "embedding_model"))


def forget_rule_matches(org: Org, user_id: str, content: str, digest: str, vector: np.ndarray, model_id: str, *,
                        rules: list[tuple] | None = None) -> list[tuple]:
    """(rule id, the time it dates from, request id) of every forget rule this candidate matches. `rules`: the
    user's rules when the caller read them once for several candidates."""
    if rules is None:
        rules = forget_rules_for(org, user_id)
    threshold = thresholds_for(model_id).forget
    embedder = active_embedder()
    cjk = is_cjk(content)  # the rule holds no text; the candidate's script decides
    matches = []
    for rule_id, created_at, request_id, fingerprint, blob, rule_model in rules:
        if fingerprint == digest or (blob and rule_model == model_id and
                                     float(similarity(embedder, vector, from_bytes(blob), cjk=cjk)[0]) >= threshold):
            matches.append((rule_id, created_at, request_id))
    return matches


def forget_rule_verdict(sources: list, matches: list[tuple]) -> tuple[bool, tuple | None]:
    """(blocked, the rule a new statement would have matched). A rule guards against re-extraction
    of what existed when it was made: a candidate from messages stored after every matching rule is
    a new act of the user and is kept (and audited with the rule). Without a source message (an
    explicit API write) the rule still blocks: nothing shows the statement is new."""
    from conversations.selectors import messages_created_at

    if not matches:
        return False, None
    message_ids = [s.message_id for s in sources if s.message_id]
    stored = messages_created_at(message_ids=message_ids) if message_ids else []
    if not stored or len(stored) < len(set(message_ids)):
        return True, None
    first = min(stored)
    if any(created_at >= first for _, created_at, _ in matches):
        return True, None
    return False, max(matches, key=lambda m: m[1])
