"""GET /api/v1/conflicts and POST /api/v1/conflicts/{id}/resolve: the acting user's possible
conflicts, written by the write path, resolved by supersede or keep-both."""
import pytest

from memory.models import Memory, MemoryConflict
from tenancy.models import AuditEvent

pytestmark = pytest.mark.django_db


def remember(api, content):
    response = api.post("/api/v1/memories", {"kind": "preference", "content": content}, format="json")
    assert response.status_code in (200, 201), response.content
    return response.json()["memory"]["id"]


@pytest.fixture
def conflict(api, settings):
    from memory.vectors import active_embedder

    # A wide uncertain band, so the pair below is a possible conflict whatever its exact score.
    settings.MEMORY_THRESHOLDS = {active_embedder().model_id: {"subject_same": 0.99, "subject_conflict": 0.01}}
    # The rules' uncertain band is what is tested: the learned judge, sure of this change, would replace (D29).
    settings.MEMORY_LEARNED_REPLACE = {**settings.MEMORY_LEARNED_REPLACE, "enabled": False}
    older = remember(api, "I prefer Hilton hotels on business trips.")
    newer = remember(api, "Book Marriott hotels from now on.")
    return MemoryConflict.objects.get(older_id=older, newer_id=newer)


def test_the_write_path_lists_the_pair(api, conflict):
    response = api.get("/api/v1/conflicts")
    assert response.status_code == 200
    [row] = response.json()["results"]
    assert row["id"] == conflict.id and row["status"] == "open"
    assert row["older"]["id"] == conflict.older_id and row["newer"]["id"] == conflict.newer_id
    assert "Marriott" in row["newer"]["content"] and "masked" in row["signals"]


def test_supersede_resolves_and_ends_the_older(api, conflict):
    response = api.post(f"/api/v1/conflicts/{conflict.id}/resolve", {"action": "supersede"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "superseded"
    older = Memory.objects.get(id=conflict.older_id)
    assert older.status == "superseded" and older.superseded_by_id == conflict.newer_id
    assert api.get("/api/v1/conflicts").json()["results"] == []
    assert api.get("/api/v1/conflicts?status=superseded").json()["results"][0]["id"] == conflict.id
    assert AuditEvent.objects.filter(action="conflict.supersede", target_id=str(conflict.id), actor_kind="api").exists()
    again = api.post(f"/api/v1/conflicts/{conflict.id}/resolve", {"action": "keep_both"}, format="json")
    assert again.status_code == 409


def test_keep_both_leaves_both_active(api, conflict):
    response = api.post(f"/api/v1/conflicts/{conflict.id}/resolve", {"action": "keep_both"}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "kept_both"
    statuses = set(Memory.objects.filter(id__in=[conflict.older_id, conflict.newer_id]).values_list("status", flat=True))
    assert statuses == {"active"}


def test_bad_action_names_the_field(api, conflict):
    response = api.post(f"/api/v1/conflicts/{conflict.id}/resolve", {"action": "merge"}, format="json")
    assert response.status_code == 400 and "action" in response.json()
    assert api.get("/api/v1/conflicts?status=nope").status_code == 400


def test_another_user_sees_nothing_and_gets_404(api, api_u2, conflict):
    assert api_u2.get("/api/v1/conflicts").json()["results"] == []
    response = api_u2.post(f"/api/v1/conflicts/{conflict.id}/resolve", {"action": "supersede"}, format="json")
    assert response.status_code == 404
    assert MemoryConflict.objects.get(id=conflict.id).status == "open"
    assert api.post("/api/v1/conflicts/999999/resolve", {"action": "supersede"}, format="json").status_code == 404


def test_recall_ranks_the_newer_first_and_explain_marks_the_pair(api, conflict):
    response = api.post("/api/v1/recall", {"query": "which hotel should I book", "k": 5, "explain": True,
                                           "include_episodes": False}, format="json")
    assert response.status_code == 200, response.content
    items = response.json()["items"]
    ids = [item["id"] for item in items]
    assert ids.index(conflict.newer_id) < ids.index(conflict.older_id)
    marked = {item["id"]: item["conflicts"] for item in items if "conflicts" in item}
    assert marked[conflict.older_id] == [{"id": conflict.id, "role": "older", "with": conflict.newer_id}]
    assert marked[conflict.newer_id][0]["role"] == "newer"
