"""The Mem0 endpoints this service supports (docs/mem0.md). Thin: parse, resolve identity, call
the memory app's services and selectors, shape the answer as Mem0 does."""
import uuid
from datetime import datetime, time
from datetime import timezone as dt_timezone
from urllib.parse import urlencode

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max, Min
from django.http import Http404
from django.utils import timezone
from rest_framework import serializers as drf_serializers
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from common.actor import request_actor
from conversations.models import Conversation
from conversations.selectors import conversation_external_ids, messages_stored
from conversations.services import messages_append
from memory import selectors, services
from memory.choices import ForgetRequestStatus, MemoryAssertion, MemoryKind, MemoryStatus
from memory.mem0 import serializers as s
from memory.mem0.events import event_results, event_status
from memory.mem0.identity import HasApiKey, Mem0BadRequest, Mem0NotSupported, Mem0TokenAuthentication, acting_user, may_name_users, user_pin
from memory.mem0.scoping import ENTITY_KEYS, Filters, apply_filters, conversation_for, conversations_matching, parse_filters, parse_when
from memory.models import Mem0AddEvent, Memory
from memory.recall import RecallQuery, recall
from memory.selectors.memories import forget_rules_latest
from memory.selectors.supersede_chain import supersede_chain
from memory.services.forget import forget_request_create
from memory.services.mem0_events import mem0_add_event_create
from memory.services.memories import MemoryInput, SourceRef


def _flatten(detail, path: str = "") -> list[str]:
    if isinstance(detail, dict):  # list items' errors come keyed by their index
        return [m for key, value in detail.items()
                for m in _flatten(value, f"{path}[{key}]" if str(key).isdigit() else (f"{path}.{key}" if path else str(key)))]
    if isinstance(detail, list):
        if all(not isinstance(d, (dict, list)) for d in detail):
            return [f"{path}: {d}" if path else str(d) for d in detail]
        return [m for i, value in enumerate(detail) for m in _flatten(value, f"{path}[{i}]")]
    return [f"{path}: {detail}" if path else str(detail)]


