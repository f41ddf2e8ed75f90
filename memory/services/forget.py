"""Forgetting for good (DESIGN §9): redact content, delete vectors and cache entries, leave a
ForgetRule fingerprint so extraction cannot bring it back, audit without content.

Execution works memory by memory in short transactions and skips what is already forgotten, so a
worker that dies midway can simply run the request again (idempotent and resumable).
"""
import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from common.text.normalize import normalize_for_compare
from conversations.selectors import conversation_count, message_ids_created_since, message_ids_of_owner
from conversations.services import messages_redact, summaries_delete
from memory.cache import memory_cache, user_generation_bump
from memory.choices import ForgetRequestStatus, MemoryStatus
from memory.enqueue import FORGET_REQUEST_EXECUTE, MEMORY_POINTS_DELETE, enqueue
from memory.models import ForgetRequest, ForgetRule, Memory, MemoryEmbedding, MemorySource, MemoryTerms, MemoryVersion
from memory.recall import RecallQuery, recall
from memory.services.extraction import messages_extract
from memory.services.forget_echoes import forget_echoes
from memory.services.forget_query import is_request_turn, query_subject
from tenancy.db import retry_on_contention
from tenancy.models import Org
from tenancy.services import audit_record

logger = logging.getLogger(__name__)

PURGE_CHUNK = 1000  # memory ids per point-deletion task (message size)


def forget_preview(*, org: Org, user_id: str, query: str, k: int = 20) -> list[tuple[Memory, float]]:
    """What "forget what matches this query" would remove: relevant memories, plus the episodes they
    came from and the memories derived from matched episodes (so nothing of it survives elsewhere)."""
    # Searched by what is to be forgotten, not by the words of asking (memory/services/forget_query.py).
    result = recall(RecallQuery(org=org, user_id=user_id, query=query_subject(query), k=k, include_episodes=True))
    # Judged on absolute evidence (raw cosine, or sharing the query's best keyword match), or on a
    # clear lead of the best match over everything else, never on rank alone: the top hit of an
    # unrelated query must not be forgotten just for being first. The turn that asked is not what it
    # asks about, whether it was kept as an episode or (read as a statement) as a memory of its own.
    items = [i for i in result.items if not is_request_turn(i.memory.content, query)]
    matched = {i.memory.id: (i.memory, i.parts["relevance"]) for i in items
               if i.parts["cosine"] >= settings.FORGET_PREVIEW_MIN_COSINE or i.parts["keyword"] >= 0.5}
    if not matched:
        lead = _clear_lead(items)
        if lead is not None:
            matched[lead.memory.id] = (lead.memory, lead.parts["relevance"])
    message_ids = set(MemorySource.objects.filter(memory_id__in=matched, message_id__isnull=False)
                      .values_list("message_id", flat=True))
    related = Memory.objects.filter(org=org, user_id=user_id, status=MemoryStatus.ACTIVE, sources__message_id__in=message_ids)
    for memory in related.distinct():
        if memory.id not in matched:
            matched[memory.id] = (memory, 0.0)
    return sorted(matched.values(), key=lambda pair: -pair[1])


def _clear_lead(items):
    """The best match by cosine when it stands out: close enough to the query to be about it, and
    well ahead of every other memory of the user (what a paraphrase of the target looks like)."""
    ordered = sorted(items, key=lambda i: -i.parts["cosine"])
    if not ordered or ordered[0].parts["cosine"] < settings.FORGET_PREVIEW_LEAD_COSINE:
        return None
    # The message a memory came from says it again (its episode): no rival of it, and it goes with it.
    lead = normalize_for_compare(ordered[0].memory.content)
    rivals = [i for i in ordered[1:] if lead not in (other := normalize_for_compare(i.memory.content)) and other not in lead]
    runner_up = rivals[0].parts["cosine"] if rivals else 0.0
    return ordered[0] if ordered[0].parts["cosine"] - runner_up >= settings.FORGET_PREVIEW_LEAD_MARGIN else None


@retry_on_contention
def forget_request_create(*, org: Org, subject_user: str, requested_by: str, target: str, memory_ids: list[int] | None = None,
                          query: str = "", include_messages: bool = False, via: str = "api",
                          execute_inline: bool = False) -> ForgetRequest:
    """`execute_inline`: an approved request runs in this process before returning instead of on a
    worker (the Mem0 surface, whose delete answers "deleted", not "queued")."""
    owned = list(Memory.objects.filter(org=org, user_id=subject_user, id__in=memory_ids or []).values_list("id", flat=True))
    request = ForgetRequest.objects.create(
        org=org, subject_user=subject_user, requested_by=requested_by[:200], requested_via=via, target=target,
        memory_id=owned[0] if target == "memory" and owned else None, query=query, matched_ids=owned,
        include_messages=include_messages)
    audit_record(org=org, actor=requested_by, actor_kind="operator" if via == "console" else "api",
                 action="forget.request", target_type="forget_request", target_id=str(request.id),
                 detail={"target": target, "memories": len(owned)})
    if via == "api" and not org.forget_requires_approval:
        forget_request_decide(request=request, approve=True, operator="auto-approve", execute_inline=execute_inline)
    return request


