from django.conf import settings
from rest_framework import serializers

from conversations.models import Conversation, HistorySummary, Message, TaskState
from tenancy.api import MAX_DB_INT, BoundedDateTimeField, StrictCharField, StrictSerializer, at_most
from tenancy.identifiers import USER_ID_MESSAGE, USER_ID_RE

ROLES = ["user", "assistant", "tool", "system"]


class ConversationListParamsSerializer(StrictSerializer):
    external_id = serializers.CharField(max_length=200, required=False)
    cursor = serializers.CharField(required=False)
    limit = serializers.IntegerField(required=False, min_value=1)


class ConversationCreateInputSerializer(StrictSerializer):
    external_id = serializers.CharField(max_length=200, required=False, allow_null=True)
    title = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")


class ConversationOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = Conversation
        fields = ["id", "external_id", "title", "owner_user", "created_at", "message_count"]


class AccessInputSerializer(StrictSerializer):
    user = serializers.RegexField(USER_ID_RE, help_text="The user whose access changes.",
                                  error_messages={"invalid": USER_ID_MESSAGE})


class ToolCallSerializer(StrictSerializer):
    id = serializers.CharField(max_length=200)
    name = serializers.CharField(max_length=200, required=False)
    arguments = serializers.JSONField(required=False)
    type = serializers.CharField(max_length=20, required=False)
    function = serializers.DictField(required=False)

    def validate(self, attrs):
        if not attrs.get("name") and not (attrs.get("function") or {}).get("name"):
            raise serializers.ValidationError({"name": ["A tool call needs a name (or function.name)."]})
        return attrs


class MessageInputSerializer(StrictSerializer):
    role = serializers.ChoiceField(choices=ROLES)
    content = StrictCharField(allow_blank=True, required=False, default="", trim_whitespace=False)
    tool_call_id = serializers.CharField(max_length=200, required=False, allow_null=True)
    tool_calls = ToolCallSerializer(many=True, required=False, allow_null=True)
    occurred_at = BoundedDateTimeField(required=False, allow_null=True)
    external_ref = serializers.CharField(max_length=200, required=False, allow_null=True)

    def validate_content(self, value: str) -> str:
        if len(value) > settings.MAX_MESSAGE_CHARS:
            raise serializers.ValidationError(f"Content is longer than {settings.MAX_MESSAGE_CHARS} characters.")
        return value

    def validate(self, attrs):
        role = attrs["role"]
        if role == "tool" and not attrs.get("tool_call_id"):
            raise serializers.ValidationError({"tool_call_id": ["A tool message needs tool_call_id."]})
        if role != "tool" and attrs.get("tool_call_id"):
            raise serializers.ValidationError({"tool_call_id": ["Only tool messages carry tool_call_id."]})
        if attrs.get("tool_calls") and role != "assistant":
            raise serializers.ValidationError({"tool_calls": ["Only assistant messages carry tool_calls."]})
        if not attrs.get("content") and not attrs.get("tool_calls") and role != "tool":
            raise serializers.ValidationError({"content": ["Content may be empty only with tool_calls."]})
        return attrs


class MessageBatchInputSerializer(StrictSerializer):
    messages = MessageInputSerializer(many=True, allow_empty=False)

    def validate_messages(self, value):
        return at_most(value, settings.MAX_BATCH_MESSAGES, "messages per batch")


class MessageOutputSerializer(serializers.ModelSerializer):
    conversation_id = serializers.IntegerField()

    class Meta:
        model = Message
        fields = ["id", "conversation_id", "seq", "role", "content", "tool_call_id", "tool_calls", "token_count",
                  "occurred_at", "external_ref", "user_id", "redacted", "do_not_remember", "created_at"]


class TaskStatePutInputSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=[k for k, _ in TaskState.KINDS], required=False, default="other")
    state = StrictCharField(max_length=100)
    data = serializers.JSONField(required=False, default=dict)
    expected_version = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=MAX_DB_INT,
                                                help_text="Optimistic concurrency: apply only over this version.")

    def validate_data(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        if len(str(value)) > settings.MAX_MESSAGE_CHARS:
            raise serializers.ValidationError("Task data is too large.")
        return value


class TaskStateOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = TaskState
        fields = ["key", "kind", "state", "data", "version", "updated_at", "updated_by"]


class HistorySummaryOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = HistorySummary
        fields = ["id", "covers_until_seq", "text", "token_count", "produced_by", "created_at"]
