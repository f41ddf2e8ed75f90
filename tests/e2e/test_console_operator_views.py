"""The operator's pages in a real browser: the dashboard's charts with data, resolving a conflict
from the queue (and finding it in the audit log), the transcript with derived memories, a forgotten
memory's page naming its request, and the memory list at 1280 px with every column in view."""
import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from console.models import MetricSample
from console.roles import APPROVER, VIEWER, ensure_roles
from conversations.services import conversation_create, messages_append
from memory.models import ForgetRequest, Memory
from memory.services.conflicts import conflict_record
from memory.services.forget import forget_request_create
from tenancy.services import org_get_or_create
from tests.console.helpers import make_operator, write
from tests.e2e.test_console_browser import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SMS = "Remind me about maintenance by SMS"
WECHAT = "Send maintenance reminders to my WeChat"
TWO_POINTS = re.compile(r"^[\d.]+,[\d.]+ [\d.]+,[\d.]+")
LIST_COLUMNS = ["ID", "ORG / USER", "KIND / ASSERTION", "SUBJECT (SLOT)", "STATUS", "CONTENT", "SOURCE", "SUPERSEDED BY",
                "VERSION / CREATED"]


def _role_login(page: Page, base_url: str, name: str, role: str) -> None:
    user = make_operator(name, password="op-pass-123", is_staff=True, is_superuser=False)
    user.groups.add(ensure_roles()[role])
    login(page, base_url, username=name)