def forget_request_for_caller(*, org: Org, user_id: str, requested_by: str, memory_ids: list[int], query: str,
                              everything: bool, include_messages: bool | None) -> ForgetRequest:
    """A user's own request through the API: `everything` covers the user, a `query` what it matches,
    otherwise the listed memories. Messages go too by default unless only listed memories are named."""
    target = "user" if everything else ("query" if query else "memory")
    return forget_request_create(org=org, subject_user=user_id, requested_by=requested_by, target=target,
                                 memory_ids=memory_ids, query=query,
                                 include_messages=include_messages if include_messages is not None else target != "memory")


@retry_on_contention
def forget_request_decide(*, request: ForgetRequest, approve: bool, operator: str,
                          execute_inline: bool = False) -> ForgetRequest:
    if request.status != ForgetRequestStatus.PENDING:
        return request
    request.status = ForgetRequestStatus.APPROVED if approve else ForgetRequestStatus.REJECTED
    request.operator, request.decided_at = operator[:200], timezone.now()
    if not approve:
        request.query = ""  # nothing will be forgotten; the query text need not be kept either
    request.save(update_fields=["status", "operator", "decided_at", "query"])
    audit_record(org=request.org, actor=operator, actor_kind="operator" if operator != "auto-approve" else "system",
                 action="forget.approve" if approve else "forget.reject", target_type="forget_request",
                 target_id=str(request.id))
    if approve and execute_inline:
        forget_request_execute(request_id=request.id)
        request.refresh_from_db()
    elif approve:
        transaction.on_commit(lambda: enqueue(FORGET_REQUEST_EXECUTE, request.id), robust=True)
    return request


@retry_on_contention
def _memory_forget(memory_id: int, request: ForgetRequest | None) -> tuple[bool, list[int]]:
    """Forget one memory. Returns (changed, source message ids).

    One transaction per memory, retried on lock contention: an execution runs after the approval has
    committed (a worker, or the approval's on-commit hook with eager tasks), so a lock held by a
    concurrent reader or writer must not leave an approved request half done until the resume sweep."""
    with transaction.atomic():
        memory = Memory.objects.select_for_update().filter(id=memory_id).first()
        if memory is None:
            return False, []
        message_ids = list(MemorySource.objects.filter(memory=memory, message_id__isnull=False)
                           .values_list("message_id", flat=True))
        if memory.status == MemoryStatus.FORGOTTEN:
            return False, message_ids
        vectors = {row.model_id: row.vector for row in MemoryEmbedding.objects.filter(memory=memory)}
        hashes = set(MemoryVersion.objects.filter(memory=memory).values_list("content_hash", flat=True)) | {memory.content_hash}
        model_id, blob = next(iter(vectors.items()), ("", None))
        ForgetRule.objects.bulk_create([
            ForgetRule(org_id=memory.org_id, user_id=memory.user_id, fingerprint=h, embedding=blob, embedding_model=model_id,
                       slot_key=memory.slot_key, request=request) for h in hashes])
        MemoryVersion.objects.filter(memory=memory).update(content="", redacted=True)
        MemoryEmbedding.objects.filter(memory=memory).delete()
        MemoryTerms.objects.filter(memory=memory).delete()  # words of the content, like its vectors
        Memory.objects.filter(id=memory.id).update(
            content="", metadata={}, status=MemoryStatus.FORGOTTEN, active_hash=None, invalidated_at=timezone.now(),
            invalid_reason="forgotten", version=memory.version + 1, updated_at=timezone.now())
        audit_record(org=memory.org, actor=f"forget_request:{request.id}" if request else "system", actor_kind="system",
                     action="memory.forget", target_type="memory", target_id=str(memory.id),
                     detail={"version": memory.version + 1})
        new_version = memory.version + 1
        org_id, user_id = memory.org_id, memory.user_id
    _drop_projections(org_id, user_id, memory_id, new_version)
    return True, message_ids


