"""Every stage of the recall pipeline, and each degradation."""
import pytest
from django.db import OperationalError

from memory.models import Memory
from memory.vector_index import VectorIndexUnavailable
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db


def remember(api, content, kind="fact", **extra):
    response = api.post("/api/v1/memories", {"kind": kind, "content": content, **extra}, format="json")
    assert response.status_code in (200, 201), response.content
    return response.json()["memory"]


def recall(api, query, **extra):
    response = api.post("/api/v1/recall", {"query": query, **extra}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_semantic_and_keyword_candidates_are_fused(api):
    remember(api, "我们合作社今年的采购预算是八十万")
    remember(api, "Our cooperative bought a new grain dryer from Nanjing")
    body = recall(api, "采购预算", explain=True)
    stages = {s["stage"]: s for s in body["stages"]}
    assert stages["candidates"]["semantic"] and stages["candidates"]["keyword"]
    top = body["items"][0]
    assert "八十万" in top["content"]
    assert top["score_parts"]["keyword"] == 1.0 and top["score_parts"]["semantic"] > 0


def test_cross_lingual_recall(api):
    remember(api, "我喜欢简洁的回答，不要长篇大论。", kind="preference")
    remember(api, "我们农场在黑龙江齐齐哈尔")
    items = recall(api, "What answer style does the user prefer?", k=1)["items"]
    assert "简洁" in items[0]["content"]


def test_stale_vector_hits_are_never_returned(api):
    memory = remember(api, "我们场站的备用发电机在二号仓库")
    # behind the projection's back: the row changes status in MySQL, the point stays
    Memory.objects.filter(id=memory["id"]).update(status="invalidated")
    body = recall(api, "备用发电机在哪", explain=True)
    assert body["items"] == []
    back_check = next(s for s in body["stages"] if s["stage"] == "back_check")
    assert str(memory["id"]) in back_check["dropped"] or memory["id"] in back_check["dropped"]


def test_deleted_row_behind_the_projection_is_not_recalled(api):
    memory = remember(api, "我们场站的备用发电机在二号仓库")
    Memory.objects.filter(id=memory["id"]).delete()
    assert recall(api, "备用发电机在哪")["items"] == []


def test_vector_index_down_degrades_to_keyword(api, monkeypatch):
    remember(api, "我们场站的备用发电机在二号仓库")

    class DeadIndex:
        def __getattr__(self, name):
            def fail(*args, **kwargs):
                raise VectorIndexUnavailable("down")
            return fail

    monkeypatch.setattr("memory.recall.candidates.get_vector_index", lambda: DeadIndex())
    body = recall(api, "备用发电机")
    assert body["degraded"] is True and body["degraded_reason"] == "vector_index_unavailable"
    assert "二号仓库" in body["items"][0]["content"]


def test_database_down_is_503_with_a_clear_message(api, monkeypatch):
    def down(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr("memory.api.views.recall", down)
    response = api.post("/api/v1/recall", {"query": "x"}, format="json")
    assert response.status_code == 503
    assert response.json()["code"] == "database_unavailable"


def test_kinds_filter_and_episodes(api):
    conv = create_conversation(api)
    api.post(f"/api/v1/conversations/{conv['id']}/messages",
             {"role": "user", "content": "以后给我的维保建议请按紧急程度从高到低排序。"}, format="json")
    # the episode says what the preference says: recall keeps one of two equal contents
    assert [i["kind"] for i in recall(api, "维保建议排序", k=10)["items"]] == ["preference"]
    assert [i["kind"] for i in recall(api, "维保建议排序", k=10, kinds=["episode"])["items"]] == ["episode"]
    only = recall(api, "维保建议排序", k=10, kinds=["preference"])["items"]
    assert {i["kind"] for i in only} == {"preference"}
    no_episodes = recall(api, "维保建议排序", k=10, include_episodes=False)["items"]
    assert "episode" not in {i["kind"] for i in no_episodes}


def test_reference_time_hides_what_was_not_yet_known(api):
    remember(api, "我们农场在黑龙江齐齐哈尔", at="2026-03-05T00:00:00+08:00")
    assert recall(api, "农场在哪", at="2026-03-01T00:00:00+08:00")["items"] == []
    assert recall(api, "农场在哪", at="2026-03-06T00:00:00+08:00")["items"]


def test_expired_memories_are_not_recalled(api):
    remember(api, "本周只看东区的设备", kind="context", valid_to="2026-01-01T00:00:00Z")
    assert recall(api, "东区的设备")["items"] == []


def test_duplicates_collapse_and_access_stats_are_counted(api):
    memory = remember(api, "我们合作社今年的采购预算是八十万")
    again = remember(api, "我们合作社今年的采购预算是八十万")
    assert again["id"] == memory["id"]  # the same statement twice is one memory, not two
    before = Memory.objects.get(id=memory["id"]).access_count  # the restatement itself may count
    items = recall(api, "采购预算")["items"]
    assert [i["id"] for i in items].count(memory["id"]) == 1
    recall(api, "采购预算")
    assert Memory.objects.get(id=memory["id"]).access_count == before + 2


def test_entity_filter_and_boost(api):
    api.post("/api/v1/entities", {"type": "asset", "external_id": "A-1", "name": "1号收割机"}, format="json")
    api.post("/api/v1/entities", {"type": "asset", "external_id": "A-2", "name": "2号收割机"}, format="json")
    remember(api, "割台链条断了", kind="event", entities=["asset:A-2"])
    remember(api, "割台链条换了新的", kind="event", entities=["asset:A-1"])
    items = recall(api, "割台链条", entities=["asset:A-1"])["items"]
    assert [i["entity_ids"] for i in items] == [["asset:A-1"]]
