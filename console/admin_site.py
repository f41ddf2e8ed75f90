"""The console's admin site: Django's admin with the operator dashboard as its index, and Celery's
scheduler/result tables left out of the app list for anyone who is not a superuser.

Installed instead of "django.contrib.admin" (ConsoleAdminConfig.default_site), so `admin.site` and
every `@admin.register` keep working unchanged.
"""
from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.http import Http404

# Celery's internals: operators pause beat jobs through a superuser, not through the everyday console.
INTERNAL_APPS = frozenset({"django_celery_beat", "django_celery_results"})


class ConsoleAdminSite(admin.AdminSite):
    site_header = "Memory service console"
    site_title = "Memory service console"
    index_title = "Dashboard"
    # The console's top navigation replaces the model sidebar, which would squeeze wide tables.
    enable_nav_sidebar = False

    def get_app_list(self, request, app_label=None):
        apps = super().get_app_list(request, app_label)
        if request.user.is_superuser:
            return apps
        return [app for app in apps if app["app_label"] not in INTERNAL_APPS]

    def app_index(self, request, app_label, extra_context=None):
        if app_label in INTERNAL_APPS and not request.user.is_superuser:
            raise Http404
        return super().app_index(request, app_label, extra_context)

    def index(self, request, extra_context=None):
        from console.dashboard import dashboard_view

        return dashboard_view(request, self, extra_context)


class ConsoleAdminConfig(AdminConfig):
    default_site = "console.admin_site.ConsoleAdminSite"
