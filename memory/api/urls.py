from django.urls import path

from memory.api import conflicts, views

urlpatterns = [
    path("memories", views.MemoryListCreateApi.as_view(), name="memory-list"),
    path("memories/<int:memory_id>", views.MemoryDetailApi.as_view(), name="memory-detail"),
    path("memories/<int:memory_id>/history", views.MemoryHistoryApi.as_view(), name="memory-history"),
    path("memories/<int:memory_id>/invalidate", views.MemoryInvalidateApi.as_view(), name="memory-invalidate"),
    path("recall", views.RecallApi.as_view(), name="recall"),
    *conflicts.urlpatterns,  # the conflicts room keeps its own routes beside its views
    path("forget/preview", views.ForgetPreviewApi.as_view(), name="forget-preview"),
    path("forget", views.ForgetApi.as_view(), name="forget"),
    path("forget/<int:request_id>", views.ForgetRequestDetailApi.as_view(), name="forget-detail"),
    path("conversations/<int:conversation_id>/reextract", views.ConversationReextractApi.as_view(), name="reextract"),
    path("conversations/<int:conversation_id>/context", views.ContextApi.as_view(), name="context"),
]
