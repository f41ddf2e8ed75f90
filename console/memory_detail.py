"""Read-only queries behind the memory page of the console: the diff between versions, the
supersede chain, every version (content versions and the state changes that bumped the version),
how the memory ended (which forget request, rule, supersede or invalidation, by whom and when), and
the forget requests that cover it (by foreign key, by matched id, or as a whole-user request).
"""
import difflib
import re
from collections import defaultdict

from django.db.models import CharField, Q, QuerySet
from django.db.models.functions import Cast

from memory.choices import MemoryStatus
from memory.models import ForgetRequest, ForgetRule, Memory, MemoryConflict, MemorySource, MemoryVersion
from memory.selectors.supersede_chain import supersede_chain as memory_supersede_chain
from tenancy.models import AuditEvent

CHAIN_LIMIT = 100  # supersede chains longer than this are cut (and flagged) rather than walked forever
# Audit actions that end a memory (status leaves active and the version is bumped without new content).
END_ACTIONS = {"memory.supersede": "SUPERSEDE", "memory.forget": "FORGET", "memory.invalidated": "INVALIDATE",
               "memory.expired": "EXPIRE"}
_ACTOR_REF = re.compile(r"^(forget_request|forget_rule):(\d+)$")


_TOKEN = re.compile(r"[A-Za-z0-9_]+|\s+|.", re.S)  # Latin words whole, every CJK character on its own