def _samples() -> None:
    now = timezone.now()
    for minutes, lag, n in ((50, 6, 12), (40, 3, 30), (30, 1, 45), (20, 0, 60), (10, 0, 20)):
        buckets = [0, 0, n // 2, n, n, n, n, n, n, n, n, n]
        MetricSample.objects.create(
            at=now - timedelta(minutes=minutes), process="web:1",
            gauges={"projection_lag": lag, "extraction_backlog": lag // 2, "forget_pending": 1, "conflicts_open": 1,
                    "up": {"database": 1, "cache": 1, "broker": 1, "vector_index": 1}},
            routes={"POST api/v1/recall": [n, 0, 1 if minutes == 30 else 0, n * 0.03] + buckets,
                    "POST api/v1/conversations/<int:conversation_id>/messages": [n // 3, 1, 0, n * 0.01] +
                    [n // 3] * 12})


def test_dashboard_charts_and_conflict_resolution(live_server, page: Page, screenshot):
    org = org_get_or_create(slug="e2e-org")
    older = write(org, SMS, user_id="farmer-1", kind="preference").memory
    newer = write(org, WECHAT, user_id="farmer-1", kind="preference").memory
    conflict = conflict_record(older=older, newer=newer, score=0.63, signals={"subject": 0.63})
    _samples()
    _role_login(page, live_server.url, "approver", APPROVER)

    # The landing page is the dashboard, and every chart has a drawn series.
    expect(page.locator("h1")).to_have_text("Dashboard")
    for section in ("gauge-projection_lag", "gauge-extraction_backlog", "gauge-forget_pending", "gauge-conflicts_open",
                    "request-rate", "error-rate", "latency"):
        # A line of at least two points (a flat line has no height, so "visible" does not apply).
        expect(page.locator(f"#{section} svg polyline.series").first).to_have_attribute("points", TWO_POINTS)
    expect(page.locator("#dependencies rect.dep-cell.up").first).to_be_visible()
    expect(page.locator("#request-rate .console-legend")).to_contain_text("POST api/v1/recall")
    expect(page.locator("#endpoints")).to_contain_text("POST api/v1/recall")
    expect(page.locator("#records")).not_to_contain_text("Periodic tasks")  # Celery's tables: superusers only
    box = page.locator("#gauge-projection_lag svg polyline.series").first.bounding_box()
    assert box["width"] > 40  # 50 minutes of samples in the 6 h window: a line, not a dot
    screenshot("10-dashboard")

    # From the open-conflicts card into the queue; resolve by superseding the older.
    page.locator("#gauge-conflicts_open h2 a").click()
    card = page.locator(f"#conflict-{conflict.id}")
    expect(card.locator(".side.older")).to_contain_text(SMS)
    expect(card.locator(".side.newer")).to_contain_text(WECHAT)
    screenshot("11-conflict-queue")
    card.get_by_role("button", name=re.compile("Supersede the older")).click()
    expect(page.locator(".messagelist")).to_contain_text(f"memory {older.id} superseded by memory {newer.id}")
    expect(page.locator(f"#conflict-{conflict.id}")).to_have_count(0)
    assert Memory.objects.get(id=older.id).status == "superseded"

    # The audit log shows who resolved it.
    page.get_by_role("navigation", name="Console").get_by_role("link", name="Audit log").click()
    row = page.locator("#result_list tbody tr", has_text="conflict.supersede")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("approver")
    expect(row).to_contain_text(str(conflict.id))
    screenshot("12-audit-log-conflict")


def test_a_viewer_sees_the_queue_without_resolve_buttons(live_server, page: Page):
    org = org_get_or_create(slug="e2e-org")
    older = write(org, SMS, user_id="farmer-1", kind="preference").memory
    newer = write(org, WECHAT, user_id="farmer-1", kind="preference").memory
    conflict = conflict_record(older=older, newer=newer, score=0.63)
    request = forget_request_create(org=org, subject_user="farmer-1", requested_by="farmer-1", target="memory",
                                    memory_ids=[older.id], via="console")
    _role_login(page, live_server.url, "viewer", VIEWER)
    page.goto(f"{live_server.url}/admin/console/conflicts/")
    expect(page.locator(f"#conflict-{conflict.id}")).to_contain_text(SMS)
    expect(page.locator(f"#conflict-{conflict.id} button")).to_have_count(0)
    page.goto(f"{live_server.url}/admin/memory/forgetrequest/{request.id}/change/")
    expect(page.locator("#decide-form")).to_have_count(0)
    assert ForgetRequest.objects.get(id=request.id).status == "pending"


def test_transcript_forgotten_memory_and_the_memory_list(live_server, page: Page, screenshot, django_capture_on_commit_callbacks):
    org = org_get_or_create(slug="e2e-org")
    conversation, _ = conversation_create(org=org, owner_user="farmer-1", external_id="chat-1", title="维保")
    rows = messages_append(conversation=conversation, user_id="farmer-1", messages=[
        {"role": "user", "content": "以后给我的维保建议请按紧急程度从高到低排序。"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "asset_status", "arguments": {}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"hours": 1200}'},
        {"role": "user", "content": "我们农场在黑龙江齐齐哈尔。"},
    ])
    derived = Memory.objects.filter(sources__message=rows[0]).exclude(kind="episode").first()
    farm = Memory.objects.filter(sources__message=rows[3]).exclude(kind="episode").first()
    assert derived is not None and farm is not None
    # Forgotten through the API path (no FK on the request for a query target): matched ids only.
    request = forget_request_create(org=org, subject_user="farmer-1", requested_by="api:farmer-1", target="query",
                                    memory_ids=[farm.id], query="农场在哪里", include_messages=True, via="api")
    assert ForgetRequest.objects.get(id=request.id).status == "executed"
    old = write(org, "I like long maintenance reports", user_id="farmer-1", kind="preference", slot_key="pref:report").memory
    write(org, "Send me one-line maintenance summaries", user_id="farmer-1", kind="preference", slot_key="pref:report")
    make_operator()
    login(page, live_server.url)

    # The transcript: messages with roles, the tool call paired with its result, derived memories with badges.
    page.get_by_role("navigation", name="Console").get_by_role("link", name="Conversations").click()
    page.get_by_role("link", name="read").first.click()
    first = page.locator(f"#message-{rows[0].id}")
    expect(first.locator(".role")).to_have_text("user")
    expect(first.locator(".derived")).to_contain_text(f"memory {derived.id}")
    expect(first.locator(".derived .console-badge").first).to_have_text("active")
    expect(page.locator(f"#message-{rows[1].id} .tool-call")).to_contain_text("asset_status")
    expect(page.locator(f"#message-{rows[2].id} .tool-result")).to_contain_text(f"#{rows[1].seq}")
    expect(page.locator(f"#message-{rows[3].id}")).to_contain_text("redacted")
    expect(page.locator(f"#message-{rows[3].id} .derived .console-badge").first).to_have_text("forgotten")
    screenshot("13-transcript")

    # The forgotten memory's page names the request that ended it.
    page.goto(f"{live_server.url}/admin/memory/memory/{farm.id}/change/")
    expect(page.locator("#end")).to_contain_text(f"forget request {request.id}")
    expect(page.locator("#end")).to_contain_text("api:farmer-1")
    expect(page.locator("#forget-requests")).to_contain_text(f"request {request.id}")
    expect(page.locator("#versions tbody tr")).to_have_count(Memory.objects.get(id=farm.id).version)
    screenshot("14-forgotten-memory")
    # Its source links into the transcript at the message.
    page.goto(f"{live_server.url}/admin/memory/memory/{derived.id}/change/")
    page.locator("#versions a.transcript-link").first.click()
    expect(page).to_have_url(re.compile(rf"message={rows[0].id}#message-{rows[0].id}$"))

    # The memory list at 1280 px: every column header is inside the viewport, none clipped.
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/admin/memory/memory/")
    headers = page.locator("#result_list thead th")
    texts = [t.strip().upper() for t in headers.all_inner_texts()]
    for column in LIST_COLUMNS:
        assert any(column in t for t in texts), (column, texts)
    for i in range(headers.count()):
        box = headers.nth(i).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 1280, (texts[i], box)
    row = page.locator("#result_list tbody tr", has=page.locator(f"a[href$='/memory/{old.id}/change/']"))
    expect(row.locator("td.field-superseded_by_link a")).to_have_count(1)
    expect(row.locator("td.field-subject")).to_contain_text("pref:report")
    expect(row.locator("td.field-status_badge")).to_contain_text("superseded")
    path = screenshot("15-memory-list-1280")
    assert path.exists()
