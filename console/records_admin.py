"""Read-only record browsers of the memory app in the console (registered on import by console/admin.py)."""
from django.contrib import admin

from memory.models import EntityLink, ForgetRule, MemorySource, MemoryVersion
from tenancy.admin import IdInputFilter, ReadOnlyAdminMixin


# --------------------------------------------------------------------------- read-only record browsers
class ReadOnlyAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_per_page = 50


@admin.register(MemoryVersion)
class MemoryVersionAdmin(ReadOnlyAdmin):
    list_display = ["memory", "n", "reason", "created_by", "actor", "redacted", "created_at"]
    list_filter = ["reason", "created_by", "redacted"]
    raw_id_fields = ["memory"]


@admin.register(MemorySource)
class MemorySourceAdmin(ReadOnlyAdmin):
    list_display = ["memory", "version", "message", "conversation", "external_ref"]
    raw_id_fields = ["memory", "version", "message", "conversation"]


@admin.register(EntityLink)
class EntityLinkAdmin(ReadOnlyAdmin):
    list_display = ["memory", "entity"]
    raw_id_fields = ["memory", "entity"]


class RuleRequestFilter(IdInputFilter):
    title, parameter_name, lookup = "forget request id", "request__id__exact", "request_id"


@admin.register(ForgetRule)
class ForgetRuleAdmin(ReadOnlyAdmin):
    list_display = ["id", "org", "user_id", "fingerprint", "slot_key", "entity", "request", "created_at"]
    list_filter = ["org", RuleRequestFilter]
    exclude = ["embedding"]
