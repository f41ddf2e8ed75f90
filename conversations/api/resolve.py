from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations.entity_resolution import entity_resolve
from conversations.selectors import conversation_get
from entities.api import serializers as s


def _entity_data(ref) -> dict:
    return {"type": ref.type, "external_id": ref.external_id, "name": ref.name}


class EntityResolveApi(APIView):
    """resolved (one entity), ambiguous (the candidates, never silently the first; at most
    RESOLVE_MAX_CANDIDATES, `candidates_truncated` when more exist) or none."""

    @extend_schema(request=s.ResolveInputSerializer, responses=s.ResolveOutputSerializer)
    def post(self, request):
        data = s.ResolveInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        conversation = None
        if data.validated_data.get("conversation_id") is not None:
            try:
                conversation = conversation_get(org=request.user.org, user_id=request.user.user_id,
                                                conversation_id=data.validated_data["conversation_id"])
            except Http404:
                raise ValidationError({"conversation_id": ["Unknown conversation."]})
        resolution, refs = entity_resolve(org=request.user.org, user_id=request.user.user_id,
                                          text=data.validated_data["text"], conversation=conversation)
        return Response({
            "status": resolution.status,
            "entity": _entity_data(refs[resolution.entity_id]) if resolution.entity_id else None,
            "candidates": [_entity_data(refs[c]) for c in resolution.candidates if c in refs],
            "candidates_truncated": resolution.truncated,
            "evidence": resolution.evidence,
        })
