from django.conf import settings
from rest_framework import serializers

from entities.models import Entity
from tenancy.api import MAX_DB_INT, BoundedDateTimeField, StrictCharField, StrictSerializer, at_most
from tenancy.identifiers import USER_ID_MESSAGE, USER_ID_RE

TYPE_RE = r"^[a-z][a-z0-9_\-]{0,49}$"
# The entity routes take the external id as a <path:...> (it may hold '/'); an id ending with an
# action suffix would be routed to that action, so it is refused here (entities/api/urls.py).
RESERVED_SUFFIXES = ("/deactivate", "/access/grant", "/access/revoke", "/neighbours")


class EntityInputSerializer(StrictSerializer):
    type = serializers.RegexField(TYPE_RE, help_text="Open string: asset, asset_model, workorder, vehicle, ...")
    external_id = StrictCharField(max_length=200)
    name = StrictCharField(max_length=300)
    aliases = serializers.ListField(child=StrictCharField(max_length=300), required=False, default=list, max_length=100)
    attributes = serializers.DictField(required=False, default=dict)
    grants = serializers.ListField(child=serializers.RegexField(USER_ID_RE, error_messages={"invalid": USER_ID_MESSAGE}),
                                   required=False, max_length=1000,
                                   help_text="If given, only these users may read the entity.")

    def validate_external_id(self, value: str) -> str:
        if value.endswith(RESERVED_SUFFIXES):
            raise serializers.ValidationError(f"Must not end with {', '.join(RESERVED_SUFFIXES)}.")
        return value


class EntityListParamsSerializer(StrictSerializer):
    type = serializers.CharField(max_length=50, required=False)
    search = serializers.CharField(max_length=300, required=False)
    include_inactive = serializers.BooleanField(required=False, default=False)
    cursor = serializers.CharField(required=False)
    limit = serializers.IntegerField(required=False, min_value=1)


class EntityBulkInputSerializer(StrictSerializer):
    entities = EntityInputSerializer(many=True, allow_empty=False)

    def validate_entities(self, value):
        return at_most(value, settings.MAX_BATCH_MESSAGES, "entities per batch")


class EntityOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = Entity
        fields = ["id", "type", "external_id", "name", "aliases", "attributes", "active", "restricted", "updated_at"]


class EntityAccessInputSerializer(StrictSerializer):
    user = serializers.RegexField(USER_ID_RE, error_messages={"invalid": USER_ID_MESSAGE})


class ResolveInputSerializer(StrictSerializer):
    text = StrictCharField(max_length=4000)
    conversation_id = serializers.IntegerField(required=False, allow_null=True, max_value=MAX_DB_INT)


class ResolvedEntitySerializer(serializers.Serializer):
    type = serializers.CharField()
    external_id = serializers.CharField()
    name = serializers.CharField()


class ResolveOutputSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["resolved", "ambiguous", "none"])
    entity = ResolvedEntitySerializer(allow_null=True)
    candidates = ResolvedEntitySerializer(many=True)
    # More visible candidates exist than `candidates` lists (capped by RESOLVE_MAX_CANDIDATES).
    candidates_truncated = serializers.BooleanField()
    evidence = serializers.ListField(child=serializers.DictField())


# ------------------------------------------------------------------ relations
class EntityRefSerializer(StrictSerializer):
    type = serializers.RegexField(TYPE_RE)
    external_id = StrictCharField(max_length=200)


class RelationKeySerializer(StrictSerializer):
    """(from, type, to): what names one relation. "from" is a Python keyword: declared in get_fields."""

    type = serializers.RegexField(TYPE_RE, help_text="Open string: about, is_model, located_at, served_by, ...")
    to = EntityRefSerializer()

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = EntityRefSerializer()
        return fields

    def validate(self, attrs):
        attrs["from_ref"], attrs["to_ref"] = attrs.pop("from"), attrs.pop("to")
        return attrs


class RelationInputSerializer(RelationKeySerializer):
    valid_from = BoundedDateTimeField(required=False, allow_null=True)
    valid_to = BoundedDateTimeField(required=False, allow_null=True)
    source = StrictCharField(max_length=200, required=False, allow_blank=True, default="",
                             help_text="Who asserted the relation (e.g. erp-sync); the API key's actor when empty.")


def _relation_batch(child: type[StrictSerializer], name: str) -> type[StrictSerializer]:
    """A batch of relations (at most MAX_BATCH_MESSAGES, read per request: a changed setting applies at once)."""
    def validate_relations(self, value):
        return at_most(value, settings.MAX_BATCH_MESSAGES, "relations per batch")

    return type(name, (StrictSerializer,), {"relations": child(many=True, allow_empty=False),
                                            "validate_relations": validate_relations, "__module__": __name__})


RelationBulkInputSerializer = _relation_batch(RelationInputSerializer, "RelationBulkInputSerializer")
RelationEndInputSerializer = _relation_batch(RelationKeySerializer, "RelationEndInputSerializer")


class RelatedEntitySerializer(serializers.Serializer):
    type = serializers.CharField()
    external_id = serializers.CharField()
    name = serializers.CharField()


class RelationOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    type = serializers.CharField()
    valid_from = serializers.DateTimeField(allow_null=True)
    valid_to = serializers.DateTimeField(allow_null=True)
    source = serializers.CharField()
    current = serializers.BooleanField()

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["from"] = RelatedEntitySerializer(instance.from_entity).data
        data["to"] = RelatedEntitySerializer(instance.to_entity).data
        return data


class NeighbourSerializer(serializers.Serializer):
    relation_id = serializers.IntegerField()
    type = serializers.CharField()
    direction = serializers.ChoiceField(choices=["out", "in"], help_text="out: this entity —type→ the neighbour")
    entity = RelatedEntitySerializer()
    valid_from = serializers.DateTimeField(allow_null=True)
    valid_to = serializers.DateTimeField(allow_null=True)
    source = serializers.CharField()
    current = serializers.BooleanField()


class NeighboursOutputSerializer(serializers.Serializer):
    entity = RelatedEntitySerializer()
    neighbours = NeighbourSerializer(many=True)


class NeighboursQuerySerializer(StrictSerializer):
    include_history = serializers.BooleanField(required=False, default=False)
    type = serializers.RegexField(TYPE_RE, required=False)
