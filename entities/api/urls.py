from django.urls import path

from entities.api import views

# External ids belong to the business service and may hold '/' ("WO/2024/7"), so they are routed
# with <path:...>, which also swallows what follows. The action suffixes therefore come first:
# Django tries patterns in order, and a detail route listed earlier would take "X/deactivate" as an
# id. Registration refuses ids that end with one of these suffixes (serializers.RESERVED_SUFFIXES),
# so every id has exactly one route.
urlpatterns = [
    path("entities", views.EntityListUpsertApi.as_view(), name="entity-list"),
    path("entities/bulk", views.EntityBulkUpsertApi.as_view(), name="entity-bulk"),
    path("relations", views.RelationUpsertApi.as_view(), name="relation-upsert"),
    path("relations/bulk", views.RelationBulkUpsertApi.as_view(), name="relation-bulk"),
    path("relations/end", views.RelationEndApi.as_view(), name="relation-end"),
    path("relations/<int:relation_id>", views.RelationDetailApi.as_view(), name="relation-detail"),
    path("entities/<str:type>/<path:external_id>/neighbours", views.EntityNeighboursApi.as_view(), name="entity-neighbours"),
    path("entities/<str:type>/<path:external_id>/deactivate", views.EntityDeactivateApi.as_view(),
         name="entity-deactivate"),
    path("entities/<str:type>/<path:external_id>/access/grant", views.EntityGrantApi.as_view(), name="entity-grant"),
    path("entities/<str:type>/<path:external_id>/access/revoke", views.EntityRevokeApi.as_view(), name="entity-revoke"),
    path("entities/<str:type>/<path:external_id>", views.EntityDetailApi.as_view(), name="entity-detail"),
]
