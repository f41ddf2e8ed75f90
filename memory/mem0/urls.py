"""Mounted at the root (config/urls.py): these are the paths `mem0ai`'s MemoryClient calls."""
from django.urls import path, re_path

from memory.mem0 import batch, views
from memory.mem0.unsupported import not_supported


def _served(route: str, view, name: str):
    # Every name here carries the mem0- prefix, so none clashes with a name of /api/v1.
    return path(route, view.as_view(), name=f"mem0-{name}")


urlpatterns = [
    _served("v1/ping/", views.PingApi, "ping"),
    _served("v3/memories/add/", views.AddApi, "add"),
    _served("v3/memories/search/", views.SearchApi, "search"),
    _served("v3/memories/", views.ListApi, "list"),
    _served("v1/memories/", views.MemoriesApi, "delete-all"),
    _served("v1/memories/<str:memory_id>/", views.MemoryDetailApi, "memory"),
    _served("v1/memories/<str:memory_id>/history/", views.MemoryHistoryApi, "history"),
    _served("v1/event/<str:event_id>/", views.EventApi, "event"),
    _served("v1/entities/", views.EntitiesApi, "entities"),
    path("v2/entities/<str:entity_type>/<str:name>/profile/",
         not_supported("User profiles", "memories are recalled per query; there is no generated profile")),
    _served("v2/entities/<str:entity_type>/<str:name>/", views.EntityDeleteApi, "entity-delete"),
    path("v1/events/", not_supported("Listing events", "read one add's status at /v1/event/<event_id>/")),
    path("v1/memories/search/", not_supported("v1 search", "use POST /v3/memories/search/")),
    path("v2/memories/", not_supported("v2 get_all", "use POST /v3/memories/")),
    path("v2/memories/search/", not_supported("v2 search", "use POST /v3/memories/search/")),
    _served("v1/batch/", batch.BatchApi, "batch"),
    path("v1/exports/", not_supported("Memory exports")),
    path("v1/exports/get/", not_supported("Memory exports")),
    path("v1/summary/", not_supported("Export summaries")),
    path("v1/feedback/", not_supported("Memory feedback")),
    re_path(r"^v2/profiles/", not_supported("User profiles", "memories are recalled per query; there is no generated profile")),
    re_path(r"^api/v1/orgs/", not_supported("Organizations and projects", "one API key = one org; manage keys in the console")),
    re_path(r"^api/v1/webhooks/", not_supported("Webhooks")),
]
