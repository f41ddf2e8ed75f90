"""Operator console pages that are not one model's admin: recall explainer, health, API keys, forgetting a
whole user and purging an org. Every view is wrapped in `admin.site.admin_view` (staff login, CSRF,
never cached) in console/urls.py; every write goes through a service and is audited as an operator.
Nothing here logs query, memory or message text.
"""
import logging
import time
from pathlib import Path

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import FileResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from config import health
from console.forget_admin import APPROVE_PERMISSION, forget_request_submit
from console.forms import ApiKeyCreateForm, ForgetUserForm, LatencyProbeForm, PurgeOrgForm, RecallExplainForm
from console.selectors import STATUSES, bar_chart, memory_growth, org_counts, org_purge_preview, user_forget_preview
from memory.models import Memory
from memory.recall import RecallQuery, recall
from memory.services.forget import org_purge
from tenancy.models import ApiKey, Org
from tenancy.services import api_key_create, api_key_revoke, audit_record

logger = logging.getLogger(__name__)

PAGE_SIZE = 50
# Fixed probe queries (zh + en): the latency probe never takes free text, so nothing sensitive is run or shown.
PROBE_QUERIES = ["我的偏好是什么", "what did I say about the schedule", "最近的维保计划", "preferred answer style",
                 "上次提到的设备"]
# Score parts shown first, in this order; any other part recall reports is appended after them.
PART_NAMES = ["semantic", "keyword", "relevance", "recency", "importance", "frequency", "entity", "episode"]
TIMING_STAGES = ["embed", "vector", "keyword", "back_check_rank", "total"]


def _require(request, perm: str) -> None:
    if not request.user.has_perm(perm):
        raise PermissionDenied


def _render(request, template: str, title: str, **context):
    return TemplateResponse(request, template, {**admin.site.each_context(request), "title": title, **context})


def _operator(request) -> str:
    return request.user.get_username()


def _freeze(form, *names: str) -> None:
    """Render fields as hidden inputs on a confirmation step."""
    for name in names:
        form.fields[name].widget = forms.HiddenInput()


def _page(request, queryset_or_list, size: int = PAGE_SIZE):
    return Paginator(queryset_or_list, size).get_page(request.GET.get("page"))


# --------------------------------------------------------------------------- recall explainer
def _explain(result, org: Org, k: int) -> dict:
    """Turn RecallResult.stages into rows the template can show, stage by stage."""
    stages = {stage["stage"]: stage for stage in result.stages}
    candidates = stages.get("candidates", {"semantic": {}, "keyword": {}})
    back_check = stages.get("back_check", {"kept": [], "dropped": {}})
    dedup = stages.get("dedup", {"dropped": {}})
    order = stages.get("rank", {"order": []})["order"]
    semantic, keyword = candidates["semantic"], candidates["keyword"]
    ids = set(semantic) | set(keyword)
    memories = Memory.objects.filter(org=org).in_bulk(ids)
    ranked_ids = {memory_id for memory_id, _ in order}
    final = {item.memory.id: item for item in result.items}
    reported = [p for item in result.items for p in item.parts]
    part_names = [p for p in PART_NAMES if p in reported or not reported] + \
        [p for p in dict.fromkeys(reported) if p not in PART_NAMES]

    def fate(memory_id: int) -> str:
        if memory_id in back_check["dropped"]:
            return f"dropped at back-check: {back_check['dropped'][memory_id]}"
        if memory_id not in ranked_ids:
            return "kept, but relevance below RECALL_MIN_RELEVANCE"
        if memory_id in dedup["dropped"]:
            return f"dropped at dedup: {dedup['dropped'][memory_id]}"
        return "returned" if memory_id in final else f"ranked below the top {k}"

    candidate_rows = sorted(
        ({"id": i, "memory": memories.get(i), "semantic": semantic.get(i), "keyword": keyword.get(i), "fate": fate(i)}
         for i in ids), key=lambda row: -max(row["semantic"] or 0, row["keyword"] or 0))
    rank_rows = [{"position": n, "id": memory_id, "memory": memories.get(memory_id), "score": score,
                  "parts": [final[memory_id].parts.get(p) for p in part_names] if memory_id in final else None,
                  "fate": fate(memory_id)} for n, (memory_id, score) in enumerate(order, 1)]
    return {
        "candidates": candidate_rows,
        "semantic_count": len(semantic), "keyword_count": len(keyword),
        "kept": [memories.get(i) or i for i in back_check["kept"]],
        "dropped": [{"id": i, "memory": memories.get(i), "reason": r} for i, r in sorted(back_check["dropped"].items())],
        "dedup": [{"id": i, "memory": memories.get(i), "reason": r} for i, r in sorted(dedup["dropped"].items())],
        "rank": rank_rows,
        "items": result.items,
        "part_names": part_names,
        "timings": [(name, round(value, 2)) for name, value in result.timings_ms.items()],
        "degraded": result.degraded, "degraded_reason": result.degraded_reason,
    }


