from django.contrib import admin

from entities.models import Entity, EntityAccess


class EntityAccessInline(admin.TabularInline):
    model = EntityAccess
    extra = 0


@admin.register(Entity)
class EntityAdmin(admin.ModelAdmin):
    list_display = ["type", "external_id", "name", "org", "active", "restricted", "updated_at"]
    list_filter = ["type", "active", "org"]
    search_fields = ["external_id", "name", "aliases"]
    inlines = [EntityAccessInline]
    list_per_page = 50
