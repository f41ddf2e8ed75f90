"""The memory list's filters and columns: pairs share a cell so that every column fits 1280 px beside the filters."""
from django.contrib import admin
from django.db.models import F, Prefetch
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import Truncator

from memory.choices import MemoryStatus
from memory.models import Memory, MemorySource
from tenancy.admin import IdInputFilter, TextInputFilter


def snippet(memory: Memory, length: int = 90) -> str:
    if memory.status == MemoryStatus.FORGOTTEN or not memory.content:
        return "(redacted)"
    return Truncator(memory.content).chars(length)


# --------------------------------------------------------------------------- list filters
class UserFilter(TextInputFilter):
    title, parameter_name, lookup = "user id", "user_id", "user_id"


class EntityFilter(IdInputFilter):
    title, parameter_name, lookup = "entity id", "entity", "entity_links__entity_id"


class ProjectionFilter(admin.SimpleListFilter):
    """Behind the dashboard's projection lag: memories whose projected version is behind their version."""

    title, parameter_name = "projection", "projection"

    def lookups(self, request, model_admin):
        return [("lagging", "lagging"), ("in_step", "in step")]

    def queryset(self, request, queryset):
        if self.value() == "lagging":
            return queryset.filter(projected_version__lt=F("version"))
        if self.value() == "in_step":
            return queryset.filter(projected_version__gte=F("version"))
        return queryset


class MemoryListColumns:
    # ---------------------------------------------------------------- list
    def get_queryset(self, request):
        # The first source of each row, in one query for the page (a sliced prefetch uses a window function).
        first = MemorySource.objects.select_related("message").order_by("memory_id", "id")
        return super().get_queryset(request).prefetch_related(Prefetch("sources", queryset=first[:1], to_attr="first_sources"))

    @admin.display(description="org / user", ordering="user_id")
    def owner(self, obj):
        url = reverse("admin:memory_memory_changelist")
        return format_html('{}<br><a href="{}?org__id__exact={}&user_id={}">{}</a>', obj.org.slug, url, obj.org_id,
                           obj.user_id, obj.user_id)

    @admin.display(description="kind / assertion", ordering="kind")
    def kind_assertion(self, obj):
        return format_html('{}<br><span class="console-muted">{}</span>', obj.kind, obj.assertion.replace("_", " "))

    @admin.display(description="subject (slot)", ordering="slot_key")
    def subject(self, obj):
        return format_html("<code>{}</code>", obj.slot_key) if obj.slot_key else "—"

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj):
        return format_html('<span class="console-badge {}">{}</span>', obj.status, obj.status)

    @admin.display(description="content")
    def snippet(self, obj):
        return snippet(obj)

    @admin.display(description="source")
    def source(self, obj):
        source = (getattr(obj, "first_sources", None) or [None])[0]
        if source is None:
            return obj.created_by
        if source.message_id and source.message is not None:
            url = reverse("admin:conversations_conversation_change", args=[source.message.conversation_id])
            return format_html('<a href="{}?message={}#message-{}">{} #{}</a><br><span class="console-muted">conv {}</span>',
                               url, source.message_id, source.message_id, source.message.role, source.message.seq,
                               source.message.conversation_id)
        if source.external_ref:
            return format_html("ext <code>{}</code>", Truncator(source.external_ref).chars(24))
        return obj.created_by

    @admin.display(description="superseded by", ordering="superseded_by")
    def superseded_by_link(self, obj):
        if obj.superseded_by_id is None:
            return "—"
        return format_html('<a href="{}">{}</a>', reverse("admin:memory_memory_change", args=[obj.superseded_by_id]),
                           obj.superseded_by_id)

    @admin.display(description="version / created", ordering="created_at")
    def version_projection(self, obj):
        projected = "✔" if obj.projected_version >= obj.version else format_html(
            '<span class="console-badge superseded" title="projected version">lag {}</span>', obj.projected_version)
        return format_html('v{} {}<br><span class="console-muted">{}</span>', obj.version, projected,
                           obj.created_at.strftime("%Y-%m-%d %H:%M") if obj.created_at else "")