class Mem0Api(APIView):
    authentication_classes = [Mem0TokenAuthentication]
    permission_classes = [HasApiKey]
    # Not in /api/schema/: these are Mem0's shapes, documented by Mem0 and in docs/mem0.md.
    schema = None

    @staticmethod
    def validated(serializer_class, data) -> dict:
        """The serializer's validated data; a 400 in Mem0's shape (handle_exception) when it is invalid."""
        serializer = serializer_class(data=data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def handle_exception(self, exc):
        # The Mem0 client shows `detail`: name the field there too, not only in a nested body.
        if isinstance(exc, drf_serializers.ValidationError):
            return Response({"detail": "; ".join(_flatten(exc.detail)), "errors": exc.detail}, status=400)
        return super().handle_exception(exc)


def _actor(request, user_id: str) -> str:
    return request_actor(request, protocol="mem0", user_id=user_id)


def _entity_filters(v: dict) -> Filters:
    """Entity ids given at the top level and inside `filters` (the client sends either)."""
    filters = parse_filters(v.get("filters"))
    return parse_filters({k: v[k] for k in ENTITY_KEYS if k in v}, where="", into=filters)


def _end_of(day) -> datetime | None:
    return datetime.combine(day, time.max, tzinfo=dt_timezone.utc) if day else None


def _conversation_keys(memories) -> dict[int, str]:
    ids = {m.conversation_id for m in memories if m.conversation_id}
    return conversation_external_ids(conversation_ids=ids) if ids else {}


def _results(memories, scores: dict[int, float] | None = None, presented: dict[int, str] | None = None) -> list[dict]:
    keys = _conversation_keys(memories)
    return [s.memory_data(m, conversation_key=keys.get(m.conversation_id), score=scores.get(m.id) if scores else None,
                          presented_as=presented.get(m.id) if presented else None) for m in memories]


class PingApi(Mem0Api):
    def get(self, request):
        # org_id/project_id let the client build its project URLs; those answer 501 (one project per org).
        return Response({"status": "ok", "message": "API key is valid.", "org_id": request.user.org.slug,
                         "project_id": "default", "user_email": None})


def _not_replayed(conversation: Conversation, user_id: str, messages: list[dict]) -> list[dict]:
    """Mem0 clients re-send conversation history. A message this conversation already held before the
    user's latest forget rule is that old message again, and a forget rule blocks re-extraction from
    messages that existed when it was made: it is not appended again, so a deleted memory does not
    come back from it. Any other message, a restatement included, is appended as usual (a statement
    the user makes after a forget is a new act)."""
    latest_rule = forget_rules_latest(org=conversation.org, user_id=user_id)
    if latest_rule is None:
        return messages
    stored = messages_stored(conversation=conversation, messages=messages)
    return [m for m in messages if not (stored.get((m["role"], m["content"])) and
                                        stored[(m["role"], m["content"])] < latest_rule)]


class AddApi(Mem0Api):
    def post(self, request):
        v = self.validated(s.AddInputSerializer, request.data)
        filters = _entity_filters(v)
        if filters.dates:
            raise Mem0BadRequest("filters: date bounds mean nothing for an add.")
        org = request.user.org
        user_id = acting_user(request.user, filters.user_id)
        at = datetime.fromtimestamp(v["timestamp"], tz=dt_timezone.utc) if "timestamp" in v else timezone.now()
        with transaction.atomic():  # the conversation, the event and its messages or memories: all or nothing
            conversation = conversation_for(org=org, user_id=user_id, agent_id=filters.agent_id, run_id=filters.run_id)
            event = mem0_add_event_create(org=org, user_id=user_id, conversation=conversation, infer=v["infer"],
                                          metadata=v.get("metadata") or {}, message_count=len(v["messages"]))
            if v["infer"]:
                fresh = _not_replayed(conversation, user_id, v["messages"])
                # The normal write path: append, then extraction on commit (forget rules, dedup, supersede, sources).
                if fresh:
                    messages_append(conversation=conversation, user_id=user_id, messages=[
                        {"role": m["role"], "content": m["content"], "occurred_at": at, "external_ref": event.ref}
                        for m in fresh])
            else:
                self._store_explicit(request, event, v, user_id, at)
        state, _ = event_status(event)
        return Response({"message": "Memory processing has been queued for background execution." if state != "SUCCEEDED"
                         else "Memories stored.", "status": state, "event_id": str(event.event_id),
                         "results": event_results(event) if state == "SUCCEEDED" else []})

    def _store_explicit(self, request, event: Mem0AddEvent, v: dict, user_id: str, at: datetime) -> None:
        """infer=False: each user/assistant message is stored as it is, through memory_write (so forget
        rules and dedup still apply). What the assistant said is a suggestion, never a user fact."""
        for i, message in enumerate(v["messages"]):
            if message["role"] not in ("user", "assistant") or not message["content"].strip():
                continue
            if len(message["content"]) > settings.MAX_MEMORY_CHARS:
                raise Mem0BadRequest(f"messages[{i}].content: at most {settings.MAX_MEMORY_CHARS} characters "
                                     "with infer=False (it is stored as one memory).")
            user = message["role"] == "user"
            services.memory_write(MemoryInput(
                org=event.org, user_id=user_id, kind=MemoryKind.FACT if user else MemoryKind.SUGGESTION,
                assertion=MemoryAssertion.USER_STATED if user else MemoryAssertion.MODEL_SUGGESTION, content=message["content"],
                conversation_id=event.conversation_id, valid_to=_end_of(v.get("expiration_date")), created_at=at,
                sources=[SourceRef(conversation_id=event.conversation_id, external_ref=event.ref)],
                created_by="api", actor=_actor(request, user_id), metadata=event.metadata))


class SearchApi(Mem0Api):
    def post(self, request):
        v = self.validated(s.SearchInputSerializer, request.data)
        filters = _entity_filters(v)
        org = request.user.org
        user_id = acting_user(request.user, filters.user_id, "filters.user_id")
        at = parse_when(v["reference_date"], "reference_date", end=True) if v.get("reference_date") is not None else None
        conversation_id = None
        if filters.scoped:
            ids = list(conversations_matching(org=org, user_id=user_id, filters=filters).values_list("id", flat=True)[:2])
            conversation_id = ids[0] if len(ids) == 1 else None  # makes that run's task-scoped memories eligible
        narrowed = filters.scoped or filters.dates or v.get("threshold") is not None
        result = recall(RecallQuery(
            org=org, user_id=user_id, query=v["query"], k=settings.MAX_RECALL_K if narrowed else v["top_k"], at=at,
            conversation_id=conversation_id, include_episodes=False))
        items = result.items
        if filters.scoped or filters.dates:
            keep = set(apply_filters(Memory.objects.filter(id__in=[i.memory.id for i in items]), org=org,
                                     user_id=user_id, filters=filters).values_list("id", flat=True))
            items = [i for i in items if i.memory.id in keep]
        if v.get("threshold") is not None:
            items = [i for i in items if i.score >= v["threshold"]]
        items = items[: v["top_k"]]
        return Response({"results": _results([i.memory for i in items], {i.memory.id: i.score for i in items},
                                             {i.memory.id: i.presented_as for i in items}),
                         "degraded": result.degraded})


class ListApi(Mem0Api):
    def post(self, request):
        p = self.validated(s.PageParamsSerializer, request.query_params)
        v = self.validated(s.ListInputSerializer, request.data)
        filters = parse_filters(v.get("filters"))
        if "start_date" in v:
            filters.dates.append(("created_at", "gte", parse_when(v["start_date"], "start_date")))
        if "end_date" in v:
            filters.dates.append(("created_at", "lte", parse_when(v["end_date"], "end_date", end=True)))
        org = request.user.org
        user_id = acting_user(request.user, filters.user_id, "filters.user_id")
        statuses = ([MemoryStatus.ACTIVE] + ([MemoryStatus.EXPIRED] if v["show_expired"] else [])
                    + ([] if v["latest_only"] else [MemoryStatus.SUPERSEDED]))
        qs = apply_filters(selectors.memory_list(org=org, user_id=user_id, statuses=statuses), org=org,
                           user_id=user_id, filters=filters).order_by("-created_at", "-id")
        count = qs.count()
        start = (p["page"] - 1) * p["page_size"]
        rows = list(qs[start:start + p["page_size"]])

        def link(n: int) -> str:
            return request.build_absolute_uri(f"{request.path}?{urlencode({'page': n, 'page_size': p['page_size']})}")
        return Response({"count": count, "next": link(p["page"] + 1) if start + len(rows) < count else None,
                         "previous": link(p["page"] - 1) if p["page"] > 1 else None, "results": _results(rows)})


def _load(request, memory_id: str, *, allow_superseded: bool = True) -> Memory:
    """404 alike for a malformed id, another org's, another user's (when pinned), a forgotten memory
    and an episode (episodes are not part of this surface)."""
    try:
        mid = int(memory_id)
    except ValueError:
        raise Http404
    if not 0 < mid < 2**63:
        raise Http404
    org = request.user.org
    owner = user_pin(request.user) or Memory.objects.filter(org=org, id=mid).values_list("user_id", flat=True).first()
    if owner is None:
        raise Http404
    memory = selectors.memory_get(org=org, user_id=owner, memory_id=mid)
    if (memory.kind == MemoryKind.EPISODE or memory.status == MemoryStatus.FORGOTTEN
            or (memory.status == MemoryStatus.SUPERSEDED and not allow_superseded)):
        raise Http404
    return memory


def _forget_answer(req, done: str) -> Response:
    if req.status == ForgetRequestStatus.EXECUTED:
        return Response({"message": done})
    return Response({"message": "Deletion is waiting for an operator's approval (this org reviews forget requests).",
                     "status": req.status, "forget_request_id": str(req.id)}, status=status.HTTP_202_ACCEPTED)


def _flag(value: str | None, name: str) -> bool:
    if value is None:
        return False
    if value.lower() in ("true", "1"):
        return True
    if value.lower() in ("false", "0"):
        return False
    raise Mem0BadRequest(f"{name}: must be true or false.")


class MemoryDetailApi(Mem0Api):
    def get(self, request, memory_id: str):
        return Response(_results([_load(request, memory_id)])[0])

    def put(self, request, memory_id: str):
        memory = _load(request, memory_id)
        v = self.validated(s.UpdateInputSerializer, request.data)
        if memory.status != MemoryStatus.ACTIVE:
            return Response({"detail": f"Memory is {memory.status}; only active memories can be updated."}, status=409)
        try:
            memory = _update(request, memory, v)
        except ValueError:  # lost a race with a supersede or forget
            return Response({"detail": "Memory is no longer active; only active memories can be updated."}, status=409)
        return Response({**_results([memory])[0], "message": "Memory updated successfully!"})

    def delete(self, request, memory_id: str):
        memory = _load(request, memory_id)
        ids = [memory.id]
        if _flag(request.query_params.get("delete_linked"), "delete_linked"):  # what it superseded, transitively
            ids += [m.id for m in supersede_chain(memory=memory, same_owner=True, newer=False).older]
        req = forget_request_create(org=memory.org, subject_user=memory.user_id, requested_by=_actor(request, memory.user_id),
                                    target="memory", memory_ids=ids, include_messages=False, via="api", execute_inline=True)
        return _forget_answer(req, "Memory deleted successfully!")


def _update(request, memory: Memory, v: dict) -> Memory:
    """`text` adds a content version; metadata and expiry alone change no content."""
    actor = _actor(request, memory.user_id)
    metadata = (v["metadata"] or {}) if "metadata" in v else None
    if "text" in v:
        memory = services.memory_update(memory_id=memory.id, content=v["text"], actor=actor, metadata=metadata)
        metadata = None
    if metadata is not None or "expiration_date" in v:
        memory = services.memory_annotate(memory_id=memory.id, actor=actor, metadata=metadata,
                                          valid_to=_end_of(v.get("expiration_date")),
                                          clear_valid_to="expiration_date" in v and v["expiration_date"] is None)
    return memory


class MemoryHistoryApi(Mem0Api):
    def get(self, request, memory_id: str):
        memory = _load(request, memory_id)
        return Response(s.history_data(memory, selectors.memory_history(memory=memory)))


def _forget_user(request, user_id: str) -> Response:
    req = forget_request_create(org=request.user.org, subject_user=user_id, requested_by=_actor(request, user_id),
                                target="user", include_messages=True, via="api", execute_inline=True)
    return _forget_answer(req, "Memories deleted successfully!")


class MemoriesApi(Mem0Api):
    """`/v1/memories/`: DELETE is delete_all(user_id=...); the v1 add and list live on /v3 now."""

    def delete(self, request):
        params = request.query_params
        unknown = sorted(set(params) - {"user_id", "agent_id", "run_id", "app_id"})
        if unknown:
            raise Mem0BadRequest(f"{unknown[0]}: not supported by delete_all (give user_id).")
        for name in ("agent_id", "run_id", "app_id"):
            if name in params:
                raise Mem0BadRequest(f"{name}: delete_all by {name} is not supported: forgetting is per memory or per "
                                     "user (give user_id only).")
        if "user_id" not in params:
            raise Mem0BadRequest("user_id: required. delete_all forgets one user's memories; deleting a whole org "
                                 "is an operator action in the console.")
        return _forget_user(request, acting_user(request.user, params["user_id"]))

    def get(self, request):
        raise Mem0NotSupported("GET /v1/memories/ (v1 get_all) is not supported: use POST /v3/memories/.")

    def post(self, request):
        raise Mem0NotSupported("POST /v1/memories/ (v1 add) is not supported: use POST /v3/memories/add/.")


class EntitiesApi(Mem0Api):
    """users(): the users of the org with memories (mem0_compat keys), or the header user."""

    def get(self, request):
        org = request.user.org
        qs = Memory.objects.filter(org=org, status=MemoryStatus.ACTIVE).exclude(kind=MemoryKind.EPISODE)
        if not may_name_users(request.user):
            qs = qs.filter(user_id=user_pin(request.user))
        rows = (qs.values("user_id").annotate(total=Count("id"), first=Min("created_at"), last=Max("updated_at"))
                .order_by("user_id"))
        results = [{"id": r["user_id"], "name": r["user_id"], "type": "user", "total_memories": r["total"],
                    "owner": request.auth.name, "organization": org.slug, "metadata": {},
                    "created_at": s._dt(r["first"]), "updated_at": s._dt(r["last"])} for r in rows]
        return Response({"count": len(results), "next": None, "previous": None, "results": results})


class EntityDeleteApi(Mem0Api):
    """delete_users(user_id=...): forget that user, as delete_all(user_id=...) does."""

    def delete(self, request, entity_type: str, name: str):
        if entity_type != "user":
            raise Mem0NotSupported(f"Deleting {entity_type} entities is not supported: only users own memories here.")
        return _forget_user(request, acting_user(request.user, name, "name"))


class EventApi(Mem0Api):
    def get(self, request, event_id: str):
        try:
            eid = uuid.UUID(event_id)
        except ValueError:
            raise Http404
        qs = Mem0AddEvent.objects.filter(event_id=eid, org=request.user.org)
        pin = user_pin(request.user)
        if pin is not None:
            qs = qs.filter(user_id=pin)
        event = qs.first()
        if event is None:
            raise Http404
        state, times = event_status(event)
        return Response({
            "id": str(event.event_id), "event_type": "ADD", "status": state,
            "payload": {"infer": event.infer, "messages": event.message_count, "user_id": event.user_id},
            "metadata": event.metadata or {}, "results": event_results(event) if state == "SUCCEEDED" else [],
            "created_at": s._dt(event.created_at), "updated_at": s._dt(times["completed_at"] or event.created_at),
            "started_at": s._dt(times["started_at"]), "completed_at": s._dt(times["completed_at"]),
            "latency": ((times["completed_at"] - event.created_at).total_seconds() * 1000) if times["completed_at"] else None,
        })
