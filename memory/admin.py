from django.contrib import admin

from memory.models import EntityLink, ForgetRequest, ForgetRule, Memory, MemorySource, MemoryVersion


class MemoryVersionInline(admin.TabularInline):
    model = MemoryVersion
    extra = 0
    can_delete = False
    readonly_fields = ["n", "content", "reason", "created_by", "actor", "created_at", "redacted"]


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    list_display = ["id", "org", "user_id", "kind", "assertion", "status", "version", "projected_version", "created_at"]
    list_filter = ["status", "kind", "assertion", "org"]
    search_fields = ["user_id", "content", "slot_key"]
    raw_id_fields = ["conversation", "superseded_by"]
    inlines = [MemoryVersionInline]
    list_per_page = 50


@admin.register(MemoryVersion)
class MemoryVersionAdmin(admin.ModelAdmin):
    list_display = ["memory", "n", "reason", "created_by", "created_at"]
    raw_id_fields = ["memory"]


@admin.register(MemorySource)
class MemorySourceAdmin(admin.ModelAdmin):
    list_display = ["memory", "version", "message", "conversation", "external_ref"]
    raw_id_fields = ["memory", "version", "message", "conversation"]


@admin.register(EntityLink)
class EntityLinkAdmin(admin.ModelAdmin):
    list_display = ["memory", "entity"]
    raw_id_fields = ["memory", "entity"]


@admin.register(ForgetRule)
class ForgetRuleAdmin(admin.ModelAdmin):
    list_display = ["id", "org", "user_id", "fingerprint", "slot_key", "created_at"]
    exclude = ["embedding"]


@admin.register(ForgetRequest)
class ForgetRequestAdmin(admin.ModelAdmin):
    list_display = ["id", "org", "subject_user", "target", "status", "requested_by", "operator", "created_at"]
    list_filter = ["status", "target", "org"]
