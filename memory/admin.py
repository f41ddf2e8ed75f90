"""Operator console pages for memories and forget requests.

Nothing here writes a memory row: the change form saves through `memory_update`, the extra pages and
actions call `memory_invalidate`, `forget_request_create` and `forget_request_decide`. The services
record the AuditEvents (actor_kind "operator"); this module logs ids only, never content.
"""
import logging
from collections import defaultdict

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from memory.admin_detail import (  # noqa: F401  (version_diff and supersede_chain are imported from here by tests)
    forget_requests_for, forget_requests_matching, memory_end, supersede_chain, version_diff, versions_with_diffs)
from memory.admin_list import EntityFilter, MemoryListColumns, ProjectionFilter, UserFilter, snippet
from memory.models import EntityLink, ForgetRequest, Memory
from memory.services.forget import forget_request_create, forget_request_decide
from memory.services.memories import memory_invalidate, memory_update
from tenancy.admin import TextInputFilter
from tenancy.models import AuditEvent

logger = logging.getLogger(__name__)

DETAIL_ROWS = 50  # rows of a related list shown on a detail page; the full list links to a paginated changelist
APPROVE_PERMISSION = "memory.approve_forgetrequest"


def _operator(request) -> str:
    return request.user.get_username()


# --------------------------------------------------------------------------- forms of the extra pages
class EditContentForm(forms.Form):
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 5, "cols": 90}), max_length=settings.MAX_MEMORY_CHARS)
    reason = forms.ChoiceField(choices=[("UPDATE", "UPDATE – the fact changed"), ("CORRECT", "CORRECT – it was wrong")])


class InvalidateForm(forms.Form):
    reason = forms.CharField(max_length=50, initial="operator", help_text="Stored on the memory and in the audit log.")


class ForgetForm(forms.Form):
    include_messages = forms.BooleanField(required=False, help_text="Also redact the source messages and whatever else "
                                                                    "was derived from them.")


