import time

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from common import server_timing
from common.actor import request_actor
from conversations.selectors import conversation_get, message_in_org
from entities.selectors import entity_ids_from_refs
from memory import selectors, services
from memory.api import serializers as s
from memory.api.presenters import context_data, context_request, recall_body
from memory.choices import MemoryStatus
from memory.recall import RecallQuery, recall
from memory.services.memories import MemoryInput, SourceRef
from tenancy.api import SeqCursorPagination
from tenancy.idempotency import idempotent
from tenancy.schema import CONFLICT, IDEMPOTENCY_KEY


def _entity_ids(request, refs: list[str], field: str = "entities") -> list[int]:
    ids, unknown = entity_ids_from_refs(org=request.user.org, refs=refs)
    if unknown:
        raise ValidationError({field: [f"Unknown entity: {ref}" for ref in unknown]})
    return ids


class MemoryListCreateApi(APIView):
    pagination_class = SeqCursorPagination  # read by drf-spectacular: GET documents the {next, previous, results} page

    @extend_schema(parameters=[
        OpenApiParameter("kind", str, many=True, required=False), OpenApiParameter("status", str, many=True, required=False),
        OpenApiParameter("entity", str, required=False), OpenApiParameter("created_after", str, required=False),
        OpenApiParameter("created_before", str, required=False), OpenApiParameter("include_episodes", bool, required=False),
        OpenApiParameter("cursor", str, required=False), OpenApiParameter("limit", int, required=False)],
        responses=s.MemoryOutputSerializer(many=True))
    def get(self, request):
        params = s.MemoryListParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        p = params.validated_data
        entity_id = _entity_ids(request, [p["entity"]], "entity")[0] if p.get("entity") else None
        qs = selectors.memory_list(org=request.user.org, user_id=request.user.user_id, kinds=p.get("kind"),
                                   statuses=p.get("status"), entity_id=entity_id, created_after=p.get("created_after"),
                                   created_before=p.get("created_before"), include_episodes=p.get("include_episodes", False))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(qs.order_by("id"), request, view=self)
        return paginator.get_paginated_response(s.MemoryOutputSerializer(page, many=True).data)

    @extend_schema(request=s.MemoryCreateInputSerializer, responses={201: s.MemoryWriteOutputSerializer,
                                                                     200: s.MemoryWriteOutputSerializer},
                   parameters=[IDEMPOTENCY_KEY])
    def post(self, request):
        return idempotent(request, lambda: self._create(request))

    def _create(self, request) -> Response:
        data = s.MemoryCreateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        org, user_id = request.user.org, request.user.user_id
        sources = []
        for src in v["sources"]:
            message_id, conversation_id = src.get("message_id"), None
            if message_id:
                message = message_in_org(org=org, message_id=message_id)
                if message is None:
                    raise ValidationError({"sources": [f"Unknown message {message_id}."]})
                conversation_get(org=org, user_id=user_id, conversation_id=message.conversation_id)  # readable?
                conversation_id = message.conversation_id
            sources.append(SourceRef(message_id=message_id, conversation_id=conversation_id, external_ref=src.get("ref")))
        outcome = services.memory_create(MemoryInput(
            org=org, user_id=user_id, kind=v["kind"], content=v["content"], assertion=v["assertion"],
            slot_key=v.get("key"), importance=v["importance"], valid_from=v.get("valid_from"), valid_to=v.get("valid_to"),
            occurred_at=v.get("occurred_at"), created_at=v.get("at"), entity_ids=_entity_ids(request, v["entities"]),
            sources=sources, created_by="api", actor=request_actor(request),
        ))
        body = {"action": outcome.action, "memory": s.MemoryOutputSerializer(outcome.memory).data if outcome.memory else None,
                "superseded": outcome.superseded}
        return Response(body, status=status.HTTP_201_CREATED if outcome.action in ("added", "superseded") else status.HTTP_200_OK)


