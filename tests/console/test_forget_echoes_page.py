"""The console's forget pages list the echoes (episodes restating the memory) that approval removes."""
import pytest
from django.urls import reverse
from django.utils import timezone

from conversations.services import conversation_create, messages_append
from memory.models import Memory
from memory.services.forget import forget_request_create
from tests.console.helpers import make_operator

pytestmark = pytest.mark.django_db


@pytest.fixture
def console(client, db):
    client.force_login(make_operator())
    return client


def test_approval_page_lists_the_echoes_and_approval_removes_them(console, org, django_capture_on_commit_callbacks):
    conversation, _ = conversation_create(org=org, owner_user="u1", external_id="s1")
    now = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        messages_append(conversation=conversation, user_id="u1", messages=[
            {"role": "user", "content": "家里单元门的门禁密码是739214。", "occurred_at": now},
            {"role": "assistant", "content": "好的，记下了：单元门门禁密码 739214。", "occurred_at": now},
            {"role": "user", "content": "周报的格式用表格。", "occurred_at": now}])
    fact = Memory.objects.exclude(kind="episode").get(content__contains="739214")
    ack = Memory.objects.get(kind="episode", content__startswith="好的，记下了")
    # the memory's own forget page names the echoes before anything is done
    page = console.get(reverse("admin:memory_memory_forget", args=[fact.id])).content.decode()
    assert f"{ack.id} (acknowledgement)" in page
    request = forget_request_create(org=org, subject_user="u1", requested_by="user-u1", target="memory",
                                    memory_ids=[fact.id], via="console")
    page = console.get(reverse("admin:memory_forgetrequest_change", args=[request.id])).content.decode()
    assert reverse("admin:memory_memory_change", args=[ack.id]) in page and "acknowledgement" in page
    assert "周报" not in page
    with django_capture_on_commit_callbacks(execute=True):
        console.post(reverse("admin:memory_forgetrequest_decide", args=[request.id]), {"approve": "Approve"})
    request.refresh_from_db()
    assert request.status == "executed" and request.result["echoes_forgotten"] >= 2  # user turn and acknowledgement
    assert not Memory.objects.filter(status="active", content__contains="739214").exists()
    assert Memory.objects.filter(status="active", content__contains="周报").exists()
