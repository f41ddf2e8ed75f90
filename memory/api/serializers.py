from django.conf import settings
from rest_framework import serializers

from memory.choices import EXTRACTED_KINDS, MemoryAssertion, MemoryKind, MemoryStatus
from memory.models import Memory, MemoryVersion
from tenancy.api import MAX_DB_INT, BoundedDateTimeField, StrictCharField, StrictSerializer, at_most, distinct_by

KINDS = EXTRACTED_KINDS
ASSERTIONS = MemoryAssertion.values


def memory_text(value: str) -> str:
    """A memory's text as a client writes it (REST and Mem0 alike): not blank, at most MAX_MEMORY_CHARS."""
    if not value.strip():
        raise serializers.ValidationError("Must not be blank.")
    return at_most(value, settings.MAX_MEMORY_CHARS, "characters")


class SourceInputSerializer(StrictSerializer):
    message_id = serializers.IntegerField(required=False, min_value=1, max_value=MAX_DB_INT)
    ref = serializers.CharField(max_length=200, required=False)

    def validate(self, attrs):
        if not attrs.get("message_id") and not attrs.get("ref"):
            raise serializers.ValidationError("A source needs message_id or ref.")
        return attrs


class MemoryCreateInputSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=KINDS)
    content = StrictCharField(max_length=None)
    assertion = serializers.ChoiceField(choices=ASSERTIONS, required=False, default=MemoryAssertion.USER_STATED.value)
    key = serializers.CharField(max_length=200, required=False, allow_null=True, help_text="Slot key: the subject.")
    entities = serializers.ListField(child=serializers.CharField(max_length=260), required=False, default=list,
                                     help_text="Entity refs: 'type:external_id', or an external id unique in the org.")
    valid_from = BoundedDateTimeField(required=False, allow_null=True)
    valid_to = BoundedDateTimeField(required=False, allow_null=True)
    occurred_at = BoundedDateTimeField(required=False, allow_null=True)
    at = BoundedDateTimeField(required=False, allow_null=True, help_text="When the memory became known (default now).")
    importance = serializers.FloatField(required=False, min_value=0, max_value=1, default=0.5)
    sources = SourceInputSerializer(many=True, required=False, default=list)

    def validate_content(self, value: str) -> str:
        return memory_text(value)

    def validate(self, attrs):
        if attrs.get("valid_from") and attrs.get("valid_to") and attrs["valid_to"] <= attrs["valid_from"]:
            raise serializers.ValidationError({"valid_to": ["Must be after valid_from."]})
        return attrs


class MemoryUpdateInputSerializer(StrictSerializer):
    """With `content`: a new version. Without: importance or validity change on the current version."""

    content = StrictCharField(max_length=None, required=False)
    importance = serializers.FloatField(required=False, min_value=0, max_value=1)
    valid_from = BoundedDateTimeField(required=False, allow_null=True)
    valid_to = BoundedDateTimeField(required=False, allow_null=True)

    def validate_content(self, value: str) -> str:
        return memory_text(value)

    def validate(self, attrs):
        if not any(attrs.get(name) is not None for name in self.fields):
            raise serializers.ValidationError("Nothing to change: give content, importance, valid_from or valid_to.")
        return attrs


class MemoryInvalidateInputSerializer(StrictSerializer):
    reason = serializers.CharField(max_length=50, required=False, default="user_invalidated")


class MemoryOutputSerializer(serializers.ModelSerializer):
    key = serializers.CharField(source="slot_key", allow_null=True, read_only=True)  # null without a slot key

    class Meta:
        model = Memory
        fields = ["id", "kind", "assertion", "scope", "key", "status", "content", "importance", "valid_from",
                  "valid_to", "occurred_at", "created_at", "updated_at", "version", "projected_version",
                  "access_count", "last_accessed_at", "superseded_by", "created_by"]


class MemoryWriteOutputSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=["added", "duplicate", "superseded", "blocked"])
    memory = MemoryOutputSerializer(allow_null=True)
    superseded = serializers.ListField(child=serializers.IntegerField())


class MemoryVersionOutputSerializer(serializers.ModelSerializer):
    sources = serializers.SerializerMethodField()

    class Meta:
        model = MemoryVersion
        fields = ["n", "content", "reason", "created_by", "actor", "created_at", "redacted", "sources"]

    def get_sources(self, version) -> list[dict]:
        return [{"message_id": s.message_id, "conversation_id": s.conversation_id, "ref": s.external_ref}
                for s in version.sources.all()]


class MemoryChainOutputSerializer(serializers.Serializer):
    supersedes = serializers.ListField(child=serializers.IntegerField())
    superseded_by = serializers.IntegerField(allow_null=True)


