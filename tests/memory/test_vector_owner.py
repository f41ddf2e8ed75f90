"""The `owner` payload field (memory/vectors.py): recall scopes its search to one user with one
condition where the collection's points carry it, with org and user_id where they do not, until
rebuild_projections re-projects them."""
import numpy as np
import pytest

from memory.models import PAYLOAD_VERSION, MemoryEmbedding, VectorCollection
from memory.projections.rebuild import projections_rebuild
from memory.recall import RecallQuery, recall
from memory.services.memories import MemoryInput, memory_write
from memory.vector_index import VectorPoint
from memory.vectors import active_collection_row, from_bytes, owner_key, user_filters

pytestmark = pytest.mark.django_db


@pytest.fixture
def write(org, own_index, django_capture_on_commit_callbacks):
    def _write(content: str, *, on=None, user: str = "u1", kind: str = "fact"):
        with django_capture_on_commit_callbacks(execute=True):
            outcome = memory_write(MemoryInput(org=on or org, user_id=user, kind=kind, content=content))
        return outcome.memory

    return _write


@pytest.fixture
def searches(own_index, monkeypatch):
    """The filters of every search the index is asked for."""
    seen = []
    original = own_index.search_many

    def spy(vectors, *, filters, **kwargs):
        seen.append(dict(filters))
        return original(vectors, filters=filters, **kwargs)

    monkeypatch.setattr(own_index, "search_many", spy)
    return seen


def set_payload_version(version: int) -> None:
    VectorCollection.objects.filter(state="live").update(payload_version=version)
    VectorCollection.forget_cached_live()


def strip_owner(index, memory_ids) -> None:
    """Re-upsert these points as a collection of payload version 1 holds them: without `owner`."""
    live = active_collection_row()
    payloads = dict(index.scroll(collection=live.name))
    vectors = dict(MemoryEmbedding.objects.filter(memory_id__in=memory_ids, model_id=live.model_id)
                   .values_list("memory_id", "vector"))
    index.upsert([VectorPoint(i, from_bytes(vectors[i]), {k: v for k, v in payloads[i].items() if k != "owner"})
                  for i in memory_ids], collection=live.name)


def test_owner_keys_name_one_org_and_user_whatever_the_user_id_holds():
    pairs = [(1, "2:x"), (12, ":x"), (12, "x"), (1, "2x"), (1, ""), (123, "u:1:2")]
    keys = [owner_key(org_id, user_id) for org_id, user_id in pairs]
    assert len(set(keys)) == len(pairs)
    assert [tuple(key.split(":", 1)) for key in keys] == [(str(o), u) for o, u in pairs]


def test_a_point_carries_its_owner_and_recall_searches_by_it_alone(org, write, searches, own_index):
    memory = write("The user's harvester is serviced every spring in Harbin")
    payload = dict(own_index.scroll(collection=active_collection_row().name))[memory.id]
    assert payload["owner"] == owner_key(org.id, "u1")
    assert active_collection_row().payload_version == PAYLOAD_VERSION

    result = recall(RecallQuery(org=org, user_id="u1", query="When is the harvester serviced?"))

    assert [item.memory.id for item in result.items] == [memory.id]
    # Every point is active and of some kind: only the owner can exclude one.
    assert searches == [{"owner": owner_key(org.id, "u1")}]


def test_conditions_that_can_exclude_a_point_are_kept(org, write, searches):
    write("The user prefers maintenance reports sorted by urgency", kind="preference")
    recall(RecallQuery(org=org, user_id="u1", query="report order", kinds=["preference", "fact"]))
    recall(RecallQuery(org=org, user_id="u1", query="report order", include_episodes=False))
    assert searches[0] == {"owner": owner_key(org.id, "u1"), "kind": ["fact", "preference"]}
    assert searches[1]["kind"] == ["context", "event", "fact", "preference", "suggestion"]


def test_the_owner_scopes_a_search_to_one_org_when_two_share_a_user_id(org, other_org, write, own_index):
    ours = write("The user's dealer for spare parts is in Changchun")
    theirs = write("The user's dealer for spare parts is in Changchun", on=other_org)
    live = active_collection_row()
    vector = np.ones(live.dim, dtype=np.float32) / np.sqrt(live.dim)

    for org_, expected in ((org, ours), (other_org, theirs)):
        hits = own_index.search(vector, filters=user_filters(live, org_.id, "u1"), limit=10, collection=live.name)
        assert [hit.point_id for hit in hits] == [expected.id]


def semantic_hits(query: RecallQuery) -> dict:
    stages = recall(query).stages
    return next(stage for stage in stages if stage["stage"] == "candidates")["semantic"]


def test_a_collection_without_owner_fields_is_searched_by_org_and_user_until_rebuilt(org, write, searches,
                                                                                     own_index):
    memory = write("The user's tractor fleet has twelve machines")
    strip_owner(own_index, [memory.id])
    query = RecallQuery(org=org, user_id="u1", query="How many tractors?", explain=True)

    set_payload_version(PAYLOAD_VERSION)  # as if its points had the field: the search finds none of them
    assert semantic_hits(query) == {}

    set_payload_version(1)  # what migration 0012 records for a collection that existed before it
    assert set(semantic_hits(query)) == {memory.id}
    assert searches[-1] == {"org": str(org.id), "user_id": "u1"}

    report = projections_rebuild(optimize=False)

    assert report["upserted"] == 1
    live = active_collection_row()
    assert live.payload_version == PAYLOAD_VERSION
    assert dict(own_index.scroll(collection=live.name))[memory.id]["owner"] == owner_key(org.id, "u1")
    assert set(semantic_hits(query)) == {memory.id}
    assert searches[-1] == {"owner": owner_key(org.id, "u1")}
