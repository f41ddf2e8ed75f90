"""The conflicts queue: pairs of active memories of one user that may say different things about one
subject (memory.MemoryConflict, recorded by the write path), shown side by side with their sources
and dates, resolved through memory.services.conflicts.conflict_resolve (which audits it).

Resolving needs the `memory.resolve_memoryconflict` permission (the "Console approver" role).
"""
import logging
from collections import defaultdict
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from memory.choices import ConflictStatus, MemoryStatus
from memory.models import MemoryConflict, MemorySource
from memory.selectors import conflict_list
from memory.services.conflicts import ConflictStateError, conflict_resolve
from tenancy.models import Org

logger = logging.getLogger(__name__)

LLM_REVIEW_KEY = "llm_review"  # MemoryConflict.signals[...] written by memory/services/llm_review

PAGE_SIZE = 20
RESOLVE_PERMISSION = "memory.resolve_memoryconflict"
STATUSES = ConflictStatus.values


def _queue(org: Org | None, status: str, user_id: str):
    if org is not None:
        qs = conflict_list(org=org, user_id=user_id or None, status=status)
    else:  # every org: the same rule as conflict_list (an open pair has both memories still active)
        qs = MemoryConflict.objects.filter(status=status).select_related("older", "newer")
        if status == ConflictStatus.OPEN:
            qs = qs.filter(older__status=MemoryStatus.ACTIVE, newer__status=MemoryStatus.ACTIVE)
        if user_id:
            qs = qs.filter(user_id=user_id)
    return qs.select_related("org").order_by("-created_at", "-id")


def conflict_queue(request):
    if not request.user.has_perm("memory.view_memoryconflict"):
        raise PermissionDenied
    org = Org.objects.filter(id=request.GET["org"]).first() if request.GET.get("org", "").isdigit() else None
    status = request.GET.get("status") if request.GET.get("status") in STATUSES else ConflictStatus.OPEN
    user_id = request.GET.get("user_id", "").strip()[:128]
    page = Paginator(_queue(org, status, user_id), PAGE_SIZE).get_page(request.GET.get("page"))
    conflicts = list(page.object_list)
    memory_ids = [m for c in conflicts for m in (c.older_id, c.newer_id)]
    sources = defaultdict(list)
    for source in MemorySource.objects.filter(memory_id__in=memory_ids).select_related("message").order_by("id"):
        sources[source.memory_id].append(source)
    pairs = [{"conflict": c, "sides": [("older", c.older, sources[c.older_id]), ("newer", c.newer, sources[c.newer_id])],
              # The LLM reviewer's verdict (D28) is shown on its own line, not among the score parts.
              "review": (c.signals or {}).get(LLM_REVIEW_KEY),
              "signals": {k: v for k, v in (c.signals or {}).items() if k != LLM_REVIEW_KEY}}
             for c in conflicts]
    context = {**admin.site.each_context(request), "title": "Conflicts", "pairs": pairs, "page": page,
               "orgs": Org.objects.order_by("slug"), "org_filter": org, "status": status, "statuses": STATUSES,
               "user_filter": user_id, "can_resolve": request.user.has_perm(RESOLVE_PERMISSION),
               "filter_query": urlencode({"org": org.id if org else "", "user_id": user_id, "status": status})}
    return TemplateResponse(request, "console/conflicts.html", context)


@require_POST
def conflict_resolve_view(request, conflict_id: int):
    if not request.user.has_perm(RESOLVE_PERMISSION):
        raise PermissionDenied
    conflict = get_object_or_404(MemoryConflict.objects.select_related("org"), id=conflict_id)
    action = request.POST.get("action")
    try:
        conflict_resolve(org=conflict.org, conflict_id=conflict.id, action=action or "",
                         operator=request.user.get_username(), actor_kind="operator")
    except ConflictStateError as exc:
        messages.warning(request, f"Conflict {conflict.id} was not changed: {exc}.")
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        logger.info("console conflict resolved id=%s action=%s", conflict.id, action)
        done = (f"memory {conflict.older_id} superseded by memory {conflict.newer_id}" if action == "supersede"
                else f"memories {conflict.older_id} and {conflict.newer_id} both kept")
        messages.success(request, f"Conflict {conflict.id} resolved: {done}.")
    return HttpResponseRedirect(request.POST.get("next") if str(request.POST.get("next", "")).startswith("/admin/")
                                else reverse("console:conflicts"))
