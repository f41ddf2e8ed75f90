from django.urls import path

from conversations.api import views

urlpatterns = [
    path("conversations", views.ConversationListCreateApi.as_view(), name="conversation-list"),
    path("conversations/<int:conversation_id>", views.ConversationDetailApi.as_view(), name="conversation-detail"),
    path("conversations/<int:conversation_id>/access/grant", views.ConversationGrantApi.as_view(), name="conversation-grant"),
    path("conversations/<int:conversation_id>/access/revoke", views.ConversationRevokeApi.as_view(), name="conversation-revoke"),
    path("conversations/<int:conversation_id>/messages", views.MessageListCreateApi.as_view(), name="message-list"),
    path("conversations/<int:conversation_id>/messages/batch", views.MessageBatchCreateApi.as_view(), name="message-batch"),
    path("conversations/<int:conversation_id>/messages/<int:message_id>", views.MessageDetailApi.as_view(), name="message-detail"),
    path("conversations/<int:conversation_id>/tasks", views.TaskStateListApi.as_view(), name="task-list"),
    path("conversations/<int:conversation_id>/tasks/<str:key>", views.TaskStateDetailApi.as_view(), name="task-detail"),
]
