"""memory_sync (memory/projections.py): once, twice, stale version, deletions, index down, cache hash."""
import pytest
from django.db.models import F

from memory.cache import memory_cache
from memory.models import Memory
from memory.projections import memory_sync
from memory.projections.reconcile import projections_reconcile
from memory.recall import RecallQuery, recall
from memory.services.memories import MemoryInput, memory_invalidate, memory_update, memory_write
from memory.vector_index import VectorIndexUnavailable, get_vector_index, reset_vector_index
from memory.vectors import active_collection, active_embedder
from tests.conftest import SERVICE_PROFILE

pytestmark = pytest.mark.django_db


@pytest.fixture
def index(own_index):
    return own_index


@pytest.fixture
def write(org, django_capture_on_commit_callbacks):
    """memory_write; with project=True the on-commit projection runs, as after a real commit."""

    def _write(content: str, *, user: str = "u1", kind: str = "fact", project: bool = True, **extra) -> Memory:
        inp = MemoryInput(org=org, user_id=user, kind=kind, content=content, **extra)
        if project:
            with django_capture_on_commit_callbacks(execute=True):
                outcome = memory_write(inp)
        else:
            outcome = memory_write(inp)  # its on-commit task never runs inside the test transaction
        assert outcome.action in ("added", "superseded"), outcome.action
        return Memory.objects.get(id=outcome.memory.id)

    return _write


def points(index) -> dict[int, dict]:
    return dict(index.scroll(collection=active_collection()))


def test_sync_once_upserts_the_point_and_records_projected_version(index, write, org):
    memory = write("The user's harvester fleet is serviced in Harbin", project=False)
    assert memory.projected_version == 0

    assert memory_sync(memory_id=memory.id, version=memory.version) == "upserted"

    payload = points(index)[memory.id]
    assert payload["version"] == 1 and payload["status"] == "active"
    assert payload["org"] == str(org.id) and payload["user_id"] == "u1" and payload["kind"] == "fact"
    assert Memory.objects.get(id=memory.id).projected_version == 1
    hits = index.search(active_embedder().encode_one("harvester service"), filters={"org": str(org.id), "user_id": "u1"},
                        limit=5, collection=active_collection())
    assert [hit.point_id for hit in hits] == [memory.id]


def test_sync_twice_gives_the_same_result(index, write):
    memory = write("The user prefers short answers", kind="preference", project=False)
    memory_sync(memory_id=memory.id, version=memory.version)
    first = points(index)

    assert memory_sync(memory_id=memory.id, version=memory.version) == "upserted"

    assert points(index) == first
    assert index.count(collection=active_collection()) == 1
    assert Memory.objects.get(id=memory.id).projected_version == 1


def test_stale_version_changes_nothing(index, write):
    memory = write("Maintenance plans cover two weeks", project=True)
    memory_update(memory_id=memory.id, content="Maintenance plans cover one month", actor="test")  # v2, not projected
    before = points(index)

    assert memory_sync(memory_id=memory.id, version=1) == "skipped"

    assert points(index) == before and before[memory.id]["version"] == 1
    assert Memory.objects.get(id=memory.id).projected_version == 1
    assert memory_sync(memory_id=memory.id, version=2) == "upserted"
    assert points(index)[memory.id]["version"] == 2


def _delete_row(memory: Memory, **_) -> int:
    Memory.objects.filter(id=memory.id).delete()
    return memory.version


def _forget_row(memory: Memory, **_) -> int:
    # What a forget leaves when its immediate delete could not reach the index.
    Memory.objects.filter(id=memory.id).update(status="forgotten", content="", active_hash=None, version=F("version") + 1)
    return memory.version + 1


def _supersede_row(memory: Memory, *, write) -> int:
    write("The user now lives in Qiqihar", supersedes=[memory.id], project=False)
    return Memory.objects.get(id=memory.id).version


def _invalidate_row(memory: Memory, **_) -> int:
    return memory_invalidate(memory_id=memory.id, reason="wrong", actor="test").version


