"""A conversation's transcript for operators: every message with its role, time, tool-call pairing,
redaction state, the memories derived from it (with their status) and the entities it mentions.

Lives in the console because it joins conversations with memory (conversations never imports memory).
"""
from __future__ import annotations

from collections import defaultdict

from django.core.paginator import Paginator

from conversations.models import Conversation, EntityMention, Message
from memory.models import MemorySource

PAGE_SIZE = 100


def _call_name(call: dict) -> str:
    return str(call.get("name") or (call.get("function") or {}).get("name") or "?")


def transcript_page(*, conversation: Conversation, page: str | int | None = None, message_id: str | None = None):
    """(page object, rows). `message_id` opens the page that holds that message (links from memory sources)."""
    messages = Message.objects.filter(conversation=conversation).order_by("seq")
    if message_id and str(message_id).isdigit():
        seq = messages.filter(id=int(message_id)).values_list("seq", flat=True).first()
        if seq is not None:
            page = (seq - 1) // PAGE_SIZE + 1
    page_obj = Paginator(messages.only("id", "seq", "role", "content", "tool_call_id", "tool_calls", "occurred_at",
                                       "user_id", "redacted", "do_not_remember", "token_count", "external_ref",
                                       "extracted_at"), PAGE_SIZE).get_page(page)
    rows = list(page_obj.object_list)
    ids = [m.id for m in rows]
    derived = defaultdict(dict)
    for source in MemorySource.objects.filter(message_id__in=ids).select_related("memory").order_by("memory_id"):
        derived[source.message_id][source.memory_id] = source.memory
    mentions = defaultdict(list)
    for mention in EntityMention.objects.filter(message_id__in=ids).select_related("entity").order_by("id"):
        mentions[mention.message_id].append(mention)
    # Tool-call pairing across pages: which assistant message issued a call id, which tool message answered it.
    issued: dict[str, tuple[int, int, str]] = {}
    for mid, seq, calls in Message.objects.filter(conversation=conversation, tool_calls__isnull=False) \
            .values_list("id", "seq", "tool_calls"):
        for call in calls or []:
            if isinstance(call, dict) and call.get("id"):
                issued[str(call["id"])] = (mid, seq, _call_name(call))
    answered = {tool_call_id: (mid, seq) for mid, seq, tool_call_id in
                Message.objects.filter(conversation=conversation, role="tool", tool_call_id__isnull=False)
                .values_list("id", "seq", "tool_call_id")}
    out = []
    for m in rows:
        calls = [{"id": str(c.get("id")), "name": _call_name(c), "result": answered.get(str(c.get("id")))}
                 for c in (m.tool_calls or []) if isinstance(c, dict)]
        out.append({"message": m, "calls": calls,
                    "answers": issued.get(m.tool_call_id) if m.tool_call_id else None,
                    "pending": m.extracted_at is None and m.role in ("user", "assistant") and not m.redacted,
                    "unpaired": bool(m.role == "tool" and m.tool_call_id and m.tool_call_id not in issued),
                    "memories": list(derived[m.id].values()), "mentions": mentions[m.id]})
    return page_obj, out
