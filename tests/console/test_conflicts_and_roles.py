"""The conflicts queue and the two operator roles: a viewer reads everything and can neither approve
forget requests nor resolve conflicts; an approver can, and every decision is audited."""
import pytest
from django.urls import reverse

from console.roles import APPROVER, VIEWER, ensure_roles
from memory.models import ForgetRequest, Memory, MemoryConflict
from memory.services.conflicts import conflict_record
from memory.services.forget import forget_request_create
from tenancy.models import AuditEvent
from tests.console.helpers import make_operator, write

pytestmark = pytest.mark.django_db

SMS = "Remind me about maintenance by SMS"
WECHAT = "Send maintenance reminders to my WeChat"


def _role_user(name: str, role: str):
    user = make_operator(name, is_staff=True, is_superuser=False)
    user.groups.add(ensure_roles()[role])
    return user


@pytest.fixture
def pair(org):
    older = write(org, SMS, kind="preference").memory
    newer = write(org, WECHAT, kind="preference").memory
    return older, newer, conflict_record(older=older, newer=newer, score=0.64, signals={"subject": 0.64})


def test_roles_exist_after_migrate_with_their_permissions():
    from django.contrib.auth.models import Group

    viewer, approver = Group.objects.get(name=VIEWER), Group.objects.get(name=APPROVER)  # made by post_migrate
    codes = lambda g: {p.codename for p in g.permissions.all()}  # noqa: E731
    assert {"view_memory", "view_memoryconflict", "view_forgetrequest", "view_message"} <= codes(viewer)
    assert not {"approve_forgetrequest", "resolve_memoryconflict", "change_memory"} & codes(viewer)
    assert {"approve_forgetrequest", "resolve_memoryconflict", "change_memory"} <= codes(approver)


def test_queue_shows_the_pair_side_by_side_with_sources_and_dates(client, org, pair):
    older, newer, conflict = pair
    client.force_login(_role_user("approver", APPROVER))
    response = client.get(reverse("console:conflicts"))
    html = response.content.decode()
    assert f'id="conflict-{conflict.id}"' in html and SMS in html and WECHAT in html
    assert html.index(SMS) < html.index(WECHAT)  # older on the left
    assert older.created_at.strftime("%Y-%m-%d %H:%M") in html
    assert 'value="supersede"' in html and 'value="keep_both"' in html
    # Filtering by another user or status hides it.
    assert f'id="conflict-{conflict.id}"' not in client.get(reverse("console:conflicts") + "?user_id=u2").content.decode()
    assert f'id="conflict-{conflict.id}"' not in client.get(reverse("console:conflicts") + "?status=kept_both").content.decode()


def test_an_approver_supersedes_the_older_and_it_is_audited(client, org, pair, django_capture_on_commit_callbacks):
    older, newer, conflict = pair
    client.force_login(_role_user("approver", APPROVER))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("console:conflict-resolve", args=[conflict.id]), {"action": "supersede"},
                               follow=True)
    assert "resolved" in response.content.decode()
    conflict.refresh_from_db()
    older.refresh_from_db()
    assert (conflict.status, conflict.resolved_by) == ("superseded", "approver")
    assert older.status == "superseded" and older.superseded_by_id == newer.id
    event = AuditEvent.objects.get(action="conflict.supersede", target_id=str(conflict.id))
    assert (event.actor, event.actor_kind) == ("approver", "operator")
    # The queue no longer lists it; the memory page says the conflict ended it.
    assert f'id="conflict-{conflict.id}"' not in client.get(reverse("console:conflicts")).content.decode()
    html = client.get(reverse("admin:memory_memory_change", args=[older.id])).content.decode()
    assert f"resolving conflict {conflict.id}" in html
    # Resolving twice is refused without a change.
    response = client.post(reverse("console:conflict-resolve", args=[conflict.id]), {"action": "keep_both"}, follow=True)
    assert "was not changed" in response.content.decode()


