from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import status
from rest_framework.fields import IntegerField
from rest_framework.response import Response
from rest_framework.views import APIView

from common.actor import request_actor
from entities import relations, selectors, services
from entities.api import serializers as s
from entities.models import EntityRelation
from entities.policy import get_access_policy
from tenancy.api import SeqCursorPagination


def _visible_entity(request, type: str, external_id: str):
    entity = selectors.entity_get(org=request.user.org, type=type, external_id=external_id)
    # The policy decides whatever `active` says: deactivating a restricted entity must not publish its
    # name and attributes to the whole org. The HTTP policy only answers for active entities, so
    # there a deactivated one is hidden from everyone (fails closed).
    allowed = get_access_policy().allowed_ids(org_id=request.user.org.id, user_id=request.user.user_id, entity_ids={entity.id})
    if entity.id not in allowed:
        raise Http404
    return entity


class EntityListUpsertApi(APIView):
    pagination_class = SeqCursorPagination  # read by drf-spectacular: GET documents the {next, previous, results} page

    @extend_schema(parameters=[OpenApiParameter("type", str, required=False), OpenApiParameter("search", str, required=False),
                               OpenApiParameter("include_inactive", bool, required=False),
                               OpenApiParameter("cursor", str, required=False), OpenApiParameter("limit", int, required=False)],
                   responses=s.EntityOutputSerializer(many=True))
    def get(self, request):
        params = s.EntityListParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        qs = selectors.entity_list(org=request.user.org, **{k: v for k, v in params.validated_data.items()
                                                            if k in ("type", "search", "include_inactive")})
        qs = qs.filter(get_access_policy().visible_q(user_id=request.user.user_id))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(qs.order_by("id"), request, view=self)
        return paginator.get_paginated_response(s.EntityOutputSerializer(page, many=True).data)

    @extend_schema(request=s.EntityInputSerializer, responses={201: s.EntityOutputSerializer, 200: s.EntityOutputSerializer})
    def post(self, request):
        data = s.EntityInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        entity, created = services.entity_upsert(org=request.user.org, actor=request_actor(request), **data.validated_data)
        return Response(s.EntityOutputSerializer(entity).data, status=201 if created else 200)


class EntityBulkUpsertApi(APIView):
    @extend_schema(request=s.EntityBulkInputSerializer, responses={201: s.EntityOutputSerializer(many=True)})
    def post(self, request):
        data = s.EntityBulkInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        rows = services.entities_bulk_upsert(org=request.user.org, items=data.validated_data["entities"], actor=request_actor(request))
        return Response(s.EntityOutputSerializer([e for e, _ in rows], many=True).data, status=status.HTTP_201_CREATED)


class EntityDetailApi(APIView):
    @extend_schema(responses=s.EntityOutputSerializer)
    def get(self, request, type: str, external_id: str):
        return Response(s.EntityOutputSerializer(_visible_entity(request, type, external_id)).data)


class EntityDeactivateApi(APIView):
    @extend_schema(request=None, responses=s.EntityOutputSerializer)
    def post(self, request, type: str, external_id: str):
        entity = services.entity_deactivate(entity=_visible_entity(request, type, external_id), actor=request_actor(request))
        return Response(s.EntityOutputSerializer(entity).data)


class EntityAccessApi(APIView):
    grant = True

    @extend_schema(request=s.EntityAccessInputSerializer, responses={204: None})
    def post(self, request, type: str, external_id: str):
        # The registry is managed by the business service's key; any key of the org may change grants.
        entity = selectors.entity_get(org=request.user.org, type=type, external_id=external_id)
        data = s.EntityAccessInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.entity_access_set(entity=entity, user_id=data.validated_data["user"], granted=self.grant, actor=request_actor(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class EntityGrantApi(EntityAccessApi):
    grant = True


class EntityRevokeApi(EntityAccessApi):
    grant = False


# ------------------------------------------------------------------ relations
def _relation_error(exc: relations.RelationError) -> Response:
    return Response({exc.field: [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)


class RelationUpsertApi(APIView):
    @extend_schema(request=s.RelationInputSerializer, responses={201: s.RelationOutputSerializer, 200: s.RelationOutputSerializer})
    def post(self, request):
        data = s.RelationInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            result = relations.relation_upsert(org=request.user.org, actor=request_actor(request), **data.validated_data)
        except relations.RelationError as exc:
            return _relation_error(exc)
        return Response(s.RelationOutputSerializer(result.relation).data, status=201 if result.created else 200)


class RelationBulkUpsertApi(APIView):
    @extend_schema(request=s.RelationBulkInputSerializer, responses={201: s.RelationOutputSerializer(many=True)})
    def post(self, request):
        data = s.RelationBulkInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            rows = relations.relations_bulk_upsert(org=request.user.org, items=data.validated_data["relations"],
                                                   actor=request_actor(request))
        except relations.RelationError as exc:
            return _relation_error(exc)  # the batch is one transaction: nothing of it was stored
        return Response(s.RelationOutputSerializer([r.relation for r in rows], many=True).data, status=status.HTTP_201_CREATED)


class RelationEndApi(APIView):
    @extend_schema(request=s.RelationEndInputSerializer, responses={200: inline_serializer("RelationsEnded", {"ended": IntegerField()})})
    def post(self, request):
        data = s.RelationEndInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            ended = relations.relations_end(org=request.user.org, items=data.validated_data["relations"], actor=request_actor(request))
        except relations.RelationError as exc:
            return _relation_error(exc)
        return Response({"ended": ended})


class RelationDetailApi(APIView):
    @extend_schema(request=None, responses=s.RelationOutputSerializer)
    def delete(self, request, relation_id: int):
        # Ends the relation (it becomes history); the row stays for the audit.
        relation = EntityRelation.objects.filter(org=request.user.org, id=relation_id).select_related(
            "from_entity", "to_entity", "org").first()
        if relation is None:
            raise Http404
        return Response(s.RelationOutputSerializer(relations.relation_end(relation=relation, actor=request_actor(request))).data)


class EntityNeighboursApi(APIView):
    @extend_schema(parameters=[OpenApiParameter("include_history", bool, required=False),
                               OpenApiParameter("type", str, required=False, description="relation type")],
                   responses=s.NeighboursOutputSerializer)
    def get(self, request, type: str, external_id: str):
        entity = _visible_entity(request, type, external_id)
        params = s.NeighboursQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        out = relations.entity_neighbours_visible(entity=entity, user_id=request.user.user_id,
                                                  include_history=params.validated_data["include_history"],
                                                  type=params.validated_data.get("type"))
        return Response(s.NeighboursOutputSerializer({"entity": entity, "neighbours": out}).data)
