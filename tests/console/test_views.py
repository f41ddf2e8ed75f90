"""The operator console: access control, every page renders, and every action goes through a service."""
import logging
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from console.memory_detail import supersede_chain, version_diff
from conversations.models import EntityMention, Message
from conversations.services import conversation_create, messages_append
from entities.services import entity_upsert
from memory.models import ForgetRequest, Memory, MemoryVersion
from memory.services.forget import forget_request_create
from memory.services.memories import SourceRef, memory_update
from tenancy.models import ApiKey, AuditEvent, Org
from tenancy.services import api_key_create, api_key_verify, org_get_or_create
from tests.console.helpers import NEW_STYLE, OLD_STYLE, make_operator, recalled_ids, seed_supersede_chain, write

pytestmark = pytest.mark.django_db

COFFEE = "The plant manager drinks dark roast coffee every morning before the shift"
COFFEE_QUERY = "what coffee does the plant manager drink"


@pytest.fixture
def operator(db):
    return make_operator()


@pytest.fixture
def console(client, operator):
    client.force_login(operator)
    return client


@pytest.fixture
def seeded(org, django_capture_on_commit_callbacks):
    """Memories written through memory_write, projections run (vectors present for recall)."""
    with django_capture_on_commit_callbacks(execute=True):
        old, new = seed_supersede_chain(org)
        coffee = write(org, COFFEE).memory
    return {"old": old, "new": new, "coffee": coffee}


def _audit(action: str, org_slug: str = "acme") -> AuditEvent:
    # Scoped to the test's org: the service profile's test database may be shared with other runs.
    event = AuditEvent.objects.filter(action=action, org_slug=org_slug).order_by("-id").first()
    assert event is not None, f"no audit event {action}"
    return event


# --------------------------------------------------------------------------- access control
CONSOLE_URLS = ["console:health", "console:recall-explain", "console:api-keys", "console:forget-user", "console:purge-org",
                "admin:memory_memory_changelist", "admin:memory_forgetrequest_changelist", "admin:entities_entity_changelist"]


