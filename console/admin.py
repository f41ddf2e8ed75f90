"""The console's admin registrations (the site itself is console/admin_site.py): the conversation
page with its transcript, and the conflict records behind the conflicts queue (console/conflicts.py).

The memory pages register themselves when imported here (Django auto-discovers each app's `admin`
module; the memory app has none, its operator face lives in this app): memories
(console/memories_admin.py), forget requests (console/forget_admin.py) and the read-only record
browsers (console/records_admin.py)."""
from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from console import forget_admin, memories_admin, records_admin  # noqa: F401  (they register on import)
from console.transcript import transcript_page
from conversations.admin import ConversationAdmin
from conversations.models import Conversation
from memory.models import MemoryConflict
from tenancy.admin import ReadOnlyAdminMixin

admin.site.unregister(Conversation)


@admin.register(Conversation)
class ConversationTranscriptAdmin(ConversationAdmin):
    """The conversation page shows its transcript under the metadata (templates/admin/conversations/...)."""

    list_display = ConversationAdmin.list_display + ["transcript_link"]

    @admin.display(description="transcript")
    def transcript_link(self, obj):
        return format_html('<a href="{}#transcript">read</a>', reverse("admin:conversations_conversation_change",
                                                                       args=[obj.id]))

    def change_view(self, request, object_id, form_url="", extra_context=None):
        conversation = self.get_object(request, object_id)
        extra_context = extra_context or {}
        if conversation is not None:
            page, rows = transcript_page(conversation=conversation, page=request.GET.get("page"),
                                         message_id=request.GET.get("message"))
            extra_context.update({"transcript_page": page, "transcript": rows, "page": page})
        return super().change_view(request, object_id, form_url, extra_context)


@admin.register(MemoryConflict)
class MemoryConflictAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Read-only history of conflicts; they are resolved in the queue, through conflict_resolve."""

    list_display = ["id", "org", "user_id", "older", "newer", "score", "status", "created_at", "resolved_by",
                    "resolved_at"]
    list_filter = ["status", "org"]
    search_fields = ["user_id", "resolved_by"]
    list_select_related = ["org", "older", "newer"]
    list_per_page = 50
    readonly_fields = ["org", "user_id", "older", "newer", "score", "signals", "status", "created_at", "resolved_at",
                       "resolved_by"]