def version_diff(old: str, new: str) -> list[tuple[str, str]]:
    """(op, text) segments, op in equal/delete/insert. Rendered by the template, which escapes the text.

    Whitespace alone between two changes is folded into them, so "natural gas" → "propane" reads as one
    replacement instead of alternating word-by-word fragments."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    raw = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            raw.append(("equal", "".join(b[j1:j2])))
            continue
        if i2 > i1:
            raw.append(("delete", "".join(a[i1:i2])))
        if j2 > j1:
            raw.append(("insert", "".join(b[j1:j2])))
    segments: list[tuple[str, str]] = []
    deleted, inserted = [], []

    def flush():
        if deleted:
            segments.append(("delete", "".join(deleted)))
        if inserted:
            segments.append(("insert", "".join(inserted)))
        deleted.clear()
        inserted.clear()

    for n, (op, text) in enumerate(raw):
        between_changes = (deleted or inserted) and n + 1 < len(raw) and raw[n + 1][0] != "equal"
        if op == "equal" and text.isspace() and between_changes:
            deleted.append(text)
            inserted.append(text)
        elif op == "equal":
            flush()
            segments.append((op, text))
        else:
            (deleted if op == "delete" else inserted).append(text)
    flush()
    return segments


def supersede_chain(memory: Memory) -> dict:
    """What this memory replaced and what replaced it, for the provenance page (older in creation order)."""
    chain = memory_supersede_chain(memory=memory, limit=CHAIN_LIMIT)
    older = sorted(chain.older, key=lambda m: (m.created_at, m.id))
    return {"older": older, "newer": chain.newer, "cycle": chain.cycle, "cut": chain.cut}


def _end_events(memory: Memory) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(target_type="memory", target_id=str(memory.id), action__in=END_ACTIONS)
                .order_by("at", "id"))


def _actor_ref(actor: str) -> tuple[str, int] | None:
    match = _ACTOR_REF.match(actor or "")
    return (match.group(1), int(match.group(2))) if match else None


def versions_with_diffs(memory: Memory, events: list[AuditEvent] | None = None) -> list[dict]:
    """Every version 1..memory.version, newest first. Content versions are MemoryVersion rows; the
    other versions are state changes (supersede, forget, invalidate, expire) that bump the version
    for the projections without new content, explained by their audit events."""
    sources = defaultdict(list)
    for source in MemorySource.objects.filter(memory=memory).select_related("message", "conversation").order_by("id"):
        sources[source.version_id].append(source)
    rows, previous = [], None
    for version in MemoryVersion.objects.filter(memory=memory).order_by("n"):
        diff = None
        if previous is not None and not (version.redacted or previous.redacted):
            diff = version_diff(previous.content, version.content)
        rows.append({"n": version.n, "version": version, "reason": version.reason, "diff": diff,
                     "sources": sources.get(version.id, []),
                     "unchanged": diff is not None and previous.content == version.content})
        previous = version
    events = _end_events(memory) if events is None else events
    taken = {row["n"] for row in rows}
    pending = []
    for event in events:
        n = event.detail.get("version") if isinstance(event.detail, dict) else None
        if isinstance(n, int) and n not in taken and n <= memory.version:
            taken.add(n)
            rows.append(_state_row(n, event))
        else:
            pending.append(event)
    free = (n for n in range(1, memory.version + 1) if n not in taken)
    for event in pending:  # events written without a version (older code): in time order, to the free numbers
        n = next(free, None)
        if n is None:
            break
        taken.add(n)
        rows.append(_state_row(n, event))
    for n in free:  # bumped without an audit event (rows loaded in bulk, or before auditing existed)
        rows.append({"n": n, "state": True, "reason": "STATE", "by": "", "at": None,
                     "change": "state change without an audit event", "event": None})
    rows.sort(key=lambda row: row["n"])
    return list(reversed(rows))  # newest first


def _state_row(n: int, event: AuditEvent) -> dict:
    detail = event.detail if isinstance(event.detail, dict) else {}
    change = {"memory.supersede": "superseded", "memory.forget": "forgotten (every version redacted)",
              "memory.invalidated": f"invalidated ({detail.get('reason', '')})".replace(" ()", ""),
              "memory.expired": "expired"}[event.action]
    return {"n": n, "state": True, "reason": END_ACTIONS[event.action], "by": event.actor, "at": event.at,
            "change": change, "event": event, "superseded_by": detail.get("superseded_by"),
            "conflict": detail.get("conflict"), "ref": _actor_ref(event.actor)}


def memory_end(memory: Memory, events: list[AuditEvent] | None = None) -> dict | None:
    """How a memory that is no longer active ended: the cause, who did it and when. None while active."""
    if memory.status == MemoryStatus.ACTIVE:
        return None
    events = _end_events(memory) if events is None else events
    event = next((e for e in reversed(events) if END_ACTIONS[e.action] ==
                  {MemoryStatus.SUPERSEDED: "SUPERSEDE", MemoryStatus.FORGOTTEN: "FORGET",
                   MemoryStatus.INVALIDATED: "INVALIDATE", MemoryStatus.EXPIRED: "EXPIRE"}.get(memory.status)), None)
    end = {"status": memory.status, "event": event, "by": event.actor if event else "", "by_kind": event.actor_kind if event else "",
           "at": event.at if event else (memory.invalidated_at or memory.updated_at), "request": None, "rules": 0,
           "superseded_by": memory.superseded_by, "conflict": None, "reason": memory.invalid_reason}
    ref = _actor_ref(event.actor) if event else None
    if memory.status == MemoryStatus.FORGOTTEN:
        if ref and ref[0] == "forget_request":
            end["request"] = ForgetRequest.objects.filter(id=ref[1], org_id=memory.org_id).first()
        if end["request"] is not None:
            end["cause"] = f"forget request {end['request'].id}"
            end["rules"] = ForgetRule.objects.filter(request=end["request"], user_id=memory.user_id).count()
        elif ref and ref[0] == "forget_rule":
            end["cause"], end["rule_id"] = f"forget rule {ref[1]}", ref[1]
        else:
            end["cause"] = "forgotten without a request"
    elif memory.status == MemoryStatus.SUPERSEDED:
        conflict_id = (event.detail or {}).get("conflict") if event else None
        end["conflict"] = MemoryConflict.objects.filter(id=conflict_id).first() if conflict_id else None
        end["cause"] = (f"supersede, resolving conflict {conflict_id}" if conflict_id else "supersede by a newer memory")
    elif memory.status == MemoryStatus.EXPIRED:
        end["cause"] = "expiry rule: its validity ended" + (f" ({memory.valid_to:%Y-%m-%d %H:%M} UTC)" if memory.valid_to else "")
    elif memory.invalid_reason == "evicted":
        end["cause"] = "eviction rule: the user was above their memory capacity and this one had the lowest value"
    else:
        end["cause"] = f"invalidation ({memory.invalid_reason or 'no reason given'})"
    return end


def forget_requests_matching(memory_id: int, queryset: QuerySet[ForgetRequest] | None = None) -> QuerySet[ForgetRequest]:
    """Requests naming the memory: its foreign key (the first memory of a request) or any of the matched
    ids. matched_ids is a JSON list; a digit-bounded regex over its text works on MySQL and SQLite alike
    (JSON `contains` does not exist on SQLite). The request table is small and rarely searched."""
    queryset = ForgetRequest.objects.all() if queryset is None else queryset
    pattern = rf"(^|[^0-9]){int(memory_id)}([^0-9]|$)"
    return queryset.annotate(matched_text=Cast("matched_ids", CharField())).filter(
        Q(memory_id=memory_id) | Q(matched_text__regex=pattern))


def forget_requests_for(memory: Memory) -> QuerySet[ForgetRequest]:
    """Every request that covers the memory: by id, or a "forget everything about this user" request."""
    by_id = forget_requests_matching(memory.id, ForgetRequest.objects.filter(org_id=memory.org_id)).values("id")
    whole_user = (Q(org_id=memory.org_id, target="user", subject_user=memory.user_id)
                  & (Q(executed_at__isnull=True) | Q(executed_at__gte=memory.created_at)))
    return ForgetRequest.objects.filter(Q(id__in=by_id) | whole_user).order_by("-created_at", "-id")