def test_keep_both_leaves_both_active(client, org, pair):
    older, newer, conflict = pair
    client.force_login(_role_user("approver", APPROVER))
    client.post(reverse("console:conflict-resolve", args=[conflict.id]), {"action": "keep_both"})
    conflict.refresh_from_db()
    assert conflict.status == "kept_both"
    assert set(Memory.objects.filter(id__in=[older.id, newer.id]).values_list("status", flat=True)) == {"active"}
    assert AuditEvent.objects.filter(action="conflict.keep_both", target_id=str(conflict.id), actor="approver").exists()


def test_a_bad_action_is_refused_without_a_change(client, org, pair):
    _, _, conflict = pair
    client.force_login(_role_user("approver", APPROVER))
    response = client.post(reverse("console:conflict-resolve", args=[conflict.id]), {"action": "delete"}, follow=True)
    assert "action must be one of" in response.content.decode().lower()
    assert MemoryConflict.objects.get(id=conflict.id).status == "open"


def test_a_viewer_can_read_but_not_resolve_or_approve(client, org, pair, django_capture_on_commit_callbacks):
    older, newer, conflict = pair
    request = forget_request_create(org=org, subject_user="u1", requested_by="u1", target="memory",
                                    memory_ids=[older.id], via="console")
    client.force_login(_role_user("viewer", VIEWER))
    html = client.get(reverse("console:conflicts")).content.decode()
    assert SMS in html and 'value="supersede"' not in html and "not resolve" in html
    assert client.post(reverse("console:conflict-resolve", args=[conflict.id]), {"action": "supersede"}).status_code == 403
    assert MemoryConflict.objects.get(id=conflict.id).status == "open"

    page = client.get(reverse("admin:memory_forgetrequest_change", args=[request.id]))
    assert page.status_code == 200 and b'id="decide-form"' not in page.content
    assert client.post(reverse("admin:memory_forgetrequest_decide", args=[request.id]), {"approve": "1"}).status_code == 403
    listing = client.get(reverse("admin:memory_forgetrequest_changelist"))
    form = listing.context["action_form"]  # None: the viewer has no bulk action at all
    assert form is None or "approve_selected" not in dict(form.fields["action"].choices)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("admin:memory_forgetrequest_changelist"),
                    {"action": "approve_selected", "_selected_action": [request.id], "index": 0})
    memory_page = client.get(reverse("admin:memory_memory_change", args=[older.id])).content.decode()
    assert reverse("admin:memory_memory_forget", args=[older.id]) not in memory_page  # no buttons that answer 403
    assert reverse("console:purge-org") not in memory_page
    # Forgetting from the memory page and forgetting a whole user cannot be approved either.
    assert client.post(reverse("admin:memory_memory_forget", args=[older.id]), {"approve_now": "1"}).status_code == 403
    assert client.post(reverse("console:forget-user"), {"org": org.id, "user_id": "u1", "approve_now": "1"}).status_code == 403
    request.refresh_from_db()
    assert request.status == "pending" and Memory.objects.get(id=older.id).status == "active"
    assert ForgetRequest.objects.filter(org=org).count() == 1  # nothing was created by the refused posts


def test_an_approver_approves_a_forget_request(client, org, pair, django_capture_on_commit_callbacks):
    older, _, _ = pair
    request = forget_request_create(org=org, subject_user="u1", requested_by="u1", target="memory",
                                    memory_ids=[older.id], via="console")
    client.force_login(_role_user("approver", APPROVER))
    assert b'id="decide-form"' in client.get(reverse("admin:memory_forgetrequest_change", args=[request.id])).content
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("admin:memory_forgetrequest_decide", args=[request.id]), {"approve": "1"})
    request.refresh_from_db()
    assert (request.status, request.operator) == ("executed", "approver")
    assert Memory.objects.get(id=older.id).status == "forgotten"
