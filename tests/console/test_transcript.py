"""The conversation page's transcript: every message with role, time, tool-call pairing, redaction
state, the memories derived from it (status badges) and the entities it mentions; memory sources
link into it at the right page."""
import pytest
from django.urls import reverse

from console import transcript
from conversations.services import conversation_create, messages_append, messages_redact
from entities.services import entity_upsert
from memory.models import Memory, MemorySource
from tests.console.helpers import make_operator

pytestmark = pytest.mark.django_db

PREFERENCE = "Please always send maintenance advice sorted by urgency"


@pytest.fixture
def console(client):
    client.force_login(make_operator())
    return client


@pytest.fixture
def chat(org, django_capture_on_commit_callbacks):
    entity_upsert(org=org, type="asset", external_id="T-100", name="Tractor T-100", aliases=["T-100"])
    conversation, _ = conversation_create(org=org, owner_user="u1", external_id="s-1", title="maintenance")
    with django_capture_on_commit_callbacks(execute=True):  # extraction runs on commit
        rows = messages_append(conversation=conversation, user_id="u1", messages=[
            {"role": "user", "content": PREFERENCE},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call-7", "name": "asset_status",
                                                                  "arguments": {"id": "T-100"}}]},
            {"role": "tool", "tool_call_id": "call-7", "content": '{"asset": "T-100", "hours": 1200}'},
            {"role": "assistant", "content": "T-100 has 1200 hours; the oil change is due."},
            {"role": "tool", "tool_call_id": "call-missing", "content": "orphan result"},
            {"role": "user", "content": "My home address is 12 Elm Street"},
        ])
    return conversation, rows


def test_transcript_shows_roles_pairing_memories_and_mentions(console, org, chat):
    conversation, rows = chat
    derived = Memory.objects.filter(sources__message=rows[0]).exclude(kind="episode").first()
    assert derived is not None  # the rule-based extractor kept the preference
    messages_redact(message_ids=[rows[5].id])
    response = console.get(reverse("admin:conversations_conversation_change", args=[conversation.id]))
    html = response.content.decode()
    assert 'id="transcript"' in html and "Transcript (6 messages)" in html
    assert PREFERENCE in html and "12 Elm Street" not in html  # redacted text is never shown
    first = html[html.index(f'id="message-{rows[0].id}"'):html.index(f'id="message-{rows[1].id}"')]
    assert "<strong class=\"role\">user</strong>" in first
    assert f'href="/admin/memory/memory/{derived.id}/change/"' in first
    assert f'console-badge {derived.status}' in first
    call = html[html.index(f'id="message-{rows[1].id}"'):html.index(f'id="message-{rows[2].id}"')]
    assert "asset_status" in call and f"#{rows[2].seq}" in call  # the call names the message with its result
    result = html[html.index(f'id="message-{rows[2].id}"'):html.index(f'id="message-{rows[3].id}"')]
    assert "result of <code>asset_status</code>" in result and f"#{rows[1].seq}" in result
    mention = html[html.index(f'id="message-{rows[3].id}"'):html.index(f'id="message-{rows[4].id}"')]
    assert "asset:T-100" in mention
    orphan = html[html.index(f'id="message-{rows[4].id}"'):html.index(f'id="message-{rows[5].id}"')]
    assert "unpaired" in orphan
    redacted = html[html.index(f'id="message-{rows[5].id}"'):]
    assert "console-badge forgotten\">redacted" in redacted
    assert "PER-USER ACCESS" in html.upper() and "ACCESSS" not in html.upper()


def test_memory_sources_link_to_the_transcript_page_that_holds_the_message(console, org, chat, monkeypatch):
    conversation, rows = chat
    monkeypatch.setattr(transcript, "PAGE_SIZE", 2)
    source = MemorySource.objects.filter(message=rows[5]).select_related("memory").first()
    assert source is not None
    page = console.get(reverse("admin:memory_memory_change", args=[source.memory_id])).content.decode()
    link = (reverse("admin:conversations_conversation_change", args=[conversation.id])
            + f"?message={rows[5].id}#message-{rows[5].id}")
    assert link.replace("&", "&amp;") in page or link in page
    response = console.get(link.split("#")[0])
    assert response.context["transcript_page"].number == 3  # message #6 of 6, two per page
    assert f'id="message-{rows[5].id}"' in response.content.decode()
    listing = console.get(reverse("admin:memory_memory_changelist")).content.decode()
    assert f"?message={rows[5].id}#message-{rows[5].id}" in listing  # the list's source column links there too


def test_message_list_shows_text_and_the_extraction_filter(console, org, chat):
    _, rows = chat
    response = console.get(reverse("admin:conversations_message_changelist"))
    assert PREFERENCE[:40] in response.content.decode()
    pending = console.get(reverse("admin:conversations_message_changelist") + "?extraction=pending")
    assert list(pending.context["cl"].result_list) == []  # extraction ran on commit for every message
