"""Console pages beside the model admins. admin_view = staff login (redirect to the admin login),
CSRF protection and never-cache on every page."""
from django.contrib import admin
from django.urls import path

from console import conflicts, views

app_name = "console"
staff = admin.site.admin_view

urlpatterns = [
    path("", staff(views.console_index), name="index"),
    path("health/", staff(views.health_page), name="health"),
    path("conflicts/", staff(conflicts.conflict_queue), name="conflicts"),
    path("conflicts/<int:conflict_id>/resolve/", staff(conflicts.conflict_resolve_view), name="conflict-resolve"),
    path("recall/", staff(views.recall_explain), name="recall-explain"),
    path("api-keys/", staff(views.api_keys), name="api-keys"),
    path("api-keys/<int:key_id>/revoke/", staff(views.api_key_revoke_view), name="api-key-revoke"),
    path("forget-user/", staff(views.forget_user), name="forget-user"),
    path("purge-org/", staff(views.purge_org), name="purge-org"),
]