class MemoryHistoryOutputSerializer(serializers.Serializer):
    memory = MemoryOutputSerializer()
    chain = MemoryChainOutputSerializer()
    versions = MemoryVersionOutputSerializer(many=True)


class RecallInputSerializer(StrictSerializer):
    query = StrictCharField(max_length=4000)
    k = serializers.IntegerField(required=False, min_value=1, default=5)
    kinds = serializers.ListField(child=serializers.ChoiceField(choices=MemoryKind.values), required=False)
    entities = serializers.ListField(child=serializers.CharField(max_length=260), required=False, default=list)
    at = BoundedDateTimeField(required=False, allow_null=True, help_text="Reference time ('as of').")
    conversation_id = serializers.IntegerField(required=False, allow_null=True, max_value=MAX_DB_INT)
    include_episodes = serializers.BooleanField(required=False, default=True)
    explain = serializers.BooleanField(required=False, default=False)

    def validate_k(self, value: int) -> int:
        return at_most(value, settings.MAX_RECALL_K)


class SourceOutputSerializer(serializers.Serializer):
    message_id = serializers.IntegerField(allow_null=True)
    conversation_id = serializers.IntegerField(allow_null=True)
    ref = serializers.CharField(allow_null=True)


# A memory as an item of another answer (a recall hit, a side of a conflict): the fields that name it.
# A comment, not a docstring: drf-spectacular would give the docstring to every subclass's schema.
class MemoryItemOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    content = serializers.CharField()


class EntityPathOutputSerializer(serializers.Serializer):
    relation = serializers.CharField()
    direction = serializers.ChoiceField(choices=["out", "in"])
    to = serializers.CharField()
    current = serializers.BooleanField(help_text="False: the relation has ended (history); `valid_to` dates it.")
    valid_to = serializers.DateTimeField(required=False, help_text="When an ended relation ended.")

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.CharField()  # a Python keyword: declared here under its wire name
        return fields


class RecallItemOutputSerializer(MemoryItemOutputSerializer):
    assertion = serializers.CharField()
    valid_from = serializers.DateTimeField(allow_null=True)
    valid_to = serializers.DateTimeField(allow_null=True)
    occurred_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField(allow_null=True)
    version = serializers.IntegerField()
    sources = SourceOutputSerializer(many=True)
    entity_ids = serializers.ListField(child=serializers.CharField())
    score = serializers.FloatField()
    score_parts = serializers.DictField(child=serializers.FloatField(), required=False)
    entity_path = EntityPathOutputSerializer(required=False, help_text=(
        "With explain, for an item recalled through a relation: the entity the query named, the relation, "
        "the neighbour the item is linked to, and whether the relation is current (an ended one is dated)."))
    history = serializers.DictField(required=False, help_text=(
        "With explain, on a history item: `current` (the id of the newer item that made it history), "
        "`reason`, `subject_score`, `cosine`, `cue`, `old_named`, `head`."))


# "as" is a Python keyword, so the field is declared by name: "current", or "history" when a newer
# item on the same subject answers the query too (the older is shown as what held before).
RecallItemOutputSerializer._declared_fields["as"] = serializers.ChoiceField(
    choices=["current", "history"], help_text=(
        "`history`: an older preference or fact that a newer recalled item on the same subject replaces; "
        "show it as what held before (dated), never as current. `current` otherwise."))


class RecallOutputSerializer(serializers.Serializer):
    items = RecallItemOutputSerializer(many=True)
    degraded = serializers.BooleanField()
    degraded_reason = serializers.CharField(allow_null=True)
    stages = serializers.ListField(child=serializers.DictField(), required=False)


class MemoryListParamsSerializer(StrictSerializer):
    kind = serializers.ListField(child=serializers.ChoiceField(choices=MemoryKind.values), required=False)
    status = serializers.ListField(child=serializers.ChoiceField(choices=MemoryStatus.values), required=False)
    entity = serializers.CharField(max_length=260, required=False)
    created_after = BoundedDateTimeField(required=False)
    created_before = BoundedDateTimeField(required=False)
    include_episodes = serializers.BooleanField(required=False, default=False)
    cursor = serializers.CharField(required=False)
    limit = serializers.IntegerField(required=False, min_value=1)

    def to_internal_value(self, data):
        if hasattr(data, "getlist"):  # query params: repeated keys become lists
            data = {key: (data.getlist(key) if key in ("kind", "status") else data.get(key)) for key in data}
        return super().to_internal_value(data)


