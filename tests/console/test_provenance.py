"""Provenance of every end on the memory page: which forget request, rule, supersede or invalidation
ended a memory, by whom and when; forget requests found by any matched id; every version listed."""
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from console.memory_detail import forget_requests_matching, memory_end, versions_with_diffs
from memory.models import ForgetRequest, Memory
from memory.services.lifecycle import memories_expire
from memory.services.memories import memory_invalidate
from tests.console.helpers import make_operator, seed_supersede_chain, write

pytestmark = pytest.mark.django_db


@pytest.fixture
def console(client):
    client.force_login(make_operator())
    return client


def _forget_via_api(api, ids, django_capture_on_commit_callbacks, **body) -> ForgetRequest:
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/v1/forget", {"memory_ids": ids, **body}, format="json")
    assert response.status_code == 201, response.content
    return ForgetRequest.objects.get(id=response.json()["id"])


def test_a_memory_forgotten_through_the_api_names_its_request(console, api, org, django_capture_on_commit_callbacks):
    first = write(org, "The farm's backup generator runs on diesel", kind="fact").memory
    second = write(org, "The irrigation pump is serviced every April", kind="fact").memory
    request = _forget_via_api(api, [first.id, second.id], django_capture_on_commit_callbacks)
    assert request.status == "executed" and request.memory_id in (first.id, second.id)  # the FK names only one
    second = Memory.objects.get(id=second.id if request.memory_id == first.id else first.id)  # the one it does not name
    assert second.status == "forgotten"

    response = console.get(reverse("admin:memory_memory_change", args=[second.id]))
    html = response.content.decode()
    end = response.context["end"]
    assert end["request"] == request and end["cause"] == f"forget request {request.id}"
    assert end["by"] == f"forget_request:{request.id}" and end["rules"] >= 1
    assert 'id="end"' in html and f"forget request {request.id}" in html
    assert "Forget requests for this memory (1)" in html
    assert "approved by auto-approve" in html  # the org does not require approval: who decided is named


def test_a_query_forget_request_is_found_by_every_matched_id(console, api, org, django_capture_on_commit_callbacks):
    memory = write(org, "My dog is called Biscuit", kind="fact").memory
    other = write(org, "The tractor is a John Deere 6R", kind="fact").memory
    request = _forget_via_api(api, [memory.id], django_capture_on_commit_callbacks, query="dog's name")
    assert request.target == "query" and request.memory_id is None
    # Digit-bounded: memory 1 must not match a request for memory 12 (or the reverse).
    assert list(forget_requests_matching(memory.id)) == [request]
    assert not forget_requests_matching(other.id).exists()
    response = console.get(reverse("admin:memory_forgetrequest_changelist") + f"?memory={memory.id}")
    assert [r.id for r in response.context["cl"].result_list] == [request.id]
    response = console.get(reverse("admin:memory_forgetrequest_changelist") + f"?memory={other.id}")
    assert list(response.context["cl"].result_list) == []


def test_digit_bounded_matching_of_ids():
    from tenancy.services import org_get_or_create

    org = org_get_or_create(slug="ids")
    request = ForgetRequest.objects.create(org=org, subject_user="u", requested_by="x", target="query",
                                           matched_ids=[12, 345])
    assert list(forget_requests_matching(12)) == [request] and list(forget_requests_matching(345)) == [request]
    for other in (1, 2, 34, 45, 3456):
        assert not forget_requests_matching(other).exists(), other


def test_every_version_is_listed_with_the_state_change_that_bumped_it(console, api, org, django_capture_on_commit_callbacks):
    memory = write(org, "Harvest starts in the second week of September", kind="fact").memory
    _forget_via_api(api, [memory.id], django_capture_on_commit_callbacks)
    memory.refresh_from_db()
    assert memory.version == 2 and memory.versions.count() == 1  # the forget bumped the version, no new content
    rows = versions_with_diffs(memory)
    assert [row["n"] for row in rows] == [2, 1]
    assert rows[0]["reason"] == "FORGET" and rows[0]["ref"][0] == "forget_request"
    html = console.get(reverse("admin:memory_memory_change", args=[memory.id])).content.decode()
    assert "Versions (2, newest first)" in html and 'id="version-2"' in html and 'id="version-1"' in html


def test_supersede_invalidation_expiry_and_eviction_name_their_cause(console, org):
    old, new = seed_supersede_chain(org)
    end = memory_end(Memory.objects.get(id=old.id))
    assert end["superseded_by"].id == new.id and end["cause"].startswith("supersede") and end["at"] is not None
    assert [row["reason"] for row in versions_with_diffs(Memory.objects.get(id=old.id))] == ["SUPERSEDE", "ADD"]

    wrong = write(org, "The plant closes at 18:00 on Fridays", kind="fact").memory
    memory_invalidate(memory_id=wrong.id, reason="wrong", actor="alice", actor_kind="operator")
    end = memory_end(Memory.objects.get(id=wrong.id))
    assert (end["cause"], end["by"], end["by_kind"]) == ("invalidation (wrong)", "alice", "operator")

    dated = write(org, "Temporary gate code 4411 this week", kind="fact",
                  valid_to=timezone.now() + timedelta(seconds=1)).memory
    memories_expire(now=timezone.now() + timedelta(minutes=1))
    end = memory_end(Memory.objects.get(id=dated.id))
    assert end["cause"].startswith("expiry rule") and end["by"] == "beat:expire"

    crowded = write(org, "Least valuable memory of the user", kind="fact").memory
    memory_invalidate(memory_id=crowded.id, reason="evicted", actor="beat:evict", actor_kind="system")
    assert memory_end(Memory.objects.get(id=crowded.id))["cause"].startswith("eviction rule")
    html = console.get(reverse("admin:memory_memory_change", args=[old.id])).content.decode()
    assert "How this memory ended" in html and f"memory {new.id}" in html
    assert memory_end(Memory.objects.get(id=new.id)) is None  # still active
