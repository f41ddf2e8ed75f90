"""Operator console pages for forget requests: the list with approve/reject actions and the detail
page. Decisions go through `forget_request_decide`, which records the AuditEvent; ids only in logs."""
import logging

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from console.memory_detail import forget_requests_matching
from console.memory_list import snippet
from memory.choices import ForgetRequestStatus
from memory.models import ForgetRequest
from memory.services.forget import forget_request_create, forget_request_decide
from tenancy.admin import IdInputFilter, TextInputFilter

logger = logging.getLogger(__name__)

APPROVE_PERMISSION = "memory.approve_forgetrequest"


def operator_name(request) -> str:
    return request.user.get_username()


def forget_request_submit(request, *, approved_note: str, **request_fields) -> HttpResponseRedirect:
    """File a forget request from a console page (the memory's forget page, forget-a-user); with
    "approve_now" in the POST the operator who asks also decides, and execution is queued on commit.
    The caller has checked the approve permission before anything is written."""
    operator = operator_name(request)
    forget_request = forget_request_create(requested_by=operator, via="console", **request_fields)
    if "approve_now" in request.POST:
        forget_request_decide(request=forget_request, approve=True, operator=operator)
        messages.success(request, f"Forget request {forget_request.id} approved; {approved_note}")
    else:
        messages.success(request, f"Forget request {forget_request.id} created and waits for approval.")
    return HttpResponseRedirect(reverse("admin:memory_forgetrequest_change", args=[forget_request.id]))


# --------------------------------------------------------------------------- forget requests
class SubjectUserFilter(TextInputFilter):
    title, parameter_name, lookup = "subject user", "subject_user", "subject_user"


class RequestMemoryFilter(IdInputFilter):
    title, parameter_name, lookup = "memory id", "memory", "memory_id"

    def filter_id(self, queryset, value: int):
        return forget_requests_matching(value, queryset)  # the request's first memory (FK) or any memory it matched


def _decide(request, ids, *, approve: bool) -> tuple[int, int]:
    decided = skipped = 0
    for request_id in ids:
        # The row lock serialises two operators deciding the same request; execution is queued on commit.
        with transaction.atomic():
            forget_request = ForgetRequest.objects.select_for_update().select_related("org").get(id=request_id)
            if forget_request.status != ForgetRequestStatus.PENDING:
                skipped += 1
                continue
            forget_request_decide(request=forget_request, approve=approve, operator=operator_name(request))
            decided += 1
    return decided, skipped


