from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from config import health, metrics
from console.views import favicon
from conversations.api.resolve import EntityResolveApi

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("api/v1/", include("conversations.api.urls")),
    path("api/v1/", include("memory.api.urls")),
    # Resolution needs the conversation's mentions, which live in `conversations` (entities imports neither).
    path("api/v1/entities/resolve", EntityResolveApi.as_view(), name="entity-resolve"),
    path("api/v1/", include("entities.api.urls")),
    path("mcp", include("memory.mcp.urls")),
    # Console pages live under the admin prefix and before it, so the admin's catch-all never shadows them.
    path("admin/console/", include("console.urls")),
    path("admin/", admin.site.urls),
    # The Mem0-compatible surface (docs/mem0.md) at the root paths `mem0ai`'s MemoryClient calls.
    path("", include("memory.mem0.urls")),
]
