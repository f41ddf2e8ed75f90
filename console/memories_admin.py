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
from django.db import IntegrityError
from django.db.models import Count
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from console.forget_admin import APPROVE_PERMISSION, forget_request_submit, operator_name
from console.memory_detail import (
    forget_requests_for,
    memory_end,
    supersede_chain,
    versions_with_diffs,
)
from console.memory_list import (
    EntityFilter,
    MemoryListColumns,
    ProjectionFilter,
    UserFilter,
    snippet,
)
from memory.choices import MemoryStatus
from memory.models import EntityLink, Memory
from memory.services.forget import forget_request_create
from memory.services.memories import memory_invalidate, memory_update
from tenancy.models import AuditEvent

logger = logging.getLogger(__name__)

DETAIL_ROWS = 50  # rows of a related list shown on a detail page; the full list links to a paginated changelist


# --------------------------------------------------------------------------- forms of the extra pages
# Each action page's form carries the page's words: its title ({id}: the memory), intro and buttons.
class EditContentForm(forms.Form):
    title, intro = "Edit content of memory {id}", "Saving adds a new version; earlier versions are kept."
    buttons = [("save", "Save as new version", "default")]

    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 5, "cols": 90}), max_length=settings.MAX_MEMORY_CHARS)
    reason = forms.ChoiceField(choices=[("UPDATE", "UPDATE – the fact changed"), ("CORRECT", "CORRECT – it was wrong")])


class InvalidateForm(forms.Form):
    title, intro = "Invalidate memory {id}", "The memory stops being recalled; its versions stay for audit."
    buttons = [("invalidate", "Invalidate", "default")]

    reason = forms.CharField(max_length=50, initial="operator", help_text="Stored on the memory and in the audit log.")


class ForgetForm(forms.Form):
    title = "Forget memory {id}"
    intro = ("Forgetting redacts every version, deletes the vectors and cache entries and leaves a fingerprint rule so "
             "extraction cannot bring it back. It cannot be undone.")

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
        if obj is not None and obj.status == MemoryStatus.ACTIVE:
            return [f for f in every if f not in self.editable_fields]
        return every

    @admin.display(description="content")
    def content_display(self, obj):
        if obj.status == MemoryStatus.FORGOTTEN or not obj.content:
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
            memory_update(memory_id=obj.pk, content=current.content, actor=operator_name(request), created_by="operator",
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
                "show_save": memory.status == MemoryStatus.ACTIVE,
                "show_save_and_continue": memory.status == MemoryStatus.ACTIVE,
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

    def _render_action(self, request, memory, form, *, note: str = "", buttons=None):
        context = {**self.admin_site.each_context(request), "title": form.title.format(id=memory.id),
                   "intro": form.intro + note, "form": form, "object": memory, "opts": self.opts,
                   "buttons": form.buttons if buttons is None else buttons,
                   "cancel_url": reverse("admin:memory_memory_change", args=[memory.id])}
        return TemplateResponse(request, "admin/console/action_form.html", context)

    def _back(self, memory):
        return HttpResponseRedirect(reverse("admin:memory_memory_change", args=[memory.id]))

    def _done(self, request, memory, message: str):
        messages.success(request, message)
        return self._back(memory)

    def edit_content_view(self, request, object_id):
        memory = self._memory_for_action(request, object_id)
        if memory.status != MemoryStatus.ACTIVE:
            messages.error(request, f"Memory {memory.id} is {memory.status}; only active memories can be edited.")
            return self._back(memory)
        form = EditContentForm(request.POST or None, initial={"content": memory.content})
        if request.method == "POST" and form.is_valid():
            try:
                updated = memory_update(memory_id=memory.id, content=form.cleaned_data["content"], actor=operator_name(request),
                                        created_by="operator", reason=form.cleaned_data["reason"])
            except IntegrityError:
                form.add_error("content", "Another active memory of this user and kind already has this content.")
            except ValueError as exc:
                form.add_error(None, str(exc))
            else:
                logger.info("console memory content edit id=%s v=%s", updated.id, updated.version)
                return self._done(request, memory, f"Memory {updated.id} is now at version {updated.version}.")
        return self._render_action(request, memory, form)

    def invalidate_view(self, request, object_id):
        memory = self._memory_for_action(request, object_id)
        form = InvalidateForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            memory_invalidate(memory_id=memory.id, reason=form.cleaned_data["reason"], actor=operator_name(request),
                              actor_kind="operator")
            return self._done(request, memory, f"Memory {memory.id} invalidated.")
        return self._render_action(request, memory, form)

    def forget_view(self, request, object_id):
        memory = self._memory_for_action(request, object_id)
        form = ForgetForm(request.POST or None)
        may_approve = request.user.has_perm(APPROVE_PERMISSION)
        if request.method == "POST" and "approve_now" in request.POST and not may_approve:
            raise PermissionDenied  # before anything is written: a viewer may only ask
        if request.method == "POST" and form.is_valid():
            return forget_request_submit(request, approved_note=f"memory {memory.id} is being forgotten.",
                                         org=memory.org, subject_user=memory.user_id, target="memory",
                                         memory_ids=[memory.id], include_messages=form.cleaned_data["include_messages"])
        from memory.services.forget_echoes import forget_echoes

        echoes = forget_echoes(org_id=memory.org_id, user_id=memory.user_id, memory_ids=[memory.id])
        echo_note = (" These episodes restate it and are removed with it: "
                     + "; ".join(f"{e.memory.id} ({e.why}): {snippet(e.memory, 60)}" for e in echoes) + ".") if echoes else ""
        return self._render_action(request, memory, form, note=echo_note,
                                   buttons=([("approve_now", "Forget now", "default")] if may_approve else [])
                                   + [("pending", "Create a request for a second operator", "")])

    # ---------------------------------------------------------------- bulk actions
    @admin.action(description="Invalidate selected memories", permissions=["change"])
    def invalidate_selected(self, request, queryset):
        done = 0
        for memory_id in queryset.filter(status=MemoryStatus.ACTIVE).values_list("id", flat=True):
            memory_invalidate(memory_id=memory_id, reason="operator", actor=operator_name(request), actor_kind="operator")
            done += 1
        self.message_user(request, f"Invalidated {done} memory(ies).", messages.SUCCESS)

    @admin.action(description="Request forgetting of selected memories (pending approval)", permissions=["change"])
    def forget_selected(self, request, queryset):
        groups = defaultdict(list)
        for memory in queryset.exclude(status=MemoryStatus.FORGOTTEN).select_related("org"):
            groups[(memory.org, memory.user_id)].append(memory.id)
        created = [forget_request_create(org=org, subject_user=user_id, requested_by=operator_name(request), target="memory",
                                         memory_ids=ids, via="console").id for (org, user_id), ids in groups.items()]
        self.message_user(request, f"Created forget request(s) {', '.join(map(str, created)) or '—'}; approve them under "
                                   "Forget requests.", messages.SUCCESS)

