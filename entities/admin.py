"""Entity pages of the operator console. Read-only: entities are written through the API
(entities.services), so the console shows them with their mentions and linked memories."""
from django.contrib import admin

from entities.models import Entity, EntityAccess
from entities.relations import entity_neighbours
from tenancy.admin import ReadOnlyAdminMixin

DETAIL_ROWS = 50  # newest rows shown on the detail page; the full lists are paginated changelists


class EntityAccessInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = EntityAccess
    extra = 0
    verbose_name_plural = "access rules"
    readonly_fields = ["user_id", "effect", "changed_at"]


@admin.register(Entity)
class EntityAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["type", "external_id", "name", "aliases", "org", "active", "restricted", "updated_at"]
    list_filter = ["type", "active", "restricted", "org"]
    list_select_related = ["org"]
    search_fields = ["external_id", "name", "aliases"]
    inlines = [EntityAccessInline]
    list_per_page = 50
    fields = ["org", "type", "external_id", "name", "aliases", "attributes", "active", "restricted", "created_at",
              "updated_at"]
    readonly_fields = fields

    def change_view(self, request, object_id, form_url="", extra_context=None):
        entity = self.get_object(request, object_id)
        extra_context = extra_context or {}
        if entity is not None:
            # Reverse relations only: entities imports neither conversations nor memory (DESIGN §2).
            mentions = entity.mentions.select_related("message", "conversation").order_by("-at", "-id")
            links = entity.memory_links.select_related("memory").order_by("-memory__created_at", "-memory_id")
            relations = list(entity_neighbours(entity=entity, include_history=True))
            neighbours = [{"relation": r, "outgoing": r.from_entity_id == entity.id,
                           "other": r.to_entity if r.from_entity_id == entity.id else r.from_entity}
                          for r in sorted(relations, key=lambda r: not r.current)]
            # Memories linked to a neighbour: what recall brings in one hop away, through a relation in force or,
            # below those and dated, through one that ended (history).
            ended_at = {}
            for n in neighbours:
                if n["relation"].current:
                    ended_at[n["other"].id] = None
                elif n["other"].id not in ended_at:
                    ended_at[n["other"].id] = n["relation"].valid_to
            along = list(entity.memory_links.model.objects.filter(entity_id__in=list(ended_at))
                         .select_related("memory", "entity").order_by("-memory__created_at", "-memory_id")[:DETAIL_ROWS])
            for link in along:
                link.relation_ended = ended_at.get(link.entity_id)
            extra_context.update({
                "entity": entity,
                "neighbours": neighbours,
                "memories_along": along,
                "mentions": mentions[:DETAIL_ROWS], "mention_total": mentions.count(),
                "memory_links": links[:DETAIL_ROWS], "memory_total": links.count(),
            })
        return super().change_view(request, object_id, form_url, extra_context)