class EvidenceInputSerializer(StrictSerializer):
    id = serializers.CharField(max_length=200, help_text="Your id for the passage; the response reports it.")
    text = StrictCharField(max_length=None, trim_whitespace=False)
    source = StrictCharField(max_length=500, help_text="Where it comes from (document, URL, section).")
    score = serializers.FloatField(required=False, allow_null=True,
                                   help_text="Retrieval score; when given, passages are ranked by it (highest first).")

    def validate_text(self, value):
        if not value.strip():
            raise serializers.ValidationError("This field may not be blank.")
        return at_most(value, settings.CONTEXT_EVIDENCE_MAX_CHARS, "characters")


class ContextInputSerializer(StrictSerializer):
    message = StrictCharField(allow_blank=True, max_length=None, help_text="The next user message.")
    budget = serializers.IntegerField(required=False, min_value=64, help_text="Total token budget (hard cap).")
    system = StrictCharField(required=False, allow_blank=True, default="", max_length=None)
    tools = serializers.ListField(child=serializers.DictField(), required=False, default=list,
                                  help_text="Tool schemas the agent will send; counted against the budget.")
    at = BoundedDateTimeField(required=False, allow_null=True)
    k = serializers.IntegerField(required=False, min_value=1)
    recent_only = serializers.BooleanField(required=False, default=False,
                                           help_text="Baseline mode: sliding window and summary only.")
    section_budgets = serializers.DictField(child=serializers.FloatField(min_value=0, max_value=1), required=False,
                                           default=dict, help_text="Override shares (fractions of the room after "
                                                                   "system and message); all shares sum to at most 1.")
    evidence = EvidenceInputSerializer(many=True, required=False, default=list,
                                       help_text="Your retrieval results for this turn: placed after the system "
                                                 "prompt, numbered [1..n] for citation.")

    def validate_evidence(self, value):
        at_most(value, settings.CONTEXT_EVIDENCE_MAX_ITEMS, "passages")
        return distinct_by(value, "id", "Passage ids must be unique.")

    def validate_message(self, value):
        return at_most(value, settings.MAX_MESSAGE_CHARS, "characters")

    def validate_budget(self, value):
        return at_most(value, settings.MAX_CONTEXT_BUDGET)

    def validate_k(self, value):
        return at_most(value, settings.MAX_RECALL_K)

    def validate_section_budgets(self, value):
        unknown = set(value) - set(settings.CONTEXT_SECTION_BUDGETS)
        if unknown:
            raise serializers.ValidationError(f"Unknown sections: {sorted(unknown)}.")
        if sum({**settings.CONTEXT_SECTION_BUDGETS, **value}.values()) > 1.0 + 1e-9:
            raise serializers.ValidationError("With the defaults for the sections not given, shares must sum to at most 1.")
        return value


class ContextSectionOutputSerializer(serializers.Serializer):
    name = serializers.CharField()
    tokens = serializers.IntegerField()
    text = serializers.CharField(allow_blank=True)
    included = serializers.ListField(child=serializers.JSONField())
    dropped = serializers.ListField(child=serializers.JSONField())
    truncated = serializers.ListField(child=serializers.JSONField(), help_text="Included, but cut to fit.")


class ContextOutputSerializer(serializers.Serializer):
    budget = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    recall_degraded = serializers.BooleanField()
    message_truncated = serializers.BooleanField(help_text="The new message was cut to fit beside the system prompt.")
    sections = ContextSectionOutputSerializer(many=True)
    messages = serializers.ListField(child=serializers.DictField())


class ForgetPreviewInputSerializer(StrictSerializer):
    query = StrictCharField(max_length=4000)


class ForgetInputSerializer(StrictSerializer):
    memory_ids = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=MAX_DB_INT), required=False,
                                       default=list, max_length=1000)
    query = StrictCharField(max_length=4000, required=False, allow_blank=True, default="",
                            help_text="With memory_ids from its preview: forget what matches this query.")
    everything = serializers.BooleanField(required=False, default=False, help_text="Forget everything about me.")
    include_messages = serializers.BooleanField(required=False, default=None, allow_null=True,
                                                help_text="Also redact the source messages (default: yes for query "
                                                          "and everything, no for explicit ids).")

    def validate(self, attrs):
        if not attrs["everything"] and not attrs["memory_ids"]:
            raise serializers.ValidationError({"memory_ids": ["Give memory_ids (e.g. from the preview) or everything=true."]})
        return attrs


class ForgetRequestOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    target = serializers.CharField()
    status = serializers.CharField()
    memory_count = serializers.IntegerField()
    result = serializers.DictField()
    created_at = serializers.DateTimeField()
    executed_at = serializers.DateTimeField(allow_null=True)