class MemoryDetailApi(APIView):
    @extend_schema(responses=s.MemoryOutputSerializer)
    def get(self, request, memory_id: int):
        memory = selectors.memory_get(org=request.user.org, user_id=request.user.user_id, memory_id=memory_id)
        return Response(s.MemoryOutputSerializer(memory).data)

    @extend_schema(request=s.MemoryUpdateInputSerializer, responses={200: s.MemoryOutputSerializer, 409: CONFLICT},
                   parameters=[IDEMPOTENCY_KEY])
    def patch(self, request, memory_id: int):
        memory = selectors.memory_get(org=request.user.org, user_id=request.user.user_id, memory_id=memory_id)
        return idempotent(request, lambda: self._update(request, memory))

    def _update(self, request, memory) -> Response:
        data = s.MemoryUpdateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        if memory.status != MemoryStatus.ACTIVE:
            return Response({"detail": f"Memory is {memory.status}; only active memories can be updated.",
                             "code": "conflict"}, status=409)
        changes = {k: v for k, v in data.validated_data.items() if v is not None}
        if "content" in changes:
            memory = services.memory_update(memory_id=memory.id, actor=request_actor(request), **changes)
        else:  # what is said about the memory, not what it says: no new content version
            memory = services.memory_annotate(memory_id=memory.id, actor=request_actor(request), **changes)
        return Response(s.MemoryOutputSerializer(memory).data)


class MemoryHistoryApi(APIView):
    @extend_schema(responses=s.MemoryHistoryOutputSerializer)
    def get(self, request, memory_id: int):
        memory = selectors.memory_get(org=request.user.org, user_id=request.user.user_id, memory_id=memory_id)
        versions = selectors.memory_history(memory=memory)
        chain = {"supersedes": list(memory.supersedes.values_list("id", flat=True)), "superseded_by": memory.superseded_by_id}
        return Response({"memory": s.MemoryOutputSerializer(memory).data, "chain": chain,
                         "versions": s.MemoryVersionOutputSerializer(versions, many=True).data})


class MemoryInvalidateApi(APIView):
    @extend_schema(request=s.MemoryInvalidateInputSerializer, responses={200: s.MemoryOutputSerializer, 409: CONFLICT})
    def post(self, request, memory_id: int):
        memory = selectors.memory_get(org=request.user.org, user_id=request.user.user_id, memory_id=memory_id)
        data = s.MemoryInvalidateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        if memory.status not in (MemoryStatus.ACTIVE, MemoryStatus.INVALIDATED):
            return Response({"detail": f"Memory is {memory.status}.", "code": "conflict"}, status=409)
        memory = services.memory_invalidate(memory_id=memory.id, reason=data.validated_data["reason"], actor=request_actor(request))
        return Response(s.MemoryOutputSerializer(memory).data)


class RecallApi(APIView):
    @extend_schema(request=s.RecallInputSerializer, responses=s.RecallOutputSerializer)
    def post(self, request):
        server_timing.since_start("pre_view")  # middleware, authentication, throttling
        started = time.perf_counter()
        data = s.RecallInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        org, user_id = request.user.org, request.user.user_id
        conversation_id = v.get("conversation_id")
        if conversation_id is not None:
            try:
                conversation_get(org=org, user_id=user_id, conversation_id=conversation_id)
            except Http404:
                raise ValidationError({"conversation_id": ["Unknown conversation."]})
        result = recall(RecallQuery(
            org=org, user_id=user_id, query=v["query"], k=v["k"], kinds=v.get("kinds"),
            entity_ids=_entity_ids(request, v["entities"]), at=v.get("at"), conversation_id=conversation_id,
            include_episodes=v["include_episodes"], explain=v["explain"]))
        body = recall_body(result, explain=v["explain"])
        server_timing.add("view", (time.perf_counter() - started) * 1000)
        for stage, ms in result.timings_ms.items():  # recall's own timings (total, embed, vector, ...)
            server_timing.add(f"recall_{stage}", ms)
        return Response(body)


