"""The status of a Mem0 add (`GET /v1/event/{event_id}/`), read from the system of record.

An add's messages and explicit memories carry `external_ref = "mem0:<event_id>"`; extraction
copies it onto the sources of what it derives. So: every message extracted → SUCCEEDED, some →
RUNNING, none → PENDING; an add with infer=False commits its memories in the request and is
SUCCEEDED when it answers. A lost extraction task is queued again by the reconcile beat job, so
an event does not stay PENDING for good; nothing here is a second copy that could drift."""
from django.db.models import Max, Min

from conversations.selectors import messages_by_ref
from memory.choices import MemoryKind, MemoryStatus
from memory.models import Mem0AddEvent, Memory, MemorySource


def event_status(event: Mem0AddEvent) -> tuple[str, dict]:
    """(status, timings) of an add."""
    if not event.infer:
        return "SUCCEEDED", {"started_at": event.created_at, "completed_at": event.created_at}
    rows = messages_by_ref(org_id=event.org_id, conversation_id=event.conversation_id, external_ref=event.ref)
    total = rows.count()
    done = rows.filter(extracted_at__isnull=False)
    finished = done.count()
    bounds = done.aggregate(first=Min("extracted_at"), last=Max("extracted_at"))
    if finished == total:  # total 0: every message was a replay of one already stored
        return "SUCCEEDED", {"started_at": bounds["first"] or event.created_at,
                             "completed_at": bounds["last"] or event.created_at}
    return ("RUNNING" if finished else "PENDING"), {"started_at": bounds["first"], "completed_at": None}


def event_results(event: Mem0AddEvent) -> list[dict]:
    """What the add did to long-term memory: ADD for a memory it created (its first source is this
    add), NOOP for one it restated (a duplicate gains a source), each with the ids it superseded."""
    # By conversation first (an indexed foreign key); the ref then picks this add's sources.
    ids = set(MemorySource.objects.filter(conversation_id=event.conversation_id, external_ref=event.ref,
                                          memory__org_id=event.org_id, memory__user_id=event.user_id)
              .exclude(memory__kind=MemoryKind.EPISODE).values_list("memory_id", flat=True))
    firsts = dict(MemorySource.objects.filter(memory_id__in=ids).values("memory_id").annotate(first=Min("id"))
                  .values_list("memory_id", "first"))
    first_refs = dict(MemorySource.objects.filter(id__in=firsts.values()).values_list("id", "external_ref"))
    memories = Memory.objects.filter(id__in=ids).exclude(status=MemoryStatus.FORGOTTEN).order_by("id")
    superseded: dict[int, list[str]] = {}
    for old_id, new_id in Memory.objects.filter(superseded_by_id__in=ids).values_list("id", "superseded_by_id"):
        superseded.setdefault(new_id, []).append(str(old_id))
    return [{"id": str(m.id), "event": "ADD" if first_refs.get(firsts.get(m.id)) == event.ref else "NOOP",
             "data": {"memory": m.content}, "status": m.status, "supersedes": superseded.get(m.id, [])}
            for m in memories]