@pytest.mark.parametrize("change", [_delete_row, _forget_row, _supersede_row, _invalidate_row],
                         ids=["deleted", "forgotten", "superseded", "invalidated"])
def test_a_row_that_is_no_longer_active_loses_its_point(index, write, change):
    memory = write("The user lives in Jiamusi", project=True)
    assert memory.id in points(index)

    version = change(memory, write=write)

    assert memory_sync(memory_id=memory.id, version=version) == "deleted"
    assert memory.id not in points(index)
    row = Memory.objects.filter(id=memory.id).first()
    assert row is None or row.projected_version == row.version
    assert memory_sync(memory_id=memory.id, version=version) == "deleted"  # twice: still nothing there


def _close_index(settings) -> None:
    get_vector_index().close()


def _dead_server(settings) -> None:
    settings.QDRANT_URL = "http://127.0.0.1:9"  # discard port: connection refused
    reset_vector_index()


@pytest.mark.parametrize("take_down", [_close_index, _dead_server], ids=["closed", "dead-server"])
def test_index_down_raises_and_the_row_stays_lagging(index, write, settings, take_down):
    memory = write("The user's dealer is in Changchun", project=False)
    active_collection()  # the live collection exists before the outage
    take_down(settings)

    with pytest.raises(VectorIndexUnavailable):
        memory_sync(memory_id=memory.id, version=memory.version)

    assert Memory.objects.get(id=memory.id).projected_version == 0


# An eager task with autoretry raises celery's Retry when its backend is down; enqueue() must
# swallow it like VectorIndexUnavailable, or the committed write's on-commit hook fails the request.
def test_write_while_index_is_down_succeeds(index, write):
    active_collection()
    get_vector_index().close()

    down = write("The user's workshop opens at seven", project=True)  # the projection fails, the write does not

    assert Memory.objects.get(id=down.id).projected_version == 0


def test_reconcile_after_recovery_reports_then_fixes_what_the_outage_missed(index, write, org):
    kept = write("The user likes tractors from Deere", project=True)
    get_vector_index().close()
    down = write("The user's workshop opens at seven", project=False)  # committed; its projection never ran
    with pytest.raises(VectorIndexUnavailable):
        memory_sync(memory_id=down.id, version=down.version)
    with pytest.raises(VectorIndexUnavailable):
        projections_reconcile(fix=True)

    reset_vector_index()  # the index comes back
    report = projections_reconcile(fix=False)
    assert (report["missing"], report["orphan"], report["fixed"]) == (1, 0, 0)
    assert down.id not in points(get_vector_index())

    fixed = projections_reconcile(fix=True)

    assert fixed["missing"] == 1 and fixed["fixed"] == 1
    after = projections_reconcile(fix=False)
    assert (after["missing"], after["orphan"], after["stale"]) == (0, 0, 0)
    assert set(points(get_vector_index())) == {kept.id, down.id}
    assert Memory.objects.get(id=down.id).projected_version == 1
    result = recall(RecallQuery(org=org, user_id="u1", query="when does the workshop open"))
    assert not result.degraded and result.items[0].memory.id == down.id
    assert result.items[0].parts["semantic"] > 0


def test_sync_updates_the_users_hash_and_invalidation_removes_it(index, write, org, django_capture_on_commit_callbacks):
    first = write("The user prefers metric units", kind="preference")
    memory_cache.fill(org.id, "u1", [first])  # a read filled the hash

    second = write("The user works night shifts")

    assert set(memory_cache.get_all(org.id, "u1")) == {first.id, second.id}
    if SERVICE_PROFILE:
        from django_redis import get_redis_connection

        raw = get_redis_connection("default")
        assert raw.hexists(f"mem:active:{org.id}:u1", str(second.id))
    with django_capture_on_commit_callbacks(execute=True):
        memory_invalidate(memory_id=second.id, reason="wrong", actor="test")
    assert set(memory_cache.get_all(org.id, "u1")) == {first.id}
    if SERVICE_PROFILE:
        assert not raw.hexists(f"mem:active:{org.id}:u1", str(second.id))
    assert second.id not in points(index)
