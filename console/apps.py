from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _ensure_roles(sender, **kwargs) -> None:
    from console.roles import ensure_roles

    ensure_roles()


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Operator console"

    def ready(self) -> None:
        # After the permissions of every app exist (console is the last app migrated; a flush in
        # transactional tests sends post_migrate too, so the groups come back with the permissions).
        post_migrate.connect(_ensure_roles, sender=self, dispatch_uid="console-ensure-roles")
