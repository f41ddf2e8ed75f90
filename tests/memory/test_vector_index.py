import threading
import time

import numpy as np
import pytest

from memory.vector_index import (
    EdgeVectorIndex,
    QdrantServerIndex,
    VectorIndexUnavailable,
    VectorPoint,
    get_vector_index,
    reset_vector_index,
)
from memory.vector_index.base import FilterBuilder, build_filter

DIM = 8
COLL = "memories__test__8"


def unit(*values: float) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[: len(values)] = values
    return v / np.linalg.norm(v)


def rand_unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture(params=["edge", "server"])
def index(request, tmp_path):
    idx = EdgeVectorIndex(tmp_path / "qdrant") if request.param == "edge" else QdrantServerIndex(":memory:")
    idx.ensure_collection(COLL, DIM)
    idx.set_live(COLL)
    yield idx
    idx.close()


def ids(hits) -> list[int]:
    return [h.point_id for h in hits]


def test_search_returns_nearest_with_payload(index):
    index.upsert(
        [
            VectorPoint(1, unit(1, 0), {"org": "acme", "user_id": "u1", "kind": "fact"}),
            VectorPoint(2, unit(0, 1), {"org": "acme", "user_id": "u1", "kind": "event"}),
            VectorPoint(3, unit(1, 1), {"org": "acme", "user_id": "u1", "kind": "fact"}),
        ]
    )

    hits = index.search(unit(0.1, 1), filters={"org": "acme"}, limit=2)

    assert ids(hits) == [2, 3]
    assert hits[0].payload == {"org": "acme", "user_id": "u1", "kind": "event"}
    assert hits[0].score > hits[1].score
    assert hits[0].score == pytest.approx(float(unit(0.1, 1) @ unit(0, 1)), abs=1e-4)


def test_org_and_user_filters_isolate_tenants(index):
    rng = np.random.default_rng(7)
    points, query = [], None
    for pid in range(60):
        org, user = ("acme", "globex")[pid % 2], f"u{pid % 3}"
        vec = rand_unit(rng)
        if pid == 11:  # a globex point that is the exact query: it would win without the filter
            query = vec
        points.append(VectorPoint(pid, vec, {"org": org, "user_id": user}))
    index.upsert(points)

    unfiltered = index.search(query, filters={}, limit=1)
    acme = index.search(query, filters={"org": "acme"}, limit=60)
    acme_u1 = index.search(query, filters={"org": "acme", "user_id": "u1"}, limit=60)

    assert ids(unfiltered) == [11]
    assert len(acme) == 30 and all(h.payload["org"] == "acme" for h in acme)
    assert sorted(ids(acme_u1)) == [p for p in range(60) if p % 2 == 0 and p % 3 == 1]
    assert index.count(filters={"org": "globex"}) == 30


def test_any_of_and_must_not(index):
    index.upsert(
        [
            VectorPoint(1, unit(1, 0), {"org": "acme", "kind": "fact", "status": "active", "entity_ids": [3, 7]}),
            VectorPoint(2, unit(1, 0.1), {"org": "acme", "kind": "event", "status": "archived", "entity_ids": [7]}),
            VectorPoint(3, unit(1, 0.2), {"org": "acme", "kind": "preference", "status": "active", "entity_ids": []}),
            VectorPoint(4, unit(1, 0.3), {"org": "acme", "kind": "fact", "status": "active", "entity_ids": [9]}),
        ]
    )
    q = unit(1, 0)

    def search(filters):
        return sorted(ids(index.search(q, filters={"org": "acme", **filters}, limit=10)))

    assert search({"kind": ["fact", "event"]}) == [1, 2, 4]
    assert search({"entity_ids": [7]}) == [1, 2]  # any-of on a list-valued field
    assert search({"entity_ids": [3, 9]}) == [1, 4]
    assert search({"kind": []}) == []
    assert search({"must_not": {"status": "archived"}}) == [1, 3, 4]
    assert search({"kind": ["fact", "event"], "must_not": {"entity_ids": [9]}}) == [1, 2]
    # must_not drops a point when any of its conditions matches
    assert search({"must_not": {"status": "archived", "kind": "preference"}}) == [1, 4]
    assert index.count(filters={"must_not": {"kind": ["fact"]}}) == 2


