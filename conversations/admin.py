"""Conversation pages of the operator console. Read-only: messages, access and task state are written
through conversations.services by the API; the console reads them (memory sources link here)."""
from django.contrib import admin
from django.utils.text import Truncator

from conversations.models import Conversation, ConversationAccess, EntityMention, HistorySummary, Message, TaskState
from tenancy.admin import IdInputFilter, ReadOnlyAdminMixin, TextInputFilter


class ConversationAccessInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = ConversationAccess
    extra = 0
    # Django would pluralise "conversation access" to "conversation accesss".
    verbose_name, verbose_name_plural = "access change", "per-user access (granted / revoked)"


class OwnerFilter(TextInputFilter):
    title, parameter_name, lookup = "owner user", "owner_user", "owner_user"


class ConversationFilter(IdInputFilter):
    title, parameter_name, lookup = "conversation id", "conversation", "conversation_id"


class ExtractionFilter(admin.SimpleListFilter):
    """Behind the dashboard's extraction backlog: user/assistant messages extraction has not reached."""

    title, parameter_name = "extraction", "extraction"

    def lookups(self, request, model_admin):
        return [("pending", "not extracted yet"), ("done", "extracted")]

    def queryset(self, request, queryset):
        if self.value() == "pending":
            return queryset.filter(extracted_at__isnull=True, role__in=["user", "assistant"], redacted=False)
        if self.value() == "done":
            return queryset.filter(extracted_at__isnull=False)
        return queryset


class EntityFilter(IdInputFilter):
    title, parameter_name, lookup = "entity id", "entity", "entity_id"


@admin.register(Conversation)
class ConversationAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["id", "org", "owner_user", "external_id", "title", "message_count", "created_at"]
    list_filter = ["org", OwnerFilter]
    list_select_related = ["org"]
    search_fields = ["owner_user", "external_id", "title"]
    inlines = [ConversationAccessInline]
    list_per_page = 50


@admin.register(Message)
class MessageAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["id", "conversation", "seq", "role", "user_id", "text", "occurred_at", "external_ref", "redacted"]
    list_filter = ["role", "redacted", "do_not_remember", ExtractionFilter, ConversationFilter]
    search_fields = ["external_ref", "user_id"]
    list_per_page = 50
    exclude = ["tool_calls"]

    @admin.display(description="text")
    def text(self, obj):
        if obj.redacted:
            return "(redacted)"
        return Truncator(obj.content).chars(80) if obj.content else ("(tool calls)" if obj.tool_calls else "")
    readonly_fields = ["conversation", "org", "user_id", "seq", "role", "content", "tool_call_id", "token_count",
                       "occurred_at", "external_ref", "redacted", "do_not_remember", "extracted_at", "created_at"]


@admin.register(HistorySummary)
class HistorySummaryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["id", "conversation", "covers_until_seq", "token_count", "produced_by", "created_at"]
    list_per_page = 50


@admin.register(TaskState)
class TaskStateAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["conversation", "key", "kind", "state", "version", "updated_at"]
    list_filter = ["kind", ConversationFilter]
    list_per_page = 50


@admin.register(EntityMention)
class EntityMentionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["at", "entity", "message", "conversation", "user_id", "surface"]
    list_filter = [EntityFilter, ConversationFilter]
    list_select_related = ["entity", "message", "conversation"]
    search_fields = ["user_id", "surface"]
    list_per_page = 50
