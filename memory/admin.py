"""Operator console pages for memories and forget requests.

Nothing here writes a memory row: the change form saves through `memory_update`, the extra pages and
actions call `memory_invalidate`, `forget_request_create` and `forget_request_decide`. The services
record the AuditEvents (actor_kind "operator"); this module logs ids only, never content.
"""
import difflib
import logging
import re
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
from django.utils.text import Truncator

from memory.models import EntityLink, ForgetRequest, ForgetRule, Memory, MemorySource, MemoryVersion
from memory.services.forget import forget_request_create, forget_request_decide
from memory.services.memories import memory_invalidate, memory_update
from tenancy.admin import TextInputFilter

logger = logging.getLogger(__name__)

CHAIN_LIMIT = 100  # supersede chains longer than this are cut (and flagged) rather than walked forever
DETAIL_ROWS = 50  # rows of a related list shown on a detail page; the full list links to a paginated changelist


def _operator(request) -> str:
    return request.user.get_username()


def _snippet(memory: Memory, length: int = 90) -> str:
    if memory.status == "forgotten" or not memory.content:
        return "(redacted)"
    return Truncator(memory.content).chars(length)


# --------------------------------------------------------------------------- detail-page helpers
_TOKEN = re.compile(r"[A-Za-z0-9_]+|\s+|.", re.S)  # Latin words whole, every CJK character on its own


