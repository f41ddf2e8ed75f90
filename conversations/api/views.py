from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from common.actor import request_actor
from conversations import selectors, services
from conversations.api import serializers as s
from tenancy.api import SeqCursorPagination
from tenancy.idempotency import idempotent
from tenancy.schema import CONFLICT, IDEMPOTENCY_KEY


def _conflict(exc: services.Conflict) -> Response:
    return Response({"detail": str(exc), "code": "conflict"}, status=status.HTTP_409_CONFLICT)


def _messages_append(request, conversation_id: int, *, batch: bool) -> Response:
    """POST one message, or a batch (all stored or none), once per idempotency key: 201 with what was stored."""
    conversation = selectors.conversation_get(org=request.user.org, user_id=request.user.user_id,
                                              conversation_id=conversation_id)

    def append() -> Response:
        data = (s.MessageBatchInputSerializer if batch else s.MessageInputSerializer)(data=request.data)
        data.is_valid(raise_exception=True)
        messages = services.messages_append(conversation=conversation, user_id=request.user.user_id,
                                            messages=data.validated_data["messages"] if batch else [data.validated_data])
        if batch:
            return Response(s.MessageOutputSerializer(messages, many=True).data, status=status.HTTP_201_CREATED)
        [message] = messages
        return Response(s.MessageOutputSerializer(message).data, status=status.HTTP_201_CREATED)

    return idempotent(request, append)


class ConversationListCreateApi(APIView):
    pagination_class = SeqCursorPagination  # read by drf-spectacular: GET documents the {next, previous, results} page

    @extend_schema(
        parameters=[OpenApiParameter("external_id", str, required=False), OpenApiParameter("cursor", str, required=False),
                    OpenApiParameter("limit", int, required=False)],
        responses=s.ConversationOutputSerializer(many=True),
    )
    def get(self, request):
        params = s.ConversationListParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        qs = selectors.conversation_list(org=request.user.org, user_id=request.user.user_id)
        external_id = params.validated_data.get("external_id")
        if external_id:
            qs = qs.filter(external_id=external_id)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(qs.order_by("id"), request, view=self)
        return paginator.get_paginated_response(s.ConversationOutputSerializer(page, many=True).data)

    @extend_schema(request=s.ConversationCreateInputSerializer, responses={201: s.ConversationOutputSerializer,
                                                                           200: s.ConversationOutputSerializer,
                                                                           409: CONFLICT})
    def post(self, request):
        data = s.ConversationCreateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            conversation, created = services.conversation_create(
                org=request.user.org, owner_user=request.user.user_id, **data.validated_data)
        except services.Conflict as exc:
            return _conflict(exc)
        return Response(s.ConversationOutputSerializer(conversation).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class ConversationDetailApi(APIView):
    @extend_schema(responses=s.ConversationOutputSerializer)
    def get(self, request, conversation_id: int):
        conversation = selectors.conversation_get(org=request.user.org, user_id=request.user.user_id,
                                                  conversation_id=conversation_id)
        return Response(s.ConversationOutputSerializer(conversation).data)


class ConversationAccessApi(APIView):
    """The owner grants or revokes another user's (or their own) read access."""

    grant: bool = True

    @extend_schema(request=s.AccessInputSerializer, responses={204: None})
    def post(self, request, conversation_id: int):
        conversation = selectors.conversation_owned(org=request.user.org, user_id=request.user.user_id,
                                                    conversation_id=conversation_id)
        data = s.AccessInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.conversation_access_set(conversation=conversation, user_id=data.validated_data["user"],
                                         granted=self.grant, actor=request_actor(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ConversationGrantApi(ConversationAccessApi):
    grant = True


class ConversationRevokeApi(ConversationAccessApi):
    grant = False


class MessageListCreateApi(APIView):
    pagination_class = SeqCursorPagination  # read by drf-spectacular: GET documents the {next, previous, results} page

    @extend_schema(parameters=[OpenApiParameter("cursor", str, required=False), OpenApiParameter("limit", int, required=False)],
                   responses=s.MessageOutputSerializer(many=True))
    def get(self, request, conversation_id: int):
        conversation = selectors.conversation_get(org=request.user.org, user_id=request.user.user_id,
                                                  conversation_id=conversation_id)
        paginator = self.pagination_class()
        paginator.ordering = "seq"
        page = paginator.paginate_queryset(selectors.message_list(conversation=conversation), request, view=self)
        return paginator.get_paginated_response(s.MessageOutputSerializer(page, many=True).data)

    @extend_schema(request=s.MessageInputSerializer, responses={201: s.MessageOutputSerializer},
                   parameters=[IDEMPOTENCY_KEY])
    def post(self, request, conversation_id: int):
        return _messages_append(request, conversation_id, batch=False)


class MessageBatchCreateApi(APIView):
    @extend_schema(request=s.MessageBatchInputSerializer, responses={201: s.MessageOutputSerializer(many=True)},
                   description=f"Append up to MAX_BATCH_MESSAGES (default {settings.MAX_BATCH_MESSAGES}) messages "
                               "atomically: all are stored or none.", parameters=[IDEMPOTENCY_KEY])
    def post(self, request, conversation_id: int):
        return _messages_append(request, conversation_id, batch=True)


class MessageDetailApi(APIView):
    @extend_schema(responses=s.MessageOutputSerializer)
    def get(self, request, conversation_id: int, message_id: int):
        conversation = selectors.conversation_get(org=request.user.org, user_id=request.user.user_id,
                                                  conversation_id=conversation_id)
        return Response(s.MessageOutputSerializer(selectors.message_get(conversation=conversation,
                                                                        message_id=message_id)).data)


class TaskStateListApi(APIView):
    @extend_schema(responses=s.TaskStateOutputSerializer(many=True))
    def get(self, request, conversation_id: int):
        conversation = selectors.conversation_get(org=request.user.org, user_id=request.user.user_id,
                                                  conversation_id=conversation_id)
        tasks = selectors.task_state_list(conversation=conversation)[: settings.MAX_PAGE_SIZE]
        return Response(s.TaskStateOutputSerializer(tasks, many=True).data)


class TaskStateDetailApi(APIView):
    @extend_schema(responses=s.TaskStateOutputSerializer)
    def get(self, request, conversation_id: int, key: str):
        conversation = selectors.conversation_get(org=request.user.org, user_id=request.user.user_id,
                                                  conversation_id=conversation_id)
        return Response(s.TaskStateOutputSerializer(selectors.task_state_get(conversation=conversation, key=key)).data)

    @extend_schema(request=s.TaskStatePutInputSerializer, responses={200: s.TaskStateOutputSerializer,
                                                                     201: s.TaskStateOutputSerializer,
                                                                     409: CONFLICT})
    def put(self, request, conversation_id: int, key: str):
        conversation = selectors.conversation_get(org=request.user.org, user_id=request.user.user_id,
                                                  conversation_id=conversation_id)
        if len(key) > 200:
            raise ValidationError({"key": ["At most 200 characters."]})
        data = s.TaskStatePutInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            task, created = services.task_state_put(conversation=conversation, key=key, user_id=request.user.user_id,
                                                    **data.validated_data)
        except services.Conflict as exc:
            return _conflict(exc)
        return Response(s.TaskStateOutputSerializer(task).data, status=201 if created else 200)