def test_range_and_bool_filters(index):
    index.upsert(
        [
            VectorPoint(pid, unit(1, pid / 10), {"org": "acme", "created_ts": ts, "pinned": pinned})
            for pid, ts, pinned in [(1, 100, True), (2, 200.5, False), (3, 300, True), (4, 400, False)]
        ]
    )
    q = unit(1, 0)

    def search(filters):
        return sorted(ids(index.search(q, filters=filters, limit=10)))

    assert search({"created_ts": {"gte": 200}}) == [2, 3, 4]
    assert search({"created_ts": {"lte": 300}}) == [1, 2, 3]
    assert search({"created_ts": {"gte": 150, "lte": 350}}) == [2, 3]
    assert search({"created_ts": {"gt": 300}}) == [4]
    assert search({"created_ts": 200.5}) == [2]
    assert search({"pinned": True}) == [1, 3]
    assert search({"pinned": False}) == [2, 4]
    assert search({"must_not": {"created_ts": {"gte": 300}}}) == [1, 2]


def test_upsert_same_id_replaces_point_and_payload(index):
    index.upsert([VectorPoint(5, unit(1, 0), {"org": "acme", "version": 1})])
    index.upsert([VectorPoint(5, unit(0, 1), {"org": "acme", "version": 2})])

    assert index.count() == 1
    [hit] = index.search(unit(0, 1), filters={"org": "acme"}, limit=5)
    assert hit.point_id == 5 and hit.payload == {"org": "acme", "version": 2}
    assert hit.score == pytest.approx(1.0, abs=1e-4)


def test_delete_is_idempotent(index):
    index.upsert([VectorPoint(1, unit(1, 0), {"org": "acme"}), VectorPoint(2, unit(0, 1), {"org": "acme"})])

    index.delete([1])
    index.delete([1])
    index.delete([999])
    index.delete([])

    assert index.count() == 1
    assert ids(index.search(unit(1, 0), filters={}, limit=5)) == [2]


def test_scroll_yields_every_point_across_pages(index):
    rng = np.random.default_rng(3)
    index.upsert([VectorPoint(pid, rand_unit(rng), {"org": "acme", "n": pid}) for pid in range(1, 24)])

    seen = dict(index.scroll(batch=5))
    acme_even = [pid for pid, _ in index.scroll(filters={"n": {"gte": 20}}, batch=2)]

    assert sorted(seen) == list(range(1, 24))
    assert all(seen[pid]["n"] == pid for pid in seen)
    assert sorted(acme_even) == [20, 21, 22, 23]


def test_live_pointer_switch(index):
    other = "memories__test2__8"
    index.ensure_collection(other, DIM)
    index.upsert([VectorPoint(1, unit(1, 0), {"org": "acme"})])  # into the live one (COLL)
    index.upsert([VectorPoint(2, unit(1, 0), {"org": "acme"})], collection=other)

    assert index.live_collection() == COLL
    assert ids(index.search(unit(1, 0), filters={}, limit=5)) == [1]

    index.set_live(other)

    assert index.live_collection() == other
    assert ids(index.search(unit(1, 0), filters={}, limit=5)) == [2]
    assert index.count(collection=COLL) == 1
    assert {COLL, other} <= set(index.collections())

    index.drop_collection(other)

    assert index.live_collection() is None
    assert other not in index.collections()
    with pytest.raises(VectorIndexUnavailable):
        index.search(unit(1, 0), filters={}, limit=5)
    with pytest.raises(ValueError):
        index.set_live("memories__missing__8")


