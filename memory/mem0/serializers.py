"""Request and response shapes of the Mem0 surface: what `mem0ai`'s MemoryClient sends and reads.

Inputs are strict: a field we do not know, or know but cannot honour, is a 400 that names it
(an ignored option would silently change what the caller gets)."""
from django.conf import settings
from rest_framework import serializers

from memory.api.serializers import memory_text
from memory.choices import FAR_READS
from memory.mem0.identity import Mem0BadRequest
from memory.mem0.scoping import agent_and_run
from memory.models import Memory
from tenancy.api import StrictCharField, StrictSerializer, at_most, distinct_by

ROLES = ("user", "assistant", "system")  # tool results need their call ids: /api/v1 takes those
_DT = serializers.DateTimeField()
MAX_TIMESTAMP = 253402300799  # 9999-12-31T23:59:59Z, the last second a datetime holds


def refuse(data: dict, reasons: dict[str, str]) -> None:
    """400 for the first option the caller set that we cannot honour (with why)."""
    for name, why in reasons.items():
        if data.get(name) not in (None, False, [], {}, ""):
            raise Mem0BadRequest(f"{name}: not supported: {why}")


class MessageInputSerializer(StrictSerializer):
    role = serializers.ChoiceField(choices=ROLES)
    content = StrictCharField(allow_blank=True, max_length=None, trim_whitespace=False)

    def validate_content(self, value: str) -> str:
        return at_most(value, settings.MAX_MESSAGE_CHARS, "characters")


ADD_UNSUPPORTED = {
    "app_id": "apps are not modelled; use agent_id or run_id.",
    "custom_categories": "categories are our memory kinds (preference, fact, event, context, suggestion).",
    "custom_instructions": "extraction is the service's own (rules or the configured LLM).",
    "agent_custom_instructions": "extraction is the service's own (rules or the configured LLM).",
    "structured_data_schema": "structured extraction is not offered.",
    "includes": "extraction is the service's own.",
    "excludes": "extraction is the service's own.",
    "enable_graph": "there is no graph store; entities are registered through /api/v1/entities.",
    "immutable": "every memory can be updated and forgotten.",
}


class AddInputSerializer(StrictSerializer):
    messages = MessageInputSerializer(many=True, allow_empty=False)
    user_id = serializers.JSONField(required=False)  # checked by identity.acting_user
    agent_id = serializers.JSONField(required=False)
    run_id = serializers.JSONField(required=False)
    filters = serializers.JSONField(required=False)
    metadata = serializers.DictField(required=False, allow_null=True)
    infer = serializers.BooleanField(required=False, default=True)
    timestamp = serializers.IntegerField(required=False, min_value=0, max_value=MAX_TIMESTAMP)
    expiration_date = serializers.DateField(required=False, allow_null=True)
    async_mode = serializers.BooleanField(required=False)
    output_format = serializers.ChoiceField(choices=["v1.1"], required=False)
    version = serializers.ChoiceField(choices=["v2", "v3"], required=False)
    for _name in ADD_UNSUPPORTED:
        locals()[_name] = serializers.JSONField(required=False)  # declared so refuse() can name it
    del _name

    def validate_messages(self, value):
        return at_most(value, settings.MAX_BATCH_MESSAGES, "messages per add")

    def validate(self, attrs):
        refuse(attrs, ADD_UNSUPPORTED)
        if attrs.get("expiration_date") and attrs["infer"]:
            raise Mem0BadRequest("expiration_date: only with infer=False (extraction decides how long what it "
                                 "derives stays valid).")
        return attrs


SEARCH_UNSUPPORTED = {
    "rerank": "results are always ranked by the service's fused score (similarity, keywords, recency, importance).",
    "fields": "results always carry every field.",
    "categories": "filter by kind is not offered on this surface.",
    "show_expired": "expired memories are never recalled.",
    "metadata": "metadata is returned, not searched.",
    "filter_memories": "not offered.",
    "app_id": "apps are not modelled.",
    "org_id": "the org comes from the API key.",
    "project_id": "the org comes from the API key.",
}


class SearchInputSerializer(StrictSerializer):
    query = StrictCharField(max_length=4000)
    filters = serializers.JSONField(required=False)
    user_id = serializers.JSONField(required=False)
    agent_id = serializers.JSONField(required=False)
    run_id = serializers.JSONField(required=False)
    top_k = serializers.IntegerField(required=False, min_value=1, default=10)
    threshold = serializers.FloatField(required=False, min_value=0, max_value=1)
    reference_date = serializers.JSONField(required=False)
    latest_only = serializers.BooleanField(required=False, default=True)
    keyword_search = serializers.BooleanField(required=False)  # keyword search is always part of recall
    version = serializers.ChoiceField(choices=["v2", "v3"], required=False)
    for _name in SEARCH_UNSUPPORTED:
        locals()[_name] = serializers.JSONField(required=False)  # declared so refuse() can name it
    del _name

    def validate_top_k(self, value: int) -> int:
        return at_most(value, settings.MAX_RECALL_K)

    def validate(self, attrs):
        refuse(attrs, SEARCH_UNSUPPORTED)
        if not attrs["latest_only"]:
            raise Mem0BadRequest("latest_only: false is not supported: search returns current memories only; "
                                 "read earlier versions with history.")
        return attrs


