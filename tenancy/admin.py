from django.contrib import admin

from tenancy.models import ApiKey, AuditEvent, Org


@admin.register(Org)
class OrgAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "forget_requires_approval", "memory_capacity", "created_at"]
    search_fields = ["slug", "name"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["prefix", "name", "org", "created_at", "revoked_at", "last_used_at"]
    list_filter = ["org"]
    search_fields = ["prefix", "name", "org__slug"]
    readonly_fields = ["prefix", "secret_hash", "created_at", "last_used_at"]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["at", "org_slug", "actor", "actor_kind", "action", "target_type", "target_id"]
    list_filter = ["action", "actor_kind"]
    search_fields = ["org_slug", "actor", "target_id"]

    # Append-only: operators read the log, nobody edits it.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