def test_ensure_collection_is_idempotent_and_checks_dim(index):
    index.upsert([VectorPoint(1, unit(1, 0), {"org": "acme"})])

    index.ensure_collection(COLL, DIM)

    assert index.count() == 1
    with pytest.raises(ValueError):
        index.ensure_collection(COLL, DIM * 2)
    with pytest.raises(ValueError):
        index.upsert([VectorPoint(2, np.ones(DIM + 1, dtype=np.float32), {})])


def test_unavailable_after_close(index):
    index.upsert([VectorPoint(1, unit(1, 0), {"org": "acme"})])
    index.close()

    with pytest.raises(VectorIndexUnavailable):
        index.search(unit(1, 0), filters={}, limit=1)
    with pytest.raises(VectorIndexUnavailable):
        index.upsert([VectorPoint(2, unit(1, 0), {})])
    with pytest.raises(VectorIndexUnavailable):
        index.count()
    index.close()  # closing twice is harmless


def test_malformed_filters_raise_value_error(index):
    for bad in ({"org": None}, {"ts": {"between": 1}}, {"kind": ["a", 1]}, {"must_not": {"must_not": {}}}):
        with pytest.raises(ValueError):
            index.search(unit(1, 0), filters=bad, limit=1)


def test_dead_server_raises_unavailable_quickly():
    index = QdrantServerIndex("http://127.0.0.1:1", timeout=2)
    started = time.monotonic()
    try:
        for call in (
            lambda: index.search(unit(1, 0), filters={"org": "acme"}, limit=5),
            lambda: index.upsert([VectorPoint(1, unit(1, 0), {})]),
            lambda: index.count(),
            lambda: index.live_collection(),
            lambda: index.ensure_collection(COLL, DIM),
        ):
            with pytest.raises(VectorIndexUnavailable):
                call()
    finally:
        index.close()
    assert time.monotonic() - started < 10  # liveness: five refused calls, no retry loop waiting on a dead server


def test_edge_data_survives_close_and_reopen(tmp_path):
    path = tmp_path / "qdrant"
    first = EdgeVectorIndex(path)
    first.ensure_collection(COLL, DIM)
    first.set_live(COLL)
    first.upsert([VectorPoint(pid, unit(1, pid), {"org": "acme", "n": pid}) for pid in range(1, 6)])
    first.delete([5])
    first.close()

    reopened = EdgeVectorIndex(path)
    try:
        assert reopened.live_collection() == COLL
        assert reopened.collections() == [COLL]
        assert reopened.count() == 4
        [hit] = reopened.search(unit(1, 3), filters={"n": 3}, limit=1)
        assert hit.point_id == 3 and hit.payload == {"org": "acme", "n": 3}
    finally:
        reopened.close()


def test_edge_second_opener_of_same_path_is_unavailable(tmp_path):
    owner = EdgeVectorIndex(tmp_path / "qdrant")
    owner.ensure_collection(COLL, DIM)
    owner.set_live(COLL)
    intruder = EdgeVectorIndex(tmp_path / "qdrant")
    try:
        with pytest.raises(VectorIndexUnavailable):
            intruder.count()  # the shard's WAL is locked by the owner
        assert owner.count() == 0
    finally:
        intruder.close()
        owner.close()


def test_edge_no_live_collection_is_unavailable(tmp_path):
    index = EdgeVectorIndex(tmp_path / "qdrant")
    try:
        assert index.live_collection() is None
        with pytest.raises(VectorIndexUnavailable):
            index.upsert([VectorPoint(1, unit(1, 0), {})])
        with pytest.raises(VectorIndexUnavailable):
            index.search(unit(1, 0), filters={}, limit=1, collection="memories__missing__8")
    finally:
        index.close()