@pytest.mark.parametrize("name", CONSOLE_URLS)
def test_anonymous_is_sent_to_the_login_page(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


def test_anonymous_cannot_post_actions(client, org, seeded):
    memory = seeded["coffee"]
    response = client.post(reverse("admin:memory_memory_forget", args=[memory.id]), {"approve_now": "1"})
    assert response.status_code == 302 and response["Location"].startswith(reverse("admin:login"))
    response = client.post(reverse("console:api-keys"), {"org": org.id, "name": "sneaky"})
    assert response.status_code == 302
    assert not ForgetRequest.objects.filter(org=org).exists() and not ApiKey.objects.filter(org=org).exists()
    memory.refresh_from_db()
    assert memory.status == "active"


def test_non_staff_user_is_refused(client, org):
    user = make_operator("customer", is_staff=False, is_superuser=False)
    client.force_login(user)
    assert client.get(reverse("console:health")).status_code == 302


def test_staff_without_permissions_cannot_purge_or_create_keys(client, org):
    user = make_operator("junior", is_staff=True, is_superuser=False)
    client.force_login(user)
    assert client.get(reverse("console:health")).status_code == 200
    assert client.get(reverse("console:purge-org")).status_code == 403
    assert client.post(reverse("console:purge-org"), {"org": org.id, "confirm_slug": org.slug}).status_code == 403
    assert client.post(reverse("console:api-keys"), {"org": org.id, "name": "x"}).status_code == 403
    assert Org.objects.filter(id=org.id).exists() and not ApiKey.objects.filter(org=org).exists()
    user.user_permissions.add(Permission.objects.get(codename="view_apikey"))
    assert client.get(reverse("console:api-keys")).status_code == 200


def test_posts_need_a_csrf_token(operator, org, seeded):
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    memory = seeded["coffee"]
    assert client.post(reverse("admin:memory_memory_invalidate", args=[memory.id]), {"reason": "x"}).status_code == 403
    assert client.post(reverse("console:api-keys"), {"org": org.id, "name": "k"}).status_code == 403
    memory.refresh_from_db()
    assert memory.status == "active" and not ApiKey.objects.filter(org=org).exists()


# --------------------------------------------------------------------------- pages render
def test_every_page_renders(console, org, seeded):
    memory = seeded["coffee"]
    request = forget_request_create(org=org, subject_user="u1", requested_by="op", target="memory",
                                    memory_ids=[memory.id], via="console")
    entity, _ = entity_upsert(org=org, type="asset", external_id="A-1", name="Dryer")
    urls = [reverse(n) for n in CONSOLE_URLS] + [
        reverse("admin:index"),
        reverse("admin:memory_memory_change", args=[memory.id]),
        reverse("admin:memory_forgetrequest_change", args=[request.id]),
        reverse("admin:entities_entity_change", args=[entity.id]),
        reverse("admin:tenancy_auditevent_changelist"),
        reverse("admin:tenancy_apikey_changelist"),
        reverse("admin:conversations_message_changelist"),
        reverse("admin:conversations_entitymention_changelist"),
        reverse("console:purge-org") + f"?org={org.id}",
    ]
    for url in urls:
        response = console.get(url)
        assert response.status_code == 200, url
        assert b"Memory service console" in response.content, url


def test_memory_list_filters_searches_and_paginates(console, org, other_org, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(57):
            write(org, f"routine maintenance note number {i} for line {i % 7}", dedup=False)
        write(org, COFFEE, user_id="u2")
        write(other_org, "globex keeps its own secrets", kind="preference")
    url = reverse("admin:memory_memory_changelist")
    page = console.get(url).content.decode()
    assert "59 memories" in page  # the total, not a silent cut
    assert "?p=2" in page and "Show all" in page
    assert "routine maintenance note number" in console.get(url + "?p=2").content.decode()
    filtered = console.get(url, {"org__id__exact": org.id, "user_id": "u2"}).content.decode()
    assert "dark roast coffee" in filtered and "routine maintenance" not in filtered
    assert "1 memory" in filtered
    assert "globex keeps" in console.get(url, {"kind__exact": "preference"}).content.decode()
    found = console.get(url, {"q": "dark roast"}).content.decode()
    assert "dark roast coffee" in found and "routine maintenance" not in found
    assert 'id="status-totals"' in found and re.search(r"active: 1(?!\d)", found)


def test_memory_list_query_count_does_not_grow_with_rows(console, org):
    """The same page at 4 and at 30 rows, each row with a message source (and its external ref), half of
    them with a superseded-by link (what the columns show): one count for both, under a small ceiling."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    conversation, _ = conversation_create(org=org, owner_user="u1")
    url = reverse("admin:memory_memory_changelist")
    written: list[Memory] = []

    def rows_and_count(n: int) -> int:
        while Memory.objects.filter(org=org).count() < n:
            i = Memory.objects.filter(org=org).count()
            [message] = messages_append(conversation=conversation, user_id="u1",
                                        messages=[{"role": "user", "content": f"bay {i}", "external_ref": f"CRM-{i}"}])
            memory = write(org, f"inventory item {i} stored in bay {i}", dedup=False,
                           sources=[SourceRef(message_id=message.id, conversation_id=conversation.id)]).memory
            if i % 2:  # every other row superseded by the next one (the list links it)
                Memory.objects.filter(id=written[-1].id).update(superseded_by=memory, status="superseded")
            written.append(memory)
        with CaptureQueriesContext(connection) as queries:
            page = console.get(url)
        assert page.status_code == 200 and f"{n} memories" in page.content.decode()
        return len(queries)

    few, many = rows_and_count(4), rows_and_count(30)
    assert few == many, (few, many)
    assert many <= 15


# --------------------------------------------------------------------------- memory detail
def test_detail_shows_versions_diff_sources_entities_and_chain_both_ways(console, org, django_capture_on_commit_callbacks):
    conversation, _ = conversation_create(org=org, owner_user="u1")
    entity, _ = entity_upsert(org=org, type="asset", external_id="DRY-7", name="grain dryer")
    [message] = messages_append(conversation=conversation, user_id="u1",
                                messages=[{"role": "user", "content": "the dryer runs on gas", "external_ref": "CRM-42"}])
    with django_capture_on_commit_callbacks(execute=True):
        old, new = seed_supersede_chain(org)
        sourced = write(org, "The grain dryer runs on natural gas", entity_ids=[entity.id],
                        sources=[SourceRef(message_id=message.id, conversation_id=conversation.id),
                                 SourceRef(external_ref="ticket-9")]).memory
        memory_update(memory_id=sourced.id, content="The grain dryer runs on propane", actor="op", created_by="operator")

    page = console.get(reverse("admin:memory_memory_change", args=[sourced.id])).content.decode()
    assert "v1" in page and "v2" in page
    assert "runs on <del>natural gas</del><ins>propane</ins>" in page
    assert reverse("admin:conversations_message_change", args=[message.id]) in page
    assert "CRM-42" in page and "ticket-9" in page
    assert reverse("admin:entities_entity_change", args=[entity.id]) in page and "DRY-7" in page

    old_page = console.get(reverse("admin:memory_memory_change", args=[old.id])).content.decode()
    chain = old_page[old_page.index('id="supersede-chain"'):old_page.index('id="versions"')]
    assert f"memory {new.id}</a>" in chain and "superseded by (newer)" in chain and NEW_STYLE in chain
    new_page = console.get(reverse("admin:memory_memory_change", args=[new.id])).content.decode()
    chain = new_page[new_page.index('id="supersede-chain"'):new_page.index('id="versions"')]
    assert f"memory {old.id}</a>" in chain and "superseded (older)" in chain and OLD_STYLE[:40] in chain


def test_content_is_escaped_everywhere(console, org):
    memory = write(org, 'note <script>alert("x")</script> <b>bold</b>').memory
    memory_update(memory_id=memory.id, content='note <img src=x onerror=alert(1)>', actor="op", created_by="operator")
    for url in (reverse("admin:memory_memory_change", args=[memory.id]), reverse("admin:memory_memory_changelist")):
        page = console.get(url).content.decode()
        assert "<script>alert" not in page and "<img src=x" not in page and "<b>bold</b>" not in page
    assert "&lt;script&gt;" in console.get(reverse("admin:memory_memory_change", args=[memory.id])).content.decode()


def test_supersede_chain_follows_recursively_and_stops_on_a_cycle(org):
    a = write(org, "alpha", dedup=False).memory
    b = write(org, "bravo", dedup=False).memory
    c = write(org, "charlie", dedup=False).memory
    # A corrupted chain a → b → c → a (only a bad migration could write this; the walk must still end).
    Memory.objects.filter(id=a.id).update(superseded_by=b)
    Memory.objects.filter(id=b.id).update(superseded_by=c)
    Memory.objects.filter(id=c.id).update(superseded_by=a)
    chain = supersede_chain(Memory.objects.get(id=a.id))
    assert [m.id for m in chain["older"]] == [b.id, c.id]  # oldest first, each row once
    assert chain["newer"] == [] and chain["cycle"] is True
    Memory.objects.filter(id=c.id).update(superseded_by=None)
    chain = supersede_chain(Memory.objects.get(id=b.id))
    assert [m.id for m in chain["older"]] == [a.id] and [m.id for m in chain["newer"]] == [c.id]
    assert chain["cycle"] is False


def test_version_diff_segments():
    assert version_diff("看两周", "看一个月") == [("equal", "看"), ("delete", "两周"), ("insert", "一个月")]
    assert version_diff("same words", "same words") == [("equal", "same words")]
    assert version_diff("runs on natural gas", "runs on propane now") == [
        ("equal", "runs on "), ("delete", "natural gas"), ("insert", "propane now")]


def test_change_form_save_goes_through_memory_update(console, operator, org, seeded):
    memory = seeded["coffee"]
    url = reverse("admin:memory_memory_change", args=[memory.id])
    response = console.post(url, {"importance": "0.9", "valid_from_0": "", "valid_from_1": "", "valid_to_0": "",
                                  "valid_to_1": "", "content": "HACKED", "status": "forgotten", "_save": "Save"})
    assert response.status_code == 302, response.content.decode()[:2000]
    memory.refresh_from_db()
    assert memory.version == 2 and memory.importance == 0.9
    assert memory.content == COFFEE and memory.status == "active"  # read-only fields ignore posted values
    latest = MemoryVersion.objects.filter(memory=memory).order_by("-n").first()
    assert (latest.n, latest.created_by, latest.actor, latest.content) == (2, "operator", operator.username, COFFEE)
    event = _audit("memory.update")
    assert event.actor == operator.username and event.actor_kind == "operator"


def test_edit_content_creates_a_new_version(console, operator, org, seeded, django_capture_on_commit_callbacks):
    memory = seeded["coffee"]
    url = reverse("admin:memory_memory_edit_content", args=[memory.id])
    assert COFFEE in console.get(url).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = console.post(url, {"content": "The plant manager switched to green tea", "reason": "CORRECT"})
    assert response.status_code == 302
    versions = list(MemoryVersion.objects.filter(memory=memory).order_by("n"))
    assert [(v.n, v.reason, v.created_by) for v in versions] == [(1, "ADD", "api"), (2, "CORRECT", "operator")]
    assert versions[1].actor == operator.username and versions[0].content == COFFEE
    memory.refresh_from_db()
    assert memory.content == "The plant manager switched to green tea" and memory.version == 2
    assert _audit("memory.update").actor_kind == "operator"


def test_edit_of_a_superseded_memory_is_refused(console, org, seeded):
    old = seeded["old"]
    page = console.get(reverse("admin:memory_memory_change", args=[old.id])).content.decode()
    assert 'name="_save"' not in page and "Edit content" not in page
    assert 'name="_save"' in console.get(reverse("admin:memory_memory_change", args=[seeded["new"].id])).content.decode()
    response = console.post(reverse("admin:memory_memory_edit_content", args=[old.id]), {"content": "x", "reason": "UPDATE"})
    assert response.status_code == 302
    old.refresh_from_db()
    assert old.content == OLD_STYLE and old.versions.count() == 1


def test_invalidate_calls_the_service(console, operator, org, seeded, django_capture_on_commit_callbacks):
    memory = seeded["coffee"]
    assert memory.id in recalled_ids(org, "u1", COFFEE_QUERY)
    with django_capture_on_commit_callbacks(execute=True):
        response = console.post(reverse("admin:memory_memory_invalidate", args=[memory.id]), {"reason": "wrong person"})
    assert response.status_code == 302
    memory.refresh_from_db()
    assert memory.status == "invalidated" and memory.invalid_reason == "wrong person"
    event = _audit("memory.invalidated")
    assert (event.actor, event.actor_kind, event.target_id) == (operator.username, "operator", str(memory.id))
    assert memory.id not in recalled_ids(org, "u1", COFFEE_QUERY)


def test_forget_now_from_the_memory_page(console, operator, org, seeded, django_capture_on_commit_callbacks):
    memory = seeded["coffee"]
    assert memory.id in recalled_ids(org, "u1", COFFEE_QUERY)
    with django_capture_on_commit_callbacks(execute=True):
        response = console.post(reverse("admin:memory_memory_forget", args=[memory.id]), {"approve_now": "Forget now"})
    assert response.status_code == 302
    request = ForgetRequest.objects.get(org=org)
    assert (request.requested_via, request.status, request.operator) == ("console", "executed", operator.username)
    memory.refresh_from_db()
    assert memory.status == "forgotten" and memory.content == ""
    assert memory.id not in recalled_ids(org, "u1", COFFEE_QUERY)


def test_forget_from_the_memory_page_can_wait_for_a_second_operator(console, org, seeded):
    memory = seeded["coffee"]
    console.post(reverse("admin:memory_memory_forget", args=[memory.id]), {"pending": "1"})
    assert ForgetRequest.objects.get(org=org).status == "pending"
    memory.refresh_from_db()
    assert memory.status == "active"


# --------------------------------------------------------------------------- forget requests
def _pending_request(org, memory) -> ForgetRequest:
    return forget_request_create(org=org, subject_user=memory.user_id, requested_by="user-u1", target="memory",
                                 memory_ids=[memory.id], via="console")


def test_bulk_approve_forgets_the_memory_and_removes_it_from_recall(console, operator, org, seeded,
                                                                   django_capture_on_commit_callbacks):
    memory = seeded["coffee"]
    request = _pending_request(org, memory)
    assert memory.id in recalled_ids(org, "u1", COFFEE_QUERY)
    listing = console.get(reverse("admin:memory_forgetrequest_changelist"), {"status__exact": "pending"}).content.decode()
    assert f'value="{request.id}"' in listing
    with django_capture_on_commit_callbacks(execute=True):
        response = console.post(reverse("admin:memory_forgetrequest_changelist"),
                                {"action": "approve_selected", "_selected_action": [request.id]})
    assert response.status_code == 302
    request.refresh_from_db()
    assert request.status == "executed" and request.operator == operator.username and request.decided_at is not None
    memory.refresh_from_db()
    assert memory.status == "forgotten"
    assert memory.id not in recalled_ids(org, "u1", COFFEE_QUERY)
    event = _audit("forget.approve")
    assert (event.actor, event.actor_kind, event.target_id) == (operator.username, "operator", str(request.id))
    # Who and when are on the list.
    listing = console.get(reverse("admin:memory_forgetrequest_changelist")).content.decode()
    assert operator.username in listing and "executed" in listing


def test_bulk_reject_keeps_the_memory(console, operator, org, seeded, django_capture_on_commit_callbacks):
    memory = seeded["coffee"]
    request = _pending_request(org, memory)
    with django_capture_on_commit_callbacks(execute=True):
        console.post(reverse("admin:memory_forgetrequest_changelist"),
                     {"action": "reject_selected", "_selected_action": [request.id]})
    request.refresh_from_db()
    assert request.status == "rejected" and request.operator == operator.username
    memory.refresh_from_db()
    assert memory.status == "active" and memory.id in recalled_ids(org, "u1", COFFEE_QUERY)
    assert _audit("forget.reject").actor_kind == "operator"


def test_decide_button_on_the_request_page(console, org, seeded, django_capture_on_commit_callbacks):
    memory = seeded["coffee"]
    request = _pending_request(org, memory)
    page = console.get(reverse("admin:memory_forgetrequest_change", args=[request.id])).content.decode()
    assert 'id="decide-form"' in page
    with django_capture_on_commit_callbacks(execute=True):
        console.post(reverse("admin:memory_forgetrequest_decide", args=[request.id]), {"approve": "Approve"})
    request.refresh_from_db()
    assert request.status == "executed"
    # Deciding twice changes nothing.
    console.post(reverse("admin:memory_forgetrequest_decide", args=[request.id]), {"reject": "Reject"})
    request.refresh_from_db()
    assert request.status == "executed"


def test_forget_everything_about_a_user(console, operator, org, seeded, django_capture_on_commit_callbacks):
    write(org, "u2 keeps bees on the roof", user_id="u2")
    url = reverse("console:forget-user")
    preview = console.post(url, {"org": org.id, "user_id": "u1", "preview": "Preview"}).content.decode()
    assert "active: 2" in preview and "superseded: 1" in preview
    assert not ForgetRequest.objects.filter(org=org).exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = console.post(url, {"org": org.id, "user_id": "u1", "approve_now": "1"})
    assert response.status_code == 302
    request = ForgetRequest.objects.get(org=org)
    assert (request.target, request.status, request.requested_via) == ("user", "executed", "console")
    assert set(Memory.objects.filter(org=org, user_id="u1").values_list("status", flat=True)) == {"forgotten"}
    assert Memory.objects.get(org=org, user_id="u2").status == "active"
    assert recalled_ids(org, "u1", COFFEE_QUERY) == []


def test_purge_org_needs_the_typed_slug(console, operator, django_capture_on_commit_callbacks):
    doomed = org_get_or_create(slug="doomed")
    with django_capture_on_commit_callbacks(execute=True):
        write(doomed, "doomed org memory")
    url = reverse("console:purge-org")
    page = console.get(url, {"org": doomed.id}).content.decode()
    assert "doomed" in page and "memories" in page
    response = console.post(url, {"org": doomed.id, "confirm_slug": "wrong"})
    assert response.status_code == 200 and Org.objects.filter(id=doomed.id).exists()
    response = console.post(url, {"org": doomed.id, "confirm_slug": "doomed"})
    assert response.status_code == 302
    assert not Org.objects.filter(id=doomed.id).exists() and not Memory.objects.filter(org_id=doomed.id).exists()
    event = AuditEvent.objects.get(action="org.purge", org_slug="doomed")
    assert (event.org_slug, event.actor, event.actor_kind) == ("doomed", operator.username, "operator")


# --------------------------------------------------------------------------- recall explainer
def test_recall_explainer_shows_every_stage(console, operator, org, seeded, caplog):
    expired = write(org, "The plant manager drank instant coffee during the old contract",
                    valid_to=timezone.now() - timedelta(days=1)).memory
    caplog.set_level(logging.DEBUG)
    response = console.post(reverse("console:recall-explain"), {"org": org.id, "user_id": "u1", "query": COFFEE_QUERY,
                                                                 "k": 5, "include_episodes": "on"})
    page = response.content.decode()
    assert response.status_code == 200
    for section in ('id="candidates"', 'id="back-check"', 'id="dedup"', 'id="rank"', 'id="timings"', 'id="returned"'):
        assert section in page
    candidates = page[page.index('id="candidates"'):page.index('id="back-check"')]
    assert reverse("admin:memory_memory_change", args=[seeded["coffee"].id]) in candidates and "returned" in candidates
    back_check = page[page.index('id="back-check"'):page.index('id="dedup"')]
    assert reverse("admin:memory_memory_change", args=[expired.id]) in back_check
    assert "expired at the reference time" in back_check
    assert re.search(r"<th>total</th>", page)
    event = _audit("recall.explain")
    assert event.actor_kind == "operator" and event.target_id == "u1"
    assert "coffee" not in str(event.detail)
    assert "coffee" not in caplog.text.lower()


def test_recall_explainer_query_is_never_in_a_get_url(console, org):
    page = console.get(reverse("console:recall-explain"), {"org": org.id, "user_id": "u9"}).content.decode()
    assert 'method="post"' in page and 'value="u9"' in page


# --------------------------------------------------------------------------- health
def test_health_page_shows_checks_counts_growth_and_a_latency_probe(console, org, seeded):
    page = console.get(reverse("console:health")).content.decode()
    assert "lagging memories: 0" in page
    assert "vector index" in page and "collection" in page and "points" in page
    counts = page[page.index('id="counts"'):page.index('id="growth"')]
    assert org.slug in counts
    assert "<rect" in page[page.index('id="growth"'):]
    response = console.post(reverse("console:health"), {"org": org.id, "user_id": "u1", "samples": 3})
    probe = response.content.decode()
    assert 'id="latency-runs"' in probe and probe.count("<tr><td>") >= 3
    assert _audit("recall.latency_probe").actor_kind == "operator"


# --------------------------------------------------------------------------- API keys
def test_api_key_create_shows_the_plaintext_once_and_revoke_works(console, operator, org):
    response = console.post(reverse("console:api-keys"), {"org": org.id, "name": "agent-a", "scopes": "recall, write"})
    page = response.content.decode()
    raw = re.search(r'id="plaintext-key">([^<]+)<', page).group(1).strip()
    key = api_key_verify(raw_key=raw)
    assert key is not None and key.name == "agent-a" and key.scopes == ["recall", "write"]
    create_event = _audit("api_key.create")
    assert (create_event.actor, create_event.actor_kind) == (operator.username, "operator")
    assert raw not in console.get(reverse("console:api-keys")).content.decode()  # shown once
    assert raw.split("_", 2)[2] not in str(console.session.items())

    assert console.get(reverse("console:api-key-revoke", args=[key.id])).status_code == 405
    response = console.post(reverse("console:api-key-revoke", args=[key.id]))
    assert response.status_code == 302
    assert api_key_verify(raw_key=raw) is None
    revoke_event = _audit("api_key.revoke")
    assert (revoke_event.actor, revoke_event.actor_kind, revoke_event.target_id) == (operator.username, "operator", str(key.id))


def test_api_keys_are_listed_per_org(console, org, other_org):
    api_key_create(org=org, name="acme-agent")
    api_key_create(org=other_org, name="globex-agent")
    page = console.get(reverse("console:api-keys"), {"org": org.id}).content.decode()
    assert "acme-agent" in page and "globex-agent" not in page


def test_api_key_admin_cannot_write_rows(console, org):
    key, raw = api_key_create(org=org, name="k")
    assert console.get(reverse("admin:tenancy_apikey_add")).status_code == 403
    console.post(reverse("admin:tenancy_apikey_change", args=[key.id]), {"name": "renamed", "org": org.id})
    key.refresh_from_db()
    assert key.name == "k"
    console.post(reverse("admin:tenancy_apikey_changelist"), {"action": "revoke_selected", "_selected_action": [key.id]})
    assert api_key_verify(raw_key=raw) is None and _audit("api_key.revoke").actor_kind == "operator"


# --------------------------------------------------------------------------- entities
def test_entity_page_shows_aliases_mentions_and_linked_memories(console, org):
    entity, _ = entity_upsert(org=org, type="asset", external_id="HV-9", name="harvester nine", aliases=["老九", "HV9"])
    conversation, _ = conversation_create(org=org, owner_user="u1")
    messages_append(conversation=conversation, user_id="u1", messages=[
        {"role": "user", "content": "harvester nine is leaking oil"},
        {"role": "user", "content": "老九 needs new belts"}])
    mentions = list(EntityMention.objects.filter(entity=entity).order_by("-at", "-id"))
    assert len(mentions) == 2
    memory = write(org, "Harvester nine leaks oil", entity_ids=[entity.id]).memory
    page = console.get(reverse("admin:entities_entity_change", args=[entity.id])).content.decode()
    assert "老九" in page and "HV9" in page
    timeline = page[page.index('id="mentions"'):page.index('id="linked-memories"')]
    links = [reverse("admin:conversations_message_change", args=[m.message_id]) for m in mentions]
    assert all(link in timeline for link in links)
    assert timeline.index(links[0]) < timeline.index(links[1])  # newest first
    assert reverse("admin:memory_memory_change", args=[memory.id]) in page[page.index('id="linked-memories"'):]
    assert Message.objects.filter(id=mentions[0].message_id).exists()
    listing = console.get(reverse("admin:memory_memory_changelist"), {"entity": entity.id}).content.decode()
    assert "Harvester nine leaks oil" in listing


# --------------------------------------------------------------------------- logs
def test_console_actions_never_log_memory_text(console, org, seeded, caplog, django_capture_on_commit_callbacks):
    caplog.set_level(logging.DEBUG)
    memory = seeded["coffee"]
    with django_capture_on_commit_callbacks(execute=True):
        console.post(reverse("admin:memory_memory_edit_content", args=[memory.id]),
                     {"content": "A secret new sentence about zebras", "reason": "UPDATE"})
        console.get(reverse("admin:memory_memory_change", args=[memory.id]))
        console.post(reverse("admin:memory_memory_forget", args=[memory.id]), {"approve_now": "1"})
    text = caplog.text.lower()
    assert "zebras" not in text and "dark roast" not in text


# --------------------------------------------------------------------------- entity neighbourhood
def test_entity_page_shows_relations_with_validity_and_the_memories_linked_along_them(console, org,
                                                                                     django_capture_on_commit_callbacks):
    from entities.relations import relation_upsert, relations_end

    asset, _ = entity_upsert(org=org, type="asset", external_id="FR-1", name="1号冷柜")
    current, _ = entity_upsert(org=org, type="workorder", external_id="WO-7", name="维修单7")
    ended, _ = entity_upsert(org=org, type="workorder", external_id="WO-3", name="维修单3")
    for wo in ("WO-7", "WO-3"):
        relation_upsert(org=org, from_ref={"type": "workorder", "external_id": wo}, type="about",
                        to_ref={"type": "asset", "external_id": "FR-1"}, source="erp-sync")
    relations_end(org=org, items=[{"from_ref": {"type": "workorder", "external_id": "WO-3"}, "type": "about",
                                   "to_ref": {"type": "asset", "external_id": "FR-1"}}])
    with django_capture_on_commit_callbacks(execute=True):
        along = write(org, "The compressor start capacitor was replaced", entity_ids=[current.id]).memory
        old = write(org, "Door seal ordered from the supplier", entity_ids=[ended.id]).memory

    page = console.get(reverse("admin:entities_entity_change", args=[asset.id])).content.decode()
    section = page[page.index('id="neighbourhood"'):page.index('id="mentions"')]
    assert "WO-7" in section and "WO-3" in section and "erp-sync" in section
    assert section.index("WO-7") < section.index("WO-3") and "history" in section[section.index("WO-3"):]
    along_part = section[section.index("Memories linked along"):]
    # Recall follows both; the one along the ended relation is dated.
    assert f"memory {along.id}</a>" in along_part and f"memory {old.id}</a>" in along_part
    old_row = along_part[along_part.index(f"memory {old.id}</a>"):].split("</div>")[0]
    current_row = along_part[along_part.index(f"memory {along.id}</a>"):].split("</div>")[0]
    assert "history, ended" in old_row and "history" not in current_row