def version_diff(old: str, new: str) -> list[tuple[str, str]]:
    """(op, text) segments, op in equal/delete/insert. Rendered by the template, which escapes the text.

    Whitespace alone between two changes is folded into them, so "natural gas" → "propane" reads as one
    replacement instead of alternating word-by-word fragments."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    raw = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            raw.append(("equal", "".join(b[j1:j2])))
            continue
        if i2 > i1:
            raw.append(("delete", "".join(a[i1:i2])))
        if j2 > j1:
            raw.append(("insert", "".join(b[j1:j2])))
    segments: list[tuple[str, str]] = []
    deleted, inserted = [], []

    def flush():
        if deleted:
            segments.append(("delete", "".join(deleted)))
        if inserted:
            segments.append(("insert", "".join(inserted)))
        deleted.clear()
        inserted.clear()

    for n, (op, text) in enumerate(raw):
        between_changes = (deleted or inserted) and n + 1 < len(raw) and raw[n + 1][0] != "equal"
        if op == "equal" and text.isspace() and between_changes:
            deleted.append(text)
            inserted.append(text)
        elif op == "equal":
            flush()
            segments.append((op, text))
        else:
            (deleted if op == "delete" else inserted).append(text)
    flush()
    return segments


def supersede_chain(memory: Memory) -> dict:
    """What this memory replaced (transitively, walking `supersedes`) and what replaced it (following
    `superseded_by`). Rows written by a buggy migration could form a cycle: a visited set stops the walk."""
    seen = {memory.id}
    older: list[Memory] = []
    frontier = [memory.id]
    cut = False
    while frontier:
        rows = list(Memory.objects.filter(superseded_by_id__in=frontier).exclude(id__in=seen).order_by("created_at", "id"))
        if len(seen) + len(rows) > CHAIN_LIMIT:
            rows, cut = rows[: max(0, CHAIN_LIMIT - len(seen))], True
        older.extend(rows)
        seen.update(r.id for r in rows)
        frontier = [r.id for r in rows]
        if cut:
            break
    newer: list[Memory] = []
    cycle = False
    next_id = memory.superseded_by_id
    while next_id is not None:
        if next_id in seen:
            cycle = True
            break
        if len(seen) >= CHAIN_LIMIT:
            cut = True
            break
        row = Memory.objects.filter(id=next_id).first()
        if row is None:
            break
        newer.append(row)
        seen.add(row.id)
        next_id = row.superseded_by_id
    older.sort(key=lambda m: (m.created_at, m.id))
    return {"older": older, "newer": newer, "cycle": cycle, "cut": cut}


def _versions_with_diffs(memory: Memory) -> list[dict]:
    sources = defaultdict(list)
    for source in MemorySource.objects.filter(memory=memory).select_related("message", "conversation").order_by("id"):
        sources[source.version_id].append(source)
    rows, previous = [], None
    for version in MemoryVersion.objects.filter(memory=memory).order_by("n"):
        diff = None
        if previous is not None and not (version.redacted or previous.redacted):
            diff = version_diff(previous.content, version.content)
        rows.append({"version": version, "diff": diff, "unchanged": diff is not None and previous.content == version.content,
                     "sources": sources.get(version.id, [])})
        previous = version
    return list(reversed(rows))  # newest first


# --------------------------------------------------------------------------- forms of the extra pages
class EditContentForm(forms.Form):
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 5, "cols": 90}), max_length=settings.MAX_MEMORY_CHARS)
    reason = forms.ChoiceField(choices=[("UPDATE", "UPDATE – the fact changed"), ("CORRECT", "CORRECT – it was wrong")])


class InvalidateForm(forms.Form):
    reason = forms.CharField(max_length=50, initial="operator", help_text="Stored on the memory and in the audit log.")


class ForgetForm(forms.Form):
    include_messages = forms.BooleanField(required=False, help_text="Also redact the source messages and whatever else "
                                                                    "was derived from them.")


# --------------------------------------------------------------------------- list filters
class UserFilter(TextInputFilter):
    title, parameter_name, lookup = "user id", "user_id", "user_id"


class EntityFilter(TextInputFilter):
    title, parameter_name, lookup = "entity id", "entity", "entity_links__entity_id"

    def queryset(self, request, queryset):
        value = (self.value() or "").strip()
        return queryset.filter(entity_links__entity_id=int(value)) if value.isdigit() else queryset


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    list_display = ["id", "org", "user_link", "kind", "assertion", "status", "snippet", "version", "projection",
                    "created_at"]
    list_display_links = ["id", "snippet"]
    list_filter = ["org", UserFilter, "kind", "status", "assertion", "scope", "created_by", EntityFilter]
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

    # ---------------------------------------------------------------- list
    @admin.display(description="user", ordering="user_id")
    def user_link(self, obj):
        url = reverse("admin:memory_memory_changelist")
        return format_html('<a href="{}?org__id__exact={}&user_id={}">{}</a>', url, obj.org_id, obj.user_id, obj.user_id)

    @admin.display(description="content")
    def snippet(self, obj):
        return _snippet(obj)

    @admin.display(description="projected")
    def projection(self, obj):
        return "✔" if obj.projected_version >= obj.version else f"lag ({obj.projected_version}/{obj.version})"

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
            extra_context.update({
                "versions": _versions_with_diffs(memory),
                "chain": supersede_chain(memory),
                "entity_links": links,
                "forget_requests": ForgetRequest.objects.filter(memory=memory).order_by("-created_at")[:DETAIL_ROWS],
                "forget_request_total": ForgetRequest.objects.filter(memory=memory).count(),
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
                     + "; ".join(f"{e.memory.id} ({e.why}): {_snippet(e.memory, 60)}" for e in echoes) + ".") if echoes else ""
        return self._render_action(
            request, memory, form, title=f"Forget memory {memory.id}",
            intro="Forgetting redacts every version, deletes the vectors and cache entries and leaves a fingerprint "
                  "rule so extraction cannot bring it back. It cannot be undone." + echo_note,
            buttons=[("approve_now", "Forget now", "default"), ("pending", "Create a request for a second operator", "")])

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
        return queryset.filter(memory_id=int(value)) if value.isdigit() else queryset


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
    list_display = ["id", "org", "subject_user", "target", "memory_link", "matched", "status", "requested_by",
                    "requested_via", "created_at", "operator", "decided_at", "executed_at", "result"]
    list_filter = ["status", "target", "requested_via", "org", SubjectUserFilter, RequestMemoryFilter]
    list_select_related = ["org"]
    search_fields = ["subject_user", "requested_by", "operator"]
    list_per_page = 50
    actions = ["approve_selected", "reject_selected"]
    readonly_fields = ["org", "subject_user", "requested_by", "requested_via", "target", "memory", "matched_ids",
                       "echoes", "include_messages", "status", "operator", "created_at", "decided_at", "executed_at",
                       "result"]
    fields = readonly_fields + ["query"]

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
            (reverse("admin:memory_memory_change", args=[e.memory.id]), e.memory.id, e.why, e.of, _snippet(e.memory))
            for e in found))

    @admin.display(description="memory")
    def memory_link(self, obj):
        if obj.memory_id is None:
            return "—"
        return format_html('<a href="{}">{}</a>', reverse("admin:memory_memory_change", args=[obj.memory_id]), obj.memory_id)

    @admin.display(description="memories")
    def matched(self, obj):
        return len(obj.matched_ids or [])

    def get_readonly_fields(self, request, obj=None):
        return self.fields  # the query text is shown to the deciding operator, never editable

    def has_add_permission(self, request):
        return False  # requests come from the API and the console's forget pages

    def has_delete_permission(self, request, obj=None):
        return False

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = {**(extra_context or {}), "show_save": False, "show_save_and_continue": False,
                         "show_save_and_add_another": False, "show_delete": False}
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
        if not self.has_change_permission(request, obj):
            raise PermissionDenied
        approve = "approve" in request.POST
        decided, _ = _decide(request, [obj.id], approve=approve)
        if decided:
            messages.success(request, f"Forget request {obj.id} {'approved' if approve else 'rejected'} by {_operator(request)}.")
        else:
            messages.warning(request, f"Forget request {obj.id} was no longer pending.")
        return HttpResponseRedirect(reverse("admin:memory_forgetrequest_change", args=[obj.id]))

    @admin.action(description="Approve selected forget requests", permissions=["change"])
    def approve_selected(self, request, queryset):
        decided, skipped = _decide(request, list(queryset.values_list("id", flat=True)), approve=True)
        self.message_user(request, f"Approved {decided} forget request(s) as {_operator(request)}; execution queued."
                          + (f" {skipped} were no longer pending." if skipped else ""), messages.SUCCESS)

    @admin.action(description="Reject selected forget requests", permissions=["change"])
    def reject_selected(self, request, queryset):
        decided, skipped = _decide(request, list(queryset.values_list("id", flat=True)), approve=False)
        self.message_user(request, f"Rejected {decided} forget request(s) as {_operator(request)}."
                          + (f" {skipped} were no longer pending." if skipped else ""), messages.SUCCESS)


# --------------------------------------------------------------------------- read-only record browsers
class ReadOnlyAdmin(admin.ModelAdmin):
    list_per_page = 50

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(MemoryVersion)
class MemoryVersionAdmin(ReadOnlyAdmin):
    list_display = ["memory", "n", "reason", "created_by", "actor", "redacted", "created_at"]
    list_filter = ["reason", "created_by", "redacted"]
    raw_id_fields = ["memory"]


@admin.register(MemorySource)
class MemorySourceAdmin(ReadOnlyAdmin):
    list_display = ["memory", "version", "message", "conversation", "external_ref"]
    raw_id_fields = ["memory", "version", "message", "conversation"]


@admin.register(EntityLink)
class EntityLinkAdmin(ReadOnlyAdmin):
    list_display = ["memory", "entity"]
    raw_id_fields = ["memory", "entity"]


@admin.register(ForgetRule)
class ForgetRuleAdmin(ReadOnlyAdmin):
    list_display = ["id", "org", "user_id", "fingerprint", "slot_key", "entity", "request", "created_at"]
    list_filter = ["org"]
    exclude = ["embedding"]