@admin.register(Memory)
class MemoryAdmin(MemoryListColumns, admin.ModelAdmin):
    # Nine columns that fit 1280 px beside the filters: pairs share a cell (org/user, kind/assertion,
    # version/projection/created).
    list_display = ["id", "owner", "kind_assertion", "subject", "status_badge", "snippet", "source", "superseded_by_link",
                    "version_projection"]
    list_display_links = ["id", "snippet"]
    list_filter = ["org", UserFilter, "kind", "status", "assertion", "scope", "created_by", ProjectionFilter, EntityFilter]
    list_select_related = ["org"]
    search_fields = ["content", "slot_key", "user_id"]
    search_help_text = "Searches content, slot key and user id."
    list_per_page = 50
    list_max_show_all = 1000
    actions = ["invalidate_selected", "forget_selected"]
    editable_fields = ("importance", "valid_from", "valid_to")
    fieldsets = [
        (None, {"fields": ["org", "user_id", "scope", "conversation", "kind", "assertion", "slot_key", "status",
                           "content_display"]}),
        ("Validity and weight (saving adds a version through memory_update)",
         {"fields": ["importance", "valid_from", "valid_to", "occurred_at"]}),
        ("Lifecycle", {"classes": ["collapse"], "fields": ["version", "projected_version", "created_by", "created_at", "updated_at",
                                  "superseded_by", "invalidated_at", "invalid_reason", "last_accessed_at",
                                  "access_count"]}),
    ]

    def changelist_view(self, request, extra_context=None):
        response = super().changelist_view(request, extra_context)
        cl = getattr(response, "context_data", {}).get("cl") if hasattr(response, "context_data") else None
        if cl is not None:
            # Totals of the current filter, by status: the paginator shows the count, this shows the mix.
            response.context_data["status_totals"] = list(
                cl.queryset.order_by().values("status").annotate(n=Count("id")).order_by("status"))
        return response

    # ---------------------------------------------------------------- change form (read-mostly)
    def has_add_permission(self, request):
        return False  # memories come from extraction and the API, through memory_write

    def has_delete_permission(self, request, obj=None):
        return False  # deletion is forgetting: use the forget action

    def get_readonly_fields(self, request, obj=None):
        every = [f for fieldset in self.fieldsets for f in fieldset[1]["fields"]]
        if obj is not None and obj.status == "active":
            return [f for f in every if f not in self.editable_fields]
        return every

    @admin.display(description="content")
    def content_display(self, obj):
        if obj.status == "forgotten" or not obj.content:
            return format_html("<em>{}</em>", "(redacted)")
        return format_html('<div class="console-content">{}</div>', obj.content)

    def save_model(self, request, obj, form, change):
        """Never obj.save(): an edit becomes a new version through the service (projections and audit follow)."""
        if not change or not form.changed_data:
            return
        current = Memory.objects.get(pk=obj.pk)
        values = {name: form.cleaned_data.get(name) for name in self.editable_fields if name in form.changed_data}
        cleared = [name for name, value in values.items() if value is None]
        if cleared:
            messages.warning(request, f"Clearing {', '.join(cleared)} is not supported by memory_update; kept the old value.")
        try:
            memory_update(memory_id=obj.pk, content=current.content, actor=_operator(request), created_by="operator",
                          reason="UPDATE", **{k: v for k, v in values.items() if v is not None})
        except ValueError as exc:  # superseded or forgotten between the page load and this save
            messages.error(request, f"Memory {obj.pk} was not changed: {exc}.")
            return
        logger.info("console memory update id=%s fields=%s", obj.pk, sorted(values))

    def save_related(self, request, form, formsets, change):
        return  # no inlines or m2m are edited here

    def change_view(self, request, object_id, form_url="", extra_context=None):
        memory = self.get_object(request, object_id)
        extra_context = extra_context or {}
        if memory is not None:
            links = EntityLink.objects.filter(memory=memory).select_related("entity").order_by("entity__type", "entity__external_id")
            events = list(AuditEvent.objects.filter(target_type="memory", target_id=str(memory.id))
                          .exclude(action="memory.update").order_by("at", "id"))
            requests = forget_requests_for(memory)
            extra_context.update({
                "versions": versions_with_diffs(memory, events),
                "end": memory_end(memory, events),
                "chain": supersede_chain(memory),
                "entity_links": links,
                "forget_requests": requests[:DETAIL_ROWS],
                "forget_request_total": requests.count(),
                "memory": memory,
                "show_save_and_add_another": False,
                "show_delete": False,
                # Only an active memory has editable fields; a Save button on the others would do nothing.
                "show_save": memory.status == "active",
                "show_save_and_continue": memory.status == "active",
            })
        return super().change_view(request, object_id, form_url, extra_context)

    # ---------------------------------------------------------------- extra pages
    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("<int:object_id>/edit-content/", wrap(self.edit_content_view), name="memory_memory_edit_content"),
            path("<int:object_id>/invalidate/", wrap(self.invalidate_view), name="memory_memory_invalidate"),
            path("<int:object_id>/forget/", wrap(self.forget_view), name="memory_memory_forget"),
        ] + super().get_urls()

    def _memory_for_action(self, request, object_id) -> Memory:
        memory = self.get_object(request, str(object_id))
        if memory is None:
            raise Http404
        if not self.has_change_permission(request, memory):
            raise PermissionDenied
        return memory

    def _render_action(self, request, memory, form, *, title, intro, buttons):
        context = {**self.admin_site.each_context(request), "title": title, "intro": intro, "form": form,
                   "object": memory, "opts": self.opts, "buttons": buttons,
                   "cancel_url": reverse("admin:memory_memory_change", args=[memory.id])}
        return TemplateResponse(request, "admin/console/action_form.html", context)

    def _back(self, memory):
        return HttpResponseRedirect(reverse("admin:memory_memory_change", args=[memory.id]))

    def edit_content_view(self, request, object_id):
        memory = self._memory_for_action(request, object_id)
        if memory.status != "active":
            messages.error(request, f"Memory {memory.id} is {memory.status}; only active memories can be edited.")
            return self._back(memory)
        form = EditContentForm(request.POST or None, initial={"content": memory.content})
        if request.method == "POST" and form.is_valid():
            try:
                updated = memory_update(memory_id=memory.id, content=form.cleaned_data["content"], actor=_operator(request),
                                        created_by="operator", reason=form.cleaned_data["reason"])
            except IntegrityError:
                form.add_error("content", "Another active memory of this user and kind already has this content.")
            except ValueError as exc:
                form.add_error(None, str(exc))
            else:
                logger.info("console memory content edit id=%s v=%s", updated.id, updated.version)
                messages.success(request, f"Memory {updated.id} is now at version {updated.version}.")
                return self._back(memory)
        return self._render_action(request, memory, form, title=f"Edit content of memory {memory.id}",
                                   intro="Saving adds a new version; earlier versions are kept.",
                                   buttons=[("save", "Save as new version", "default")])

    def invalidate_view(self, request, object_id):
        memory = self._memory_for_action(request, object_id)
        form = InvalidateForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            memory_invalidate(memory_id=memory.id, reason=form.cleaned_data["reason"], actor=_operator(request),
                              actor_kind="operator")
            messages.success(request, f"Memory {memory.id} invalidated.")
            return self._back(memory)
        return self._render_action(request, memory, form, title=f"Invalidate memory {memory.id}",
                                   intro="The memory stops being recalled; its versions stay for audit.",
                                   buttons=[("invalidate", "Invalidate", "default")])

    def forget_view(self, request, object_id):
        memory = self._memory_for_action(request, object_id)
        form = ForgetForm(request.POST or None)
        may_approve = request.user.has_perm(APPROVE_PERMISSION)
        if request.method == "POST" and "approve_now" in request.POST and not may_approve:
            raise PermissionDenied  # before anything is written: a viewer may only ask
        if request.method == "POST" and form.is_valid():
            operator = _operator(request)
            forget_request = forget_request_create(
                org=memory.org, subject_user=memory.user_id, requested_by=operator, target="memory",
                memory_ids=[memory.id], include_messages=form.cleaned_data["include_messages"], via="console")
            if "approve_now" in request.POST:
                # The operator who asks is also the one who decides; execution is queued on commit.
                forget_request_decide(request=forget_request, approve=True, operator=operator)
                messages.success(request, f"Forget request {forget_request.id} approved; memory {memory.id} is being forgotten.")
            else:
                messages.success(request, f"Forget request {forget_request.id} created and waits for approval.")
            return HttpResponseRedirect(reverse("admin:memory_forgetrequest_change", args=[forget_request.id]))
        from memory.services.forget_echoes import forget_echoes

        echoes = forget_echoes(org_id=memory.org_id, user_id=memory.user_id, memory_ids=[memory.id])
        echo_note = (" These episodes restate it and are removed with it: "
                     + "; ".join(f"{e.memory.id} ({e.why}): {snippet(e.memory, 60)}" for e in echoes) + ".") if echoes else ""
        return self._render_action(
            request, memory, form, title=f"Forget memory {memory.id}",
            intro="Forgetting redacts every version, deletes the vectors and cache entries and leaves a fingerprint "
                  "rule so extraction cannot bring it back. It cannot be undone." + echo_note,
            buttons=([("approve_now", "Forget now", "default")] if may_approve else [])
            + [("pending", "Create a request for a second operator", "")])

    # ---------------------------------------------------------------- bulk actions
    @admin.action(description="Invalidate selected memories", permissions=["change"])
    def invalidate_selected(self, request, queryset):
        done = 0
        for memory_id in queryset.filter(status="active").values_list("id", flat=True):
            memory_invalidate(memory_id=memory_id, reason="operator", actor=_operator(request), actor_kind="operator")
            done += 1
        self.message_user(request, f"Invalidated {done} memory(ies).", messages.SUCCESS)

    @admin.action(description="Request forgetting of selected memories (pending approval)", permissions=["change"])
    def forget_selected(self, request, queryset):
        groups = defaultdict(list)
        for memory in queryset.exclude(status="forgotten").select_related("org"):
            groups[(memory.org, memory.user_id)].append(memory.id)
        created = [forget_request_create(org=org, subject_user=user_id, requested_by=_operator(request), target="memory",
                                         memory_ids=ids, via="console").id for (org, user_id), ids in groups.items()]
        self.message_user(request, f"Created forget request(s) {', '.join(map(str, created)) or '—'}; approve them under "
                                   "Forget requests.", messages.SUCCESS)


