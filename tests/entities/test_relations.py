"""Relations between entities (DESIGN §8): upserted and ended through REST, listed as neighbours, followed
by resolution ("它的工单") and by recall (one hop, below direct links), always through the access policy."""
import pytest

from entities.models import EntityRelation
from tests.conftest import make_client
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db

REGISTRY = [
    {"type": "asset", "external_id": "A-1", "name": "1号冷柜", "attributes": {"model": "XR-30", "site": "东厂房"}},
    {"type": "asset", "external_id": "A-2", "name": "2号冷柜", "attributes": {"model": "XR-30", "site": "西厂房"}},
    {"type": "asset", "external_id": "A-3", "name": "3号冷柜", "attributes": {"model": "XR-40", "site": "东厂房"}},
    {"type": "workorder", "external_id": "WO-1", "name": "维修单101"},
    {"type": "workorder", "external_id": "WO-2", "name": "维修单102"},
    {"type": "workorder", "external_id": "WO-3", "name": "维修单103", "grants": ["boss"]},
]


def ref(type_, external_id):
    return {"type": type_, "external_id": external_id}


def about(wo, asset, **extra):
    return {"from": ref("workorder", wo), "type": "about", "to": ref("asset", asset), **extra}


@pytest.fixture
def registry(api):
    assert api.post("/api/v1/entities/bulk", {"entities": REGISTRY}, format="json").status_code == 201
    body = {"relations": [about("WO-1", "A-1"), about("WO-2", "A-2"), about("WO-3", "A-1")]}
    response = api.post("/api/v1/relations/bulk", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def resolve(api, text, conversation_id=None):
    body = {"text": text, **({"conversation_id": conversation_id} if conversation_id else {})}
    response = api.post("/api/v1/entities/resolve", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def answer(body):
    if body["status"] == "resolved":
        return body["entity"]["external_id"]
    if body["status"] == "ambiguous":
        return sorted(c["external_id"] for c in body["candidates"])
    return None


def test_upsert_is_idempotent_and_ending_keeps_history(api, registry):
    again = api.post("/api/v1/relations", {**about("WO-1", "A-1"), "source": "erp-sync"}, format="json")
    assert again.status_code == 200 and again.json()["source"] == "erp-sync"
    assert EntityRelation.objects.filter(type="about").count() == 3
    ended = api.post("/api/v1/relations/end", {"relations": [{"from": ref("workorder", "WO-1"), "type": "about",
                                                             "to": ref("asset", "A-1")}]}, format="json")
    assert ended.json() == {"ended": 1}
    neighbours = api.get("/api/v1/entities/asset/A-1/neighbours").json()["neighbours"]
    assert [n["entity"]["external_id"] for n in neighbours] == []  # WO-3 is hidden from u1, WO-1 ended
    history = api.get("/api/v1/entities/asset/A-1/neighbours?include_history=true").json()["neighbours"]
    assert [(n["entity"]["external_id"], n["current"], n["valid_to"] is not None) for n in history] == [("WO-1", False, True)]
    # The same triple again opens a new row: the ended one stays as history.
    assert api.post("/api/v1/relations", about("WO-1", "A-1"), format="json").status_code == 201
    assert EntityRelation.objects.filter(from_entity__external_id="WO-1").count() == 2


def test_bad_relations_are_a_400_naming_the_field_and_store_nothing(api, registry):
    before = EntityRelation.objects.count()
    response = api.post("/api/v1/relations/bulk", {"relations": [about("WO-2", "A-3"), about("WO-2", "A-404")]}, format="json")
    assert response.status_code == 400 and "relations[1].to" in response.json()
    assert EntityRelation.objects.count() == before  # the batch is one transaction
    self_loop = api.post("/api/v1/relations", {"from": ref("asset", "A-1"), "type": "near", "to": ref("asset", "A-1")},
                         format="json")
    assert self_loop.status_code == 400 and "relation.to" in self_loop.json()
    late = api.post("/api/v1/relations", about("WO-2", "A-3", valid_from="2026-05-01T00:00:00Z", valid_to="2026-04-01T00:00:00Z"),
                    format="json")
    assert late.status_code == 400 and "relation.valid_to" in late.json()
    assert api.post("/api/v1/relations", {**about("WO-2", "A-3"), "extra": 1}, format="json").status_code == 400


def test_neighbours_follow_access_and_deactivation(api, org, registry):
    assert [n["entity"]["external_id"] for n in api.get("/api/v1/entities/workorder/WO-1/neighbours").json()["neighbours"]] == ["A-1"]
    boss = make_client(org, "boss")
    assert sorted(n["entity"]["external_id"] for n in boss.get("/api/v1/entities/asset/A-1/neighbours").json()["neighbours"]) \
        == ["WO-1", "WO-3"]
    assert api.get("/api/v1/entities/workorder/WO-3/neighbours").status_code == 404  # hidden = missing
    assert api.post("/api/v1/entities/workorder/WO-1/deactivate", {}, format="json").status_code == 200
    assert boss.get("/api/v1/entities/asset/A-1/neighbours").json()["neighbours"][0]["entity"]["external_id"] == "WO-3"
    assert EntityRelation.objects.filter(from_entity__external_id="WO-1").exists()  # hidden, not deleted


def test_resolution_by_attribute_values_qualifiers_and_parts(api, registry):
    assert answer(resolve(api, "那台 XR-30 又报警了")) == ["A-1", "A-2"]
    assert answer(resolve(api, "东厂房那台 XR-30 又报警了")) == "A-1"
    assert answer(resolve(api, "XR-40 的压缩机换了吗")) == "A-3"
    assert answer(resolve(api, "东厂房那台冷柜")) == ["A-1", "A-3"]
    assert answer(resolve(api, "5号冷柜在哪")) is None  # a number no entity carries names an unknown one


def test_resolution_follows_relations_and_never_shows_a_hidden_neighbour(api, org, registry):
    assert answer(resolve(api, "1号冷柜的维修单到哪一步了")) == "WO-1"  # WO-3 is also about A-1 but hidden
    boss = make_client(org, "boss")
    assert answer(resolve(boss, "1号冷柜的维修单到哪一步了")) == ["WO-1", "WO-3"]
    conv = create_conversation(api, "s-rel")
    assert api.post(f"/api/v1/conversations/{conv['id']}/messages",
                    {"role": "user", "content": "2号冷柜今天早上又不制冷了"}, format="json").status_code == 201
    assert answer(resolve(api, "它的维修单派给谁了", conv["id"])) == "WO-2"


def test_recall_follows_one_relation_below_direct_links(api, registry):
    note = api.post("/api/v1/memories", {"kind": "fact", "content": "师傅交代：压缩机启动电容已更换，三个月内复查。",
                                         "entities": ["workorder:WO-1"]}, format="json")
    assert note.status_code in (200, 201), note.content
    direct = api.post("/api/v1/memories", {"kind": "fact", "content": "这台设备放在东门卸货区旁边。",
                                           "entities": ["asset:A-1"]}, format="json")
    assert direct.status_code in (200, 201), direct.content
    # Linked to WO-3, about A-1 too but hidden from u1: never recalled through the relation.
    hidden = api.post("/api/v1/memories", {"kind": "fact", "content": "冷柜理赔金额一万二，等厂家回复。",
                                           "entities": ["workorder:WO-3"]}, format="json")
    assert hidden.status_code in (200, 201, 400), hidden.content
    body = api.post("/api/v1/recall", {"query": "1号冷柜之前有什么要注意的？", "k": 5, "explain": True}, format="json").json()
    contents = [item["content"] for item in body["items"]]
    assert any("启动电容" in c for c in contents), contents  # linked to WO-1, which is about A-1
    hop = next(item for item in body["items"] if "启动电容" in item["content"])
    assert hop["entity_path"] == {"from": "asset:A-1", "relation": "about", "direction": "in", "to": "workorder:WO-1",
                                  "current": True}
    assert not any("一万二" in c for c in contents)
    first = next(item for item in body["items"] if "卸货区" in item["content"])
    assert first["score_parts"]["entity"] > hop["score_parts"]["entity"] > 0


def test_recall_dates_an_ended_relation_and_ranks_it_below_the_current_one(api, registry):
    """A work order closed (its relation ended) is history: still recalled through it, below what the
    current relation brings, and its path says when it ended."""
    for wo, content in (("WO-1", "师傅交代：压缩机启动电容已更换，三个月内复查。"), ("WO-2", "2号冷柜门封条老化，已申请备件。")):
        assert api.post("/api/v1/memories", {"kind": "fact", "content": content, "entities": [f"workorder:{wo}"]},
                        format="json").status_code in (200, 201)
    ended = api.post("/api/v1/relations/end", {"relations": [{"from": ref("workorder", "WO-1"), "type": "about",
                                                             "to": ref("asset", "A-1")}]}, format="json")
    assert ended.json() == {"ended": 1}
    # WO-2 is about A-1 now (and no longer about A-2): a current relation beside the ended one.
    assert api.post("/api/v1/relations", about("WO-2", "A-1"), format="json").status_code == 201
    body = api.post("/api/v1/recall", {"query": "1号冷柜之前有什么要注意的？", "k": 5, "explain": True}, format="json").json()
    by_content = {item["content"]: item for item in body["items"]}
    past = next(item for c, item in by_content.items() if "启动电容" in c)
    now = next(item for c, item in by_content.items() if "门封条" in c)
    assert past["entity_path"]["current"] is False and past["entity_path"]["valid_to"]
    assert now["entity_path"]["current"] is True and "valid_to" not in now["entity_path"]
    assert now["score_parts"]["entity"] > past["score_parts"]["entity"] > 0


def test_a_relation_ending_at_a_set_time_leaves_the_snapshot_then(org, monkeypatch):
    """A relation upserted with a future end needs no write to end: the snapshot expires at its end."""
    import time
    from datetime import datetime, timedelta
    from datetime import timezone as tz

    from django.utils import timezone

    from entities.relations import relation_upsert
    from entities.selectors import entity_matcher_for_org, registry_changed
    from entities.services import entities_bulk_upsert

    entities_bulk_upsert(org=org, items=[{"type": "asset", "external_id": "A-9", "name": "9号冷柜"},
                                         {"type": "site", "external_id": "S-1", "name": "东厂房"}])
    relation_upsert(org=org, from_ref=ref("asset", "A-9"), type="located_at", to_ref=ref("site", "S-1"),
                    valid_to=timezone.now() + timedelta(hours=1))
    registry_changed(org.id)
    matcher = entity_matcher_for_org(org_id=org.id)
    asset = next(r.id for r in matcher.refs.values() if r.external_id == "A-9")
    assert [t for _o, t, _d in matcher.neighbours(asset)] == ["located_at"] and not matcher.past_neighbours(asset)
    later = time.time() + 2 * 3600
    monkeypatch.setattr(time, "time", lambda: later)
    monkeypatch.setattr(timezone, "now", lambda: datetime.fromtimestamp(later, tz=tz.utc))
    matcher = entity_matcher_for_org(org_id=org.id)
    assert not matcher.neighbours(asset) and [r[1] for r in matcher.past_neighbours(asset)] == ["located_at"]


def test_a_question_for_what_a_named_entity_relates_to(api, registry):
    assert answer(resolve(api, "维修单102 对应的是哪台设备？")) == "A-2"
    assert answer(resolve(api, "维修单102 今天能完工吗？")) == "WO-2"  # no question for a relation: itself
