from django.contrib import admin

from conversations.models import Conversation, ConversationAccess, EntityMention, HistorySummary, Message, TaskState


class ConversationAccessInline(admin.TabularInline):
    model = ConversationAccess
    extra = 0


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ["id", "org", "owner_user", "external_id", "title", "message_count", "created_at"]
    list_filter = ["org"]
    search_fields = ["owner_user", "external_id", "title"]
    inlines = [ConversationAccessInline]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["id", "conversation", "seq", "role", "user_id", "occurred_at", "external_ref", "redacted"]
    list_filter = ["role", "redacted", "do_not_remember"]
    search_fields = ["external_ref", "user_id"]
    raw_id_fields = ["conversation", "org"]


@admin.register(HistorySummary)
class HistorySummaryAdmin(admin.ModelAdmin):
    list_display = ["id", "conversation", "covers_until_seq", "token_count", "produced_by", "created_at"]
    raw_id_fields = ["conversation"]


@admin.register(TaskState)
class TaskStateAdmin(admin.ModelAdmin):
    list_display = ["conversation", "key", "kind", "state", "version", "updated_at"]
    raw_id_fields = ["conversation"]


@admin.register(EntityMention)
class EntityMentionAdmin(admin.ModelAdmin):
    list_display = ["entity", "message", "conversation", "user_id", "at"]
    raw_id_fields = ["entity", "message", "conversation"]
