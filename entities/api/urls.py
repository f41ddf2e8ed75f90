from django.urls import path

from entities.api import views

urlpatterns = [
    path("entities", views.EntityListUpsertApi.as_view(), name="entity-list"),
    path("entities/bulk", views.EntityBulkUpsertApi.as_view(), name="entity-bulk"),
    path("entities/<str:type>/<str:external_id>", views.EntityDetailApi.as_view(), name="entity-detail"),
    path("entities/<str:type>/<str:external_id>/deactivate", views.EntityDeactivateApi.as_view(), name="entity-deactivate"),
    path("entities/<str:type>/<str:external_id>/access/grant", views.EntityGrantApi.as_view(), name="entity-grant"),
    path("entities/<str:type>/<str:external_id>/access/revoke", views.EntityRevokeApi.as_view(), name="entity-revoke"),
]