class _Recorder(FilterBuilder):
    def eq(self, key, value):
        return ("eq", key, value)

    def any_of(self, key, values):
        return ("any", key, tuple(values))

    def range(self, key, bounds):
        return ("range", key, tuple(sorted(bounds.items())))

    def combine(self, must, must_not):
        return (tuple(must), tuple(must_not))


def test_filter_language_translation():
    built = build_filter(
        {"org": "acme", "kind": ["fact"], "ts": {"gte": 1, "lte": None}, "must_not": {"status": "archived"}},
        _Recorder(),
    )

    assert built == (
        (("eq", "org", "acme"), ("any", "kind", ("fact",)), ("range", "ts", (("gte", 1.0),))),
        (("eq", "status", "archived"),),
    )
    assert build_filter({}, _Recorder()) is None
    assert build_filter(None, _Recorder()) is None


def test_get_vector_index_is_a_singleton_built_from_settings(tmp_path):
    django_settings = pytest.importorskip("django.conf").settings
    if not django_settings.configured:
        pytest.skip("Django settings are not configured")
    from django.test import override_settings

    reset_vector_index()
    try:
        with override_settings(QDRANT_URL="", VECTOR_INDEX_PATH=str(tmp_path / "qdrant")):
            edge = get_vector_index()
            assert isinstance(edge, EdgeVectorIndex) and get_vector_index() is edge
            edge.ensure_collection(COLL, DIM)
            reset_vector_index()
            with pytest.raises(VectorIndexUnavailable):  # reset closed it
                edge.collections()
        with override_settings(QDRANT_URL=":memory:", QDRANT_API_KEY=None):
            assert isinstance(get_vector_index(), QdrantServerIndex)
    finally:
        reset_vector_index()  # later tests rebuild from their own settings


def test_edge_is_safe_under_concurrent_threads(tmp_path):
    index = EdgeVectorIndex(tmp_path / "qdrant")
    index.ensure_collection(COLL, DIM)
    index.set_live(COLL)
    errors: list[BaseException] = []

    def writer(offset: int) -> None:
        rng = np.random.default_rng(offset)
        try:
            for pid in range(offset, offset + 100):
                index.upsert([VectorPoint(pid, rand_unit(rng), {"org": "acme", "w": offset})])
                index.search(rand_unit(rng), filters={"org": "acme"}, limit=3)
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i * 1000,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        assert index.count() == 400
        assert index.count(filters={"w": 2000}) == 100
    finally:
        index.close()



def test_search_without_payload_returns_the_same_ids_and_scores(index):
    rng = np.random.default_rng(3)
    index.upsert([VectorPoint(pid, rand_unit(rng), {"org": "acme", "user_id": "u1"}) for pid in range(1, 30)])
    query = rand_unit(rng)
    full = index.search(query, filters={"org": "acme", "user_id": "u1"}, limit=10)
    bare = index.search(query, filters={"org": "acme", "user_id": "u1"}, limit=10, with_payload=False)
    assert [(h.point_id, round(h.score, 5)) for h in bare] == [(h.point_id, round(h.score, 5)) for h in full]
    assert full[0].payload["user_id"] == "u1" and not bare[0].payload


def test_search_many_answers_each_vector_as_its_own_search(index):
    rng = np.random.default_rng(4)
    index.upsert([VectorPoint(pid, rand_unit(rng), {"org": "acme", "user_id": "u1" if pid % 3 else "u2"})
                  for pid in range(1, 60)])
    queries = [rand_unit(rng) for _ in range(3)]
    filters = {"org": "acme", "user_id": "u1"}
    batched = index.search_many(queries, filters=filters, limit=7, with_payload=False)
    assert len(batched) == 3
    for query, hits in zip(queries, batched):
        alone = index.search(query, filters=filters, limit=7, with_payload=False)
        assert [(h.point_id, round(h.score, 5)) for h in hits] == [(h.point_id, round(h.score, 5)) for h in alone]
        assert all(h.point_id % 3 for h in hits)  # the filter holds for every vector of the batch
