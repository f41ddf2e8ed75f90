"""Possible conflicts of the acting user (GET /api/v1/conflicts, POST /api/v1/conflicts/{id}/resolve).

The same queue the console shows operators: two active standing memories the write path could not
tell apart on subject. Scoped to the acting user; another user's or org's conflict is a 404."""
from django.http import Http404
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from common.actor import request_actor
from memory.api.serializers import MemoryItemOutputSerializer
from memory.choices import ConflictStatus
from memory.models import MemoryConflict
from memory.selectors import conflict_list
from memory.services.conflicts import RESOLUTIONS, ConflictStateError, conflict_resolve
from tenancy.schema import CONFLICT

MAX_LIMIT = 500
STATUSES = ConflictStatus.values


class ConflictListParamsSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=STATUSES, default=ConflictStatus.OPEN)
    limit = serializers.IntegerField(min_value=1, max_value=MAX_LIMIT, default=100)


class ConflictResolveInputSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=RESOLUTIONS)


class ConflictMemorySerializer(MemoryItemOutputSerializer):
    status = serializers.CharField()
    created_at = serializers.DateTimeField()


class ConflictOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    score = serializers.FloatField()
    signals = serializers.JSONField()
    older = ConflictMemorySerializer()
    newer = ConflictMemorySerializer()
    created_at = serializers.DateTimeField()
    resolved_at = serializers.DateTimeField(allow_null=True)
    resolved_by = serializers.CharField()


class ConflictListOutputSerializer(serializers.Serializer):
    results = ConflictOutputSerializer(many=True)


class ConflictListApi(APIView):
    @extend_schema(parameters=[OpenApiParameter("status", str, enum=STATUSES, required=False),
                               OpenApiParameter("limit", int, required=False)],
                   responses=ConflictListOutputSerializer)
    def get(self, request):
        params = ConflictListParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        p = params.validated_data
        rows = conflict_list(org=request.user.org, user_id=request.user.user_id, status=p["status"])[: p["limit"]]
        return Response({"results": ConflictOutputSerializer(rows, many=True).data})


class ConflictResolveApi(APIView):
    @extend_schema(request=ConflictResolveInputSerializer, responses={200: ConflictOutputSerializer, 409: CONFLICT})
    def post(self, request, conflict_id: int):
        if not MemoryConflict.objects.filter(id=conflict_id, org=request.user.org,
                                             user_id=request.user.user_id).exists():
            raise Http404
        data = ConflictResolveInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            conflict = conflict_resolve(org=request.user.org, conflict_id=conflict_id, action=data.validated_data["action"],
                                        operator=request_actor(request), actor_kind="api")
        except ConflictStateError as exc:
            return Response({"detail": str(exc), "code": "conflict"}, status=409)
        conflict = MemoryConflict.objects.select_related("older", "newer").get(id=conflict.id)
        return Response(ConflictOutputSerializer(conflict).data)


urlpatterns = [
    path("conflicts", ConflictListApi.as_view(), name="conflict-list"),
    path("conflicts/<int:conflict_id>/resolve", ConflictResolveApi.as_view(), name="conflict-resolve"),
]
