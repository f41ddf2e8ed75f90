"""Mounted at the root (config/urls.py): these are the paths `mem0ai`'s MemoryClient calls."""
from django.urls import path, re_path

from memory.mem0 import batch, views
from memory.mem0.unsupported import not_supported

urlpatterns = [
    path("v1/ping/", views.PingApi.as_view(), name="mem0-ping"),
    path("v3/memories/add/", views.AddApi.as_view(), name="mem0-add"),
    path("v3/memories/search/", views.SearchApi.as_view(), name="mem0-search"),
    path("v3/memories/", views.ListApi.as_view(), name="mem0-list"),
    path("v1/memories/", views.MemoriesApi.as_view(), name="mem0-delete-all"),
    path("v1/memories/<str:memory_id>/", views.MemoryDetailApi.as_view(), name="mem0-memory"),
    path("v1/memories/<str:memory_id>/history/", views.MemoryHistoryApi.as_view(), name="mem0-history"),
    path("v1/event/<str:event_id>/", views.EventApi.as_view(), name="mem0-event"),
    path("v1/entities/", views.EntitiesApi.as_view(), name="mem0-entities"),
    path("v2/entities/<str:entity_type>/<str:name>/profile/",
         not_supported("User profiles", "memories are recalled per query; there is no generated profile")),
    path("v2/entities/<str:entity_type>/<str:name>/", views.EntityDeleteApi.as_view(), name="mem0-entity-delete"),
    path("v1/events/", not_supported("Listing events", "read one add's status at /v1/event/<event_id>/")),
    path("v1/memories/search/", not_supported("v1 search", "use POST /v3/memories/search/")),
    path("v2/memories/", not_supported("v2 get_all", "use POST /v3/memories/")),
    path("v2/memories/search/", not_supported("v2 search", "use POST /v3/memories/search/")),
    path("v1/batch/", batch.BatchApi.as_view(), name="mem0-batch"),
    path("v1/exports/", not_supported("Memory exports")),
    path("v1/exports/get/", not_supported("Memory exports")),
    path("v1/summary/", not_supported("Export summaries")),
    path("v1/feedback/", not_supported("Memory feedback")),
    re_path(r"^v2/profiles/", not_supported("User profiles", "memories are recalled per query; there is no generated profile")),
    re_path(r"^api/v1/orgs/", not_supported("Organizations and projects", "one API key = one org; manage keys in the console")),
    re_path(r"^api/v1/webhooks/", not_supported("Webhooks")),
]