@admin.register(ForgetRequest)
class ForgetRequestAdmin(admin.ModelAdmin):
    # Eight columns that fit 1280 px: who/when pairs share a cell.
    list_display = ["id", "owner", "target", "memories", "status", "requested", "decided", "executed"]
    list_filter = ["status", "target", "requested_via", "org", SubjectUserFilter, RequestMemoryFilter]
    list_select_related = ["org"]
    search_fields = ["subject_user", "requested_by", "operator"]
    list_per_page = 50
    actions = ["approve_selected", "reject_selected"]
    readonly_fields = ["org", "subject_user", "requested_by", "requested_via", "target", "memory", "matched_ids",
                       "echoes", "include_messages", "status", "operator", "created_at", "decided_at", "executed_at",
                       "result"]
    fields = readonly_fields + ["query"]

    @admin.display(description="org / subject user", ordering="subject_user")
    def owner(self, obj):
        return format_html("{}<br>{}", obj.org.slug, obj.subject_user or "—")

    @admin.display(description="echoes (removed with it)")
    def echoes(self, obj):
        """Episodes that restate the matched memories (the user's turn, the assistant's acknowledgement, the
        same fact said elsewhere): the operator approves their removal together with the matches."""
        if obj.status in (ForgetRequestStatus.EXECUTED, ForgetRequestStatus.REJECTED) or obj.target == "user":
            return (obj.result or {}).get("echoes_forgotten", "—")
        from memory.services.forget_echoes import forget_echoes

        found = forget_echoes(org_id=obj.org_id, user_id=obj.subject_user, memory_ids=obj.matched_ids or [],
                              said_before=obj.created_at)  # as the execution will find them
        if not found:
            return "none"
        return format_html_join(mark_safe("<br>"), '<a href="{}">{}</a> ({}, echo of {}): {}', (
            (reverse("admin:memory_memory_change", args=[e.memory.id]), e.memory.id, e.why, e.of, snippet(e.memory))
            for e in found))

    @admin.display(description="memories")
    def memories(self, obj):
        ids = list(dict.fromkeys(([obj.memory_id] if obj.memory_id else []) + list(obj.matched_ids or [])))
        if not ids:
            return "all of the user's" if obj.target == "user" else "—"
        links = format_html_join(", ", '<a href="{}">{}</a>', ((reverse("admin:memory_memory_change", args=[i]), i)
                                                              for i in ids[:5]))
        return format_html("{}{}", links, f" … ({len(ids)})" if len(ids) > 5 else "")

    @admin.display(description="requested", ordering="created_at")
    def requested(self, obj):
        return format_html('{}<br><span class="console-muted">via {} · {}</span>', obj.requested_by, obj.requested_via,
                           obj.created_at.strftime("%Y-%m-%d %H:%M"))

    @admin.display(description="decided", ordering="decided_at")
    def decided(self, obj):
        if not obj.decided_at:
            return "—"
        return format_html('{}<br><span class="console-muted">{}</span>', obj.operator, obj.decided_at.strftime("%Y-%m-%d %H:%M"))

    @admin.display(description="executed", ordering="executed_at")
    def executed(self, obj):
        if not obj.executed_at:
            return "—"
        counts = ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in (obj.result or {}).items())
        return format_html('{}<br><span class="console-muted">{}</span>', obj.executed_at.strftime("%Y-%m-%d %H:%M"), counts)

    def get_readonly_fields(self, request, obj=None):
        return self.fields  # the query text is shown to the deciding operator, never editable

    def has_add_permission(self, request):
        return False  # requests come from the API and the console's forget pages

    def has_delete_permission(self, request, obj=None):
        return False

    def has_approve_permission(self, request, obj=None):
        """Deciding (approve or reject) is a permission of its own (the "Console approver" role)."""
        return request.user.has_perm(APPROVE_PERMISSION)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = {**(extra_context or {}), "show_save": False, "show_save_and_continue": False,
                         "show_save_and_add_another": False, "show_delete": False,
                         "can_approve": self.has_approve_permission(request)}
        return super().change_view(request, object_id, form_url, extra_context)

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [path("<int:object_id>/decide/", wrap(self.decide_view), name="memory_forgetrequest_decide")] + super().get_urls()

    def decide_view(self, request, object_id):
        if request.method != "POST":
            return HttpResponseRedirect(reverse("admin:memory_forgetrequest_change", args=[object_id]))
        obj = self.get_object(request, str(object_id))
        if obj is None:
            raise Http404
        if not self.has_approve_permission(request, obj):
            raise PermissionDenied
        approve = "approve" in request.POST
        decided, _ = _decide(request, [obj.id], approve=approve)
        if decided:
            messages.success(request, f"Forget request {obj.id} {'approved' if approve else 'rejected'} by {operator_name(request)}.")
        else:
            messages.warning(request, f"Forget request {obj.id} was no longer pending.")
        return HttpResponseRedirect(reverse("admin:memory_forgetrequest_change", args=[obj.id]))

    @admin.action(description="Approve selected forget requests", permissions=["approve"])
    def approve_selected(self, request, queryset):
        decided, skipped = _decide(request, list(queryset.values_list("id", flat=True)), approve=True)
        self.message_user(request, f"Approved {decided} forget request(s) as {operator_name(request)}; execution queued."
                          + (f" {skipped} were no longer pending." if skipped else ""), messages.SUCCESS)

    @admin.action(description="Reject selected forget requests", permissions=["approve"])
    def reject_selected(self, request, queryset):
        decided, skipped = _decide(request, list(queryset.values_list("id", flat=True)), approve=False)
        self.message_user(request, f"Rejected {decided} forget request(s) as {operator_name(request)}."
                          + (f" {skipped} were no longer pending." if skipped else ""), messages.SUCCESS)