class ContextApi(APIView):
    @extend_schema(request=s.ContextInputSerializer, responses=s.ContextOutputSerializer)
    def post(self, request, conversation_id: int):
        from memory.context import ContextBudgetError, assemble_context

        server_timing.since_start("pre_view")
        started = time.perf_counter()
        conversation = conversation_get(org=request.user.org, user_id=request.user.user_id, conversation_id=conversation_id)
        data = s.ContextInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            result = assemble_context(context_request(org=request.user.org, user_id=request.user.user_id,
                                                      conversation=conversation, v=data.validated_data))
        except ContextBudgetError as exc:
            raise ValidationError({exc.field: [str(exc)]}) from None
        body = context_data(result)
        server_timing.add("view", (time.perf_counter() - started) * 1000)
        return Response(body)


class ConversationReextractApi(APIView):
    """Maintenance: run extraction again over every message of a conversation (forget rules apply)."""

    @extend_schema(request=None, responses={202: dict})
    def post(self, request, conversation_id: int):
        from memory.services.extraction import conversation_reextract

        conversation = conversation_get(org=request.user.org, user_id=request.user.user_id, conversation_id=conversation_id)
        return Response(conversation_reextract(conversation_id=conversation.id), status=202)


def _forget_request_data(req) -> dict:
    return {"id": req.id, "target": req.target, "status": req.status, "memory_count": len(req.matched_ids),
            "result": req.result, "created_at": req.created_at, "executed_at": req.executed_at}


class ForgetPreviewApi(APIView):
    @extend_schema(request=s.ForgetPreviewInputSerializer, responses={200: dict})
    def post(self, request):
        from memory.services.forget import forget_preview

        data = s.ForgetPreviewInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        from memory.services.forget_echoes import forget_echoes

        org, user_id = request.user.org, request.user.user_id
        matches = forget_preview(org=org, user_id=user_id, query=data.validated_data["query"])
        echoes = forget_echoes(org_id=org.id, user_id=user_id, memory_ids=[m.id for m, _ in matches])
        return Response({"matches": [{"id": m.id, "kind": m.kind, "content": m.content, "created_at": m.created_at,
                                      "relevance": round(score, 4)} for m, score in matches],
                         # Removed with the matches when the request executes: episodes restating them.
                         "echoes": [{"id": e.memory.id, "kind": e.memory.kind, "content": e.memory.content,
                                     "created_at": e.memory.created_at, "why": e.why, "echo_of": e.of,
                                     "score": e.score} for e in echoes]})


class ForgetApi(APIView):
    @extend_schema(request=s.ForgetInputSerializer, responses={201: s.ForgetRequestOutputSerializer})
    def post(self, request):
        from memory.services.forget import forget_request_for_caller

        data = s.ForgetInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        org, user_id = request.user.org, request.user.user_id
        owned = set(selectors.memory_list(org=org, user_id=user_id, statuses=MemoryStatus.values, include_episodes=True)
                    .filter(id__in=v["memory_ids"]).values_list("id", flat=True))
        missing = sorted(set(v["memory_ids"]) - owned)
        if missing:
            raise ValidationError({"memory_ids": [f"Unknown memory {i}." for i in missing]})
        req = forget_request_for_caller(org=org, user_id=user_id, requested_by=request_actor(request),
                                        memory_ids=sorted(owned), query=v["query"], everything=v["everything"],
                                        include_messages=v["include_messages"])
        req.refresh_from_db()
        return Response(_forget_request_data(req), status=status.HTTP_201_CREATED)


class ForgetRequestDetailApi(APIView):
    @extend_schema(responses=s.ForgetRequestOutputSerializer)
    def get(self, request, request_id: int):
        from memory.models import ForgetRequest

        req = ForgetRequest.objects.filter(id=request_id, org=request.user.org, subject_user=request.user.user_id).first()
        if req is None:
            raise Http404
        return Response(_forget_request_data(req))