# --------------------------------------------------------------------------- forget requests
class SubjectUserFilter(TextInputFilter):
    title, parameter_name, lookup = "subject user", "subject_user", "subject_user"


class RequestMemoryFilter(TextInputFilter):
    title, parameter_name, lookup = "memory id", "memory", "memory_id"

    def queryset(self, request, queryset):
        value = (self.value() or "").strip()
        # The request's first memory (FK) or any memory it matched.
        return forget_requests_matching(int(value), queryset) if value.isdigit() else queryset


def _decide(request, ids, *, approve: bool) -> tuple[int, int]:
    decided = skipped = 0
    for request_id in ids:
        # The row lock serialises two operators deciding the same request; execution is queued on commit.
        with transaction.atomic():
            forget_request = ForgetRequest.objects.select_for_update().select_related("org").get(id=request_id)
            if forget_request.status != "pending":
                skipped += 1
                continue
            forget_request_decide(request=forget_request, approve=approve, operator=_operator(request))
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
        if obj.status in ("executed", "rejected") or obj.target == "user":
            return (obj.result or {}).get("echoes_forgotten", "—")
        from memory.services.forget_echoes import forget_echoes

        found = forget_echoes(org_id=obj.org_id, user_id=obj.subject_user, memory_ids=obj.matched_ids or [])
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
            messages.success(request, f"Forget request {obj.id} {'approved' if approve else 'rejected'} by {_operator(request)}.")
        else:
            messages.warning(request, f"Forget request {obj.id} was no longer pending.")
        return HttpResponseRedirect(reverse("admin:memory_forgetrequest_change", args=[obj.id]))

    @admin.action(description="Approve selected forget requests", permissions=["approve"])
    def approve_selected(self, request, queryset):
        decided, skipped = _decide(request, list(queryset.values_list("id", flat=True)), approve=True)
        self.message_user(request, f"Approved {decided} forget request(s) as {_operator(request)}; execution queued."
                          + (f" {skipped} were no longer pending." if skipped else ""), messages.SUCCESS)

    @admin.action(description="Reject selected forget requests", permissions=["approve"])
    def reject_selected(self, request, queryset):
        decided, skipped = _decide(request, list(queryset.values_list("id", flat=True)), approve=False)
        self.message_user(request, f"Rejected {decided} forget request(s) as {_operator(request)}."
                          + (f" {skipped} were no longer pending." if skipped else ""), messages.SUCCESS)


# The read-only record browsers (versions, sources, entity links, forget rules) register themselves there.
from memory import admin_records  # noqa: E402,F401