def _drop_projections(org_id: int, user_id: str, memory_id: int, version: int) -> None:
    """Delete the point from every collection, through the vector queue: this runs in a Celery worker,
    which on a single node may not open the embedded shard (docs/architecture.md, Topologies). If
    the broker is down the row stays lagging and reconcile deletes the point."""
    transaction.on_commit(lambda: enqueue(MEMORY_POINTS_DELETE, [memory_id]), robust=True)
    memory_cache.delete(org_id, user_id, [memory_id])
    user_generation_bump(org_id, user_id)


def forget_request_execute(*, request_id: int) -> ForgetRequest:
    request = ForgetRequest.objects.select_related("org").get(id=request_id)
    if request.status != ForgetRequestStatus.APPROVED:
        return request
    org, user_id = request.org, request.subject_user
    echoes: list[int] = []
    if request.target == "user":
        ids = list(Memory.objects.filter(org=org, user_id=user_id).values_list("id", flat=True))
    else:
        ids = list(Memory.objects.filter(org=org, user_id=user_id, id__in=request.matched_ids).values_list("id", flat=True))
        # The episodes restating what is forgotten go with it (found before redaction: it reads the content).
        echoes = [echo.memory.id for echo in forget_echoes(org_id=org.id, user_id=user_id, memory_ids=ids,
                                                           said_before=request.created_at)]
        ids += echoes
    forgotten, message_ids = set(), set()
    for memory_id in ids:
        changed, sources = _memory_forget(memory_id, request)
        if changed:
            forgotten.add(memory_id)
        message_ids.update(sources)
    # What the user said after asking (a forgotten memory that a later message restated, merged as its
    # source) is a new act (DESIGN §9): its messages are kept and read again, which the rules now allow.
    said_since = (message_ids_created_since(message_ids=message_ids, since=request.created_at)
                  if request.target != "user" else set())
    message_ids -= said_since
    redacted: list[int] = []
    if request.include_messages or request.target == "user":
        if request.target == "user":
            message_ids |= message_ids_of_owner(org=org, owner_user=user_id)
        # Whatever else was derived from those messages goes too, then the messages themselves.
        derived = set(MemorySource.objects.filter(message_id__in=message_ids).values_list("memory_id", flat=True))
        for memory_id in derived - set(ids):
            if _memory_forget(memory_id, request)[0]:
                forgotten.add(memory_id)
        messages_redact(message_ids=list(message_ids))
        # Every message the request covers, also one an earlier run redacted: the answer says which
        # messages no longer hold text because of this request, not only what this run changed.
        redacted = sorted(message_ids)
        if request.target == "user":
            summaries_delete(org=org, owner_user=user_id)
    if request.target == "user":
        memory_cache.drop_user(org.id, user_id)
        # The client metadata of the user's Mem0 adds may name things too: it goes with the rest.
        from memory.models import Mem0AddEvent

        Mem0AddEvent.objects.filter(org=org, user_id=user_id).update(metadata={})
    if said_since:
        messages_extract(message_ids=sorted(said_since), reextract=True)
    request.status, request.executed_at, request.query = ForgetRequestStatus.EXECUTED, timezone.now(), ""
    request.result = {"memories_forgotten": len(forgotten), "messages_redacted": len(redacted),
                      "forgotten_memory_ids": sorted(forgotten), "redacted_message_ids": redacted,
                      "echoes_forgotten": len(echoes)}
    request.save(update_fields=["status", "executed_at", "query", "result"])
    counts = {"memories_forgotten": len(forgotten), "messages_redacted": len(redacted)}
    audit_record(org=org, actor=f"forget_request:{request.id}", actor_kind="system", action="forget.execute",
                 target_type="forget_request", target_id=str(request.id), detail=counts)
    logger.info("forget request executed id=%s result=%s", request.id, counts)
    return request


def org_purge(*, org: Org, actor: str) -> dict:
    """Remove an org and everything it owns: rows (cascade), vectors and cache entries."""
    ids = list(Memory.objects.filter(org=org).values_list("id", flat=True))
    users = set(Memory.objects.filter(org=org).values_list("user_id", flat=True))
    # Points go through the vector queue (whichever process owns the index). The rows are gone
    # first, so recall's MySQL back-check hides any point still waiting; reconcile deletes what a
    # lost task leaves.
    for start in range(0, len(ids), PURGE_CHUNK):
        chunk = ids[start:start + PURGE_CHUNK]
        transaction.on_commit(lambda chunk=chunk: enqueue(MEMORY_POINTS_DELETE, chunk), robust=True)
    for user_id in users:
        memory_cache.drop_user(org.id, user_id)
    counts = {"memories": len(ids), "conversations": conversation_count(org=org)}
    audit_record(org=org, actor=actor, actor_kind="operator", action="org.purge", target_type="org", target_id=str(org.id),
                 detail=counts)
    org.delete()
    return counts