LIST_UNSUPPORTED = {
    "categories": "filter by kind is not offered on this surface.",
    "fields": "results always carry every field.",
    "app_id": "apps are not modelled.",
    "org_id": "the org comes from the API key.",
    "project_id": "the org comes from the API key.",
    "metadata": "metadata is returned, not filtered on.",
}


class ListInputSerializer(StrictSerializer):
    filters = serializers.JSONField(required=False)
    start_date = serializers.JSONField(required=False)
    end_date = serializers.JSONField(required=False)
    show_expired = serializers.BooleanField(required=False, default=False)
    latest_only = serializers.BooleanField(required=False, default=True)
    version = serializers.ChoiceField(choices=["v2", "v3"], required=False)
    for _name in LIST_UNSUPPORTED:
        locals()[_name] = serializers.JSONField(required=False)  # declared so refuse() can name it
    del _name

    def validate(self, attrs):
        refuse(attrs, LIST_UNSUPPORTED)
        return attrs


class PageParamsSerializer(serializers.Serializer):
    page = serializers.IntegerField(required=False, min_value=1, default=1)
    page_size = serializers.IntegerField(required=False, min_value=1, default=100)

    def validate_page_size(self, value: int) -> int:
        return at_most(value, settings.MAX_PAGE_SIZE)


class UpdateInputSerializer(StrictSerializer):
    text = StrictCharField(required=False, max_length=None)
    metadata = serializers.DictField(required=False, allow_null=True)
    expiration_date = serializers.DateField(required=False, allow_null=True)
    timestamp = serializers.JSONField(required=False)

    def validate_text(self, value: str) -> str:
        return memory_text(value)

    def validate(self, attrs):
        refuse(attrs, {"timestamp": "when a memory became known is not rewritten; history keeps every version."})
        if not set(attrs) - {"memory_id"}:
            raise Mem0BadRequest("text, metadata or expiration_date: give at least one.")
        return attrs


class BatchUpdateItemSerializer(UpdateInputSerializer):
    memory_id = serializers.CharField(max_length=40)


class BatchDeleteItemSerializer(StrictSerializer):
    memory_id = serializers.CharField(max_length=40)


def _batch_serializer(item):
    class BatchInputSerializer(StrictSerializer):
        memories = item(many=True, allow_empty=False)

        def validate_memories(self, value):
            at_most(value, settings.MAX_BATCH_MESSAGES, "memories per batch")
            return distinct_by(value, "memory_id", "Each memory_id at most once per batch.")
    return BatchInputSerializer


BatchUpdateInputSerializer = _batch_serializer(BatchUpdateItemSerializer)
BatchDeleteInputSerializer = _batch_serializer(BatchDeleteItemSerializer)


# ------------------------------------------------------------------------------------------------ outputs

def _dt(value) -> str | None:
    return _DT.to_representation(value) if value else None


def client_metadata(memory: Memory) -> dict | None:
    """The metadata a Mem0 client attached, as given: without the service's own readings (the gate's, D25;
    the judge's far readings, D34)."""
    return {k: v for k, v in (memory.metadata or {}).items() if k not in ("gate", FAR_READS)} or None


def memory_data(memory: Memory, *, conversation_key: str | None = None, score: float | None = None,
                presented_as: str | None = None) -> dict:
    """One memory as Mem0 shapes it (ids as strings), plus this service's own fields."""
    agent_id, run_id = agent_and_run(conversation_key)
    data = {
        "id": str(memory.id), "memory": memory.content, "user_id": memory.user_id, "agent_id": agent_id,
        "run_id": run_id, "app_id": None, "metadata": client_metadata(memory), "categories": [memory.kind],
        "hash": memory.content_hash, "immutable": False,
        "expiration_date": memory.valid_to.date().isoformat() if memory.valid_to else None,
        "created_at": _dt(memory.created_at), "updated_at": _dt(memory.updated_at),
        # This service's own: what kind of statement it is, and where it stands in its chain.
        "kind": memory.kind, "assertion": memory.assertion, "scope": memory.scope, "status": memory.status,
        "version": memory.version, "superseded_by": str(memory.superseded_by_id) if memory.superseded_by_id else None,
    }
    if score is not None:
        data["score"] = round(score, 6)
    if presented_as is not None:  # a search hit: "history" when a newer hit on the same subject replaces it
        data["as"] = presented_as
    return data


def history_data(memory: Memory, versions) -> list[dict]:
    """Mem0's history entries from our versions: ADD, then one UPDATE per later version."""
    entries, previous = [], None
    for version in versions:
        event = "ADD" if version.n == 1 else ("DELETE" if version.reason == "REDACT" else "UPDATE")
        entries.append({
            "id": f"{memory.id}.{version.n}", "memory_id": str(memory.id), "user_id": memory.user_id,
            "event": event, "reason": version.reason, "old_memory": previous, "new_memory": version.content,
            "input": [], "categories": [memory.kind], "metadata": client_metadata(memory),
            "created_by": version.created_by, "created_at": _dt(version.created_at), "updated_at": _dt(version.created_at),
            "sources": [{"message_id": s.message_id, "conversation_id": s.conversation_id, "ref": s.external_ref}
                        for s in version.sources.all()],
        })
        previous = version.content
    if memory.superseded_by_id:
        entries[-1]["superseded_by"] = str(memory.superseded_by_id)
    return entries
