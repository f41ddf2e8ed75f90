from django.urls import path

from memory.mcp.transport import mcp_endpoint

urlpatterns = [
    path("", mcp_endpoint, name="mcp"),
]
