from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html

from tenancy.models import ApiKey, AuditEvent, Org
from tenancy.services import api_key_revoke, audit_record


class TextInputFilter(admin.SimpleListFilter):
    """A list filter rendered as a text box (user ids, entity ids: too many values for a link list).

    Lives in tenancy because every app's admin may use it and every app already depends on tenancy.
    Subclasses set title, parameter_name and `lookup` (the queryset lookup the value is applied to).
    """

    template = "admin/input_filter.html"
    lookup = ""

    def lookups(self, request, model_admin):
        return ()

    def has_output(self):
        return True

    def queryset(self, request, queryset):
        value = (self.value() or "").strip()
        return queryset.filter(**{self.lookup: value}) if value else queryset

    def choices(self, changelist):
        # One pseudo-choice carrying the other active filters, so the form keeps them as hidden inputs.
        others = [(key, value) for key, values in changelist.get_filters_params().items()
                  if key != self.parameter_name for value in values]
        yield {"parameter_name": self.parameter_name, "value": self.value() or "", "query_parts": others,
               "clear_url": changelist.get_query_string(remove=[self.parameter_name])}


class IdInputFilter(TextInputFilter):
    """A TextInputFilter for an integer id: a value that is not a number leaves the list as it is."""

    def queryset(self, request, queryset):
        value = (self.value() or "").strip()
        return self.filter_id(queryset, int(value)) if value.isdigit() else queryset

    def filter_id(self, queryset, value: int):
        return queryset.filter(**{self.lookup: value})


class ReadOnlyAdminMixin:
    """Records operators read and nobody edits in the console (audit log, versions, sources, conflicts:
    those change only through services)."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Org)
class OrgAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "forget_requires_approval", "memory_capacity", "created_at", "console_links"]
    search_fields = ["slug", "name"]
    list_per_page = 50
    readonly_fields = ["created_at"]

    @admin.display(description="console")
    def console_links(self, obj):
        return format_html('<a href="{}?org__id__exact={}">memories</a> · <a href="{}?org={}">API keys</a> · '
                           '<a href="{}?org={}">purge…</a>',
                           reverse("admin:memory_memory_changelist"), obj.id, reverse("console:api-keys"), obj.id,
                           reverse("console:purge-org"), obj.id)

    def save_model(self, request, obj, form, change):
        # Org settings are plain configuration rows; the write is direct but audited like every operator action.
        obj.full_clean()
        obj.save()
        audit_record(org=obj, actor=request.user.get_username(), actor_kind="operator",
                     action="org.update" if change else "org.create", target_type="org", target_id=str(obj.id),
                     detail={"fields": sorted(form.changed_data)})

    def has_delete_permission(self, request, obj=None):
        # Deleting the row would leave vectors and cache entries behind: use the console's "purge org".
        return False


@admin.register(ApiKey)
class ApiKeyAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Read-only: keys are created and revoked through the console page (tenancy.services), never as raw rows."""

    list_display = ["prefix", "name", "org", "scopes", "created_at", "revoked_at", "last_used_at"]
    list_filter = ["org"]
    search_fields = ["prefix", "name", "org__slug"]
    list_select_related = ["org"]
    list_per_page = 50
    exclude = ["secret_hash"]
    actions = ["revoke_selected"]

    @admin.action(description="Revoke selected API keys", permissions=["view"])
    def revoke_selected(self, request, queryset):
        if not request.user.has_perm("tenancy.change_apikey"):
            self.message_user(request, "You may not revoke API keys.", messages.ERROR)
            return
        revoked = 0
        for key in queryset.select_related("org").filter(revoked_at__isnull=True):
            api_key_revoke(key=key, actor=request.user.get_username())
            revoked += 1
        self.message_user(request, f"Revoked {revoked} API key(s).", messages.SUCCESS)


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["at", "org_slug", "actor", "actor_kind", "action", "target_type", "target_id", "detail"]
    list_filter = ["actor_kind", "action", "target_type", "org_slug"]
    search_fields = ["org_slug", "actor", "target_id"]
    date_hierarchy = "at"
    list_per_page = 100

    # Append-only: operators read the log, nobody edits it (ReadOnlyAdminMixin).