def recall_explain(request):
    _require(request, "memory.view_memory")
    # POST, so the query text never lands in an access log or the browser history as a URL.
    form = RecallExplainForm(request.POST or None, initial={"org": request.GET.get("org"),
                                                            "user_id": request.GET.get("user_id", "")})
    explained = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        result = recall(RecallQuery(org=data["org"], user_id=data["user_id"], query=data["query"], k=data["k"],
                                    at=data["at"], include_episodes=data["include_episodes"], explain=True))
        explained = _explain(result, data["org"], data["k"])
        audit_record(org=data["org"], actor=_operator(request), actor_kind="operator", action="recall.explain",
                     target_type="user", target_id=data["user_id"][:100],
                     detail={"k": data["k"], "returned": len(result.items), "at": data["at"].isoformat() if data["at"] else None})
        logger.info("console recall explain org=%s returned=%s", data["org"].id, len(result.items))
    return _render(request, "console/recall_explain.html", "Recall explainer", form=form, explained=explained)


# --------------------------------------------------------------------------- health
def _latency_probe(request, form: LatencyProbeForm) -> dict:
    data = form.cleaned_data
    user_id = data["user_id"] or "console-latency-probe"
    runs = []
    for n in range(data["samples"]):
        started = time.perf_counter()
        result = recall(RecallQuery(org=data["org"], user_id=user_id, query=PROBE_QUERIES[n % len(PROBE_QUERIES)], k=5))
        wall = (time.perf_counter() - started) * 1000
        runs.append({"n": n + 1, "wall": round(wall, 2), "items": len(result.items), "degraded": result.degraded,
                     "stages": [round(result.timings_ms.get(s, 0.0), 2) for s in TIMING_STAGES]})
    audit_record(org=data["org"], actor=_operator(request), actor_kind="operator", action="recall.latency_probe",
                 target_type="user", target_id=user_id[:100], detail={"samples": data["samples"]})
    walls = sorted(r["wall"] for r in runs)
    return {"runs": runs, "user_id": user_id, "stage_names": TIMING_STAGES,
            "p50": walls[len(walls) // 2], "max": walls[-1],
            "chart": bar_chart([(f"run {r['n']}", r["wall"]) for r in runs], width=480, height=120)}


def _maintenance_view() -> dict:
    """Pending extraction and the last run of each maintenance job (memory.selectors)."""
    from memory.jobs.scheduler_thread import maintenance_status
    from memory.selectors import extraction_pending

    status = maintenance_status()
    return {"extraction": extraction_pending(), "scheduler": status["scheduler"],
            "jobs": [(name, run) for name, run in status["jobs"].items()]}


def health_page(request):
    checks = {"database": health.run_check(health.check_database),
              f"cache ({health.cache_backend()[1]})": health.run_check(health.check_cache),
              "vector index": health.run_check(health.check_vectors), "broker": health.run_check(health.check_broker),
              # Single node: this process consumes the vector queue; "degraded" when it holds work and
              # consumes nothing (config/consumer_watchdog.py).
              "vector consumer": health.run_check(health.check_vector_consumer)}
    lag = health.run_check(health.check_projection_lag) if checks["database"]["status"] == "ok" else None
    org_filter = Org.objects.filter(id=request.GET["org"]).first() if request.GET.get("org", "").isdigit() else None
    page = _page(request, Org.objects.order_by("slug"))
    growth = memory_growth(days=30, org=org_filter)
    probe_form = LatencyProbeForm(request.POST or None)
    probe = None
    if request.method == "POST":
        _require(request, "memory.view_memory")
        if probe_form.is_valid():
            probe = _latency_probe(request, probe_form)
    maintenance = _maintenance_view() if checks["database"]["status"] == "ok" else None
    return _render(request, "console/health.html", "Health", checks=checks, lag=lag, page=page, maintenance=maintenance,
                   counts=org_counts(orgs=list(page.object_list)), statuses=STATUSES, org_filter=org_filter,
                   orgs=Org.objects.order_by("slug"), growth_total=sum(n for _, n in growth),
                   growth=bar_chart([(d.isoformat(), n) for d, n in growth]),
                   growth_first=growth[0][0], growth_last=growth[-1][0], probe_form=probe_form, probe=probe)


# --------------------------------------------------------------------------- API keys
def api_keys(request):
    _require(request, "tenancy.view_apikey")
    org_filter = Org.objects.filter(id=request.GET["org"]).first() if request.GET.get("org", "").isdigit() else None
    form = ApiKeyCreateForm(request.POST or None, initial={"org": org_filter})
    created = None
    if request.method == "POST":
        _require(request, "tenancy.add_apikey")
        if form.is_valid():
            key, plaintext = api_key_create(org=form.cleaned_data["org"], name=form.cleaned_data["name"],
                                            scopes=form.cleaned_data["scopes"], actor=_operator(request),
                                            actor_kind="operator")
            # Rendered into this one response (never_cache via admin_view), never into the session or messages.
            created = {"key": key, "plaintext": plaintext}
            logger.info("console api key created id=%s org=%s", key.id, key.org_id)
            form = ApiKeyCreateForm(initial={"org": key.org})
    keys = ApiKey.objects.select_related("org").order_by("org__slug", "-created_at")
    if org_filter is not None:
        keys = keys.filter(org=org_filter)
    return _render(request, "console/api_keys.html", "API keys", form=form, created=created, page=_page(request, keys),
                   orgs=Org.objects.order_by("slug"), org_filter=org_filter,
                   can_revoke=request.user.has_perm("tenancy.change_apikey"))


@require_POST
def api_key_revoke_view(request, key_id: int):
    _require(request, "tenancy.change_apikey")
    key = get_object_or_404(ApiKey.objects.select_related("org"), id=key_id)
    was_active = key.is_active
    api_key_revoke(key=key, actor=_operator(request))
    messages.success(request, f"API key {key.prefix} revoked." if was_active else f"API key {key.prefix} was already revoked.")
    return HttpResponseRedirect(reverse("console:api-keys") + f"?org={key.org_id}")


# --------------------------------------------------------------------------- forget a user, purge an org
def forget_user(request):
    _require(request, "memory.add_forgetrequest")
    form = ForgetUserForm(request.POST or None, initial={"org": request.GET.get("org"), "user_id": request.GET.get("user_id", "")})
    if request.method != "POST" or not form.is_valid():
        return _render(request, "admin/console/action_form.html", "Forget everything about a user", form=form,
                       intro="Step 1: choose the user. You will see what would be forgotten before anything happens.",
                       buttons=[("preview", "Preview", "default")])
    org, user_id = form.cleaned_data["org"], form.cleaned_data["user_id"]
    may_approve = request.user.has_perm(APPROVE_PERMISSION)
    if "approve_now" in request.POST and not may_approve:
        raise PermissionDenied
    if "approve_now" in request.POST or "pending" in request.POST:
        return forget_request_submit(request, approved_note="everything about the user is being forgotten.",
                                     org=org, subject_user=user_id, target="user", include_messages=True)
    summary = user_forget_preview(org=org, user_id=user_id)
    _freeze(form, "org", "user_id")  # what is confirmed is what was previewed
    return _render(request, "admin/console/action_form.html", "Confirm: forget everything about a user", form=form,
                   summary=summary, intro="Step 2: every memory is redacted and fingerprinted, vectors and cache entries "
                                          "are deleted, the user's messages and summaries are redacted. It cannot be undone.",
                   buttons=([("approve_now", "Forget everything now", "default")] if may_approve else [])
                   + [("pending", "Create a request for a second operator", "")],
                   cancel_url=reverse("console:forget-user"))


def purge_org(request):
    _require(request, "tenancy.delete_org")
    data = request.POST or ({"org": request.GET["org"]} if request.GET.get("org") else None)
    form = PurgeOrgForm(data)
    org = None
    if data is not None:
        valid = form.is_valid()
        org = form.cleaned_data.get("org")
        if valid and request.method == "POST" and form.cleaned_data["confirm_slug"] == org.slug:
            slug = org.slug
            counts = org_purge(org=org, actor=_operator(request))
            logger.info("console org purge org_slug=%s counts=%s", slug, counts)
            messages.success(request, f"Org {slug} purged: {counts['memories']} memories, "
                                      f"{counts['conversations']} conversations.")
            return HttpResponseRedirect(reverse("admin:index"))
    summary = None
    if org is not None:
        _freeze(form, "org")
        summary = org_purge_preview(org=org)
    return _render(request, "admin/console/action_form.html", "Purge an org", form=form, summary=summary,
                   intro="Deletes the org and everything it owns: rows, vectors and cache entries. The audit log keeps "
                         "the org's slug. Type the slug to confirm.",
                   buttons=[("purge", "Purge org" if summary else "Show what would be deleted", "default")],
                   cancel_url=reverse("admin:index"))


def console_index(request):
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET"])
    return HttpResponseRedirect(reverse("admin:index"))  # the dashboard


FAVICON = Path(__file__).resolve().parent / "static" / "console" / "favicon.ico"


def favicon(request):
    """/favicon.ico, which browsers ask for on every page whatever the page links."""
    response = FileResponse(FAVICON.open("rb"), content_type="image/x-icon")
    response["Cache-Control"] = "public, max-age=86400"
    return response

