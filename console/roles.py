"""The console's two operator roles, as auth groups with model permissions.

- "Console viewer": reads every console page and record; cannot change, approve or resolve anything.
- "Console approver": the viewer's permissions plus deciding forget requests, resolving conflicts
  and acting on memories (invalidate, edit, request forgetting).
Creating and revoking API keys and purging orgs stay with superusers (or a hand-made group).
`ensure_roles()` is idempotent; it runs after every migrate (console/apps.py) and in ensure_demo.
"""
from django.contrib.auth.models import Group, Permission
from django.db import transaction

VIEWER = "Console viewer"
APPROVER = "Console approver"

VIEW_MODELS = {
    "memory": ["memory", "memoryversion", "memorysource", "entitylink", "forgetrequest", "forgetrule", "memoryconflict"],
    "conversations": ["conversation", "conversationaccess", "message", "historysummary", "taskstate", "entitymention"],
    "entities": ["entity"],
    "tenancy": ["org", "apikey", "auditevent"],
    "console": ["metricsample"],
}
APPROVER_EXTRA = [("memory", "approve_forgetrequest"), ("memory", "resolve_memoryconflict"),
                  ("memory", "change_memory"), ("memory", "add_forgetrequest")]


def _perms(pairs: list[tuple[str, str]]) -> list[Permission]:
    wanted = set(pairs)
    found = [p for p in Permission.objects.filter(content_type__app_label__in={a for a, _ in wanted},
                                                  codename__in={c for _, c in wanted}).select_related("content_type")
             if (p.content_type.app_label, p.codename) in wanted]
    return found


def ensure_roles() -> dict[str, Group]:
    view = [(app, f"view_{model}") for app, models in VIEW_MODELS.items() for model in models]
    groups = {}
    with transaction.atomic():
        for name, pairs in ((VIEWER, view), (APPROVER, view + APPROVER_EXTRA)):
            group, _ = Group.objects.get_or_create(name=name)
            group.permissions.set(_perms(pairs))
            groups[name] = group
    return groups
