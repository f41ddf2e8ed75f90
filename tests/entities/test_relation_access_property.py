"""Property: for random registries, relations (some ended) and grants, no resolution, neighbour list or recall ever
shows an entity, or a memory through a relation, that the acting user may not read (DESIGN §8)."""
import itertools

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tenancy.services import org_get_or_create
from tests.conftest import make_client

pytestmark = pytest.mark.django_db(transaction=True)

_counter = itertools.count()
KINDS = ["冷柜", "叉车", "保温车"]
SITES = ["东厂房", "西厂房"]
MODELS = ["XR-30", "XR-40"]

asset = st.fixed_dictionaries({"kind": st.sampled_from(KINDS), "site": st.sampled_from(SITES),
                               "model": st.sampled_from(MODELS), "hidden": st.booleans()})
registry = st.fixed_dictionaries({
    "assets": st.lists(asset, min_size=2, max_size=5),
    "orders": st.lists(st.fixed_dictionaries({"about": st.integers(0, 4), "hidden": st.booleans(), "ended": st.booleans()}),
                       min_size=1, max_size=5),
})


def _texts(assets, entities) -> list[str]:
    texts = ["它的工单到哪一步了", "那台 XR-30 又报警了", "东厂房那台 XR-40 的工单"]
    for i, a in enumerate(assets):
        texts += [f"{i + 1}号{a['kind']}的工单", f"{a['site']}那台{a['kind']}", f"那辆{a['kind']}怎么样了"]
    return texts + [f"{e['name']}怎么样了" for e in entities]


@hsettings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(reg=registry)
def test_nothing_hidden_is_resolved_listed_or_recalled_through_a_relation(reg):
    org = org_get_or_create(slug=f"relprop{next(_counter)}")
    owner, user = make_client(org, "owner"), make_client(org, "u2")
    entities, hidden = [], set()
    for i, a in enumerate(reg["assets"]):
        external_id = f"A-{i + 1}"
        entities.append({"type": "asset", "external_id": external_id, "name": f"{i + 1}号{a['kind']}",
                         "attributes": {"site": a["site"], "model": a["model"]}, **({"grants": ["owner"]} if a["hidden"] else {})})
        if a["hidden"]:
            hidden.add(external_id)
    relations = []
    for j, o in enumerate(reg["orders"]):
        external_id = f"WO-{j + 1}"
        entities.append({"type": "workorder", "external_id": external_id, "name": f"工单{j + 1:03d}",
                         **({"grants": ["owner"]} if o["hidden"] else {})})
        if o["hidden"]:
            hidden.add(external_id)
        target = f"A-{o['about'] % len(reg['assets']) + 1}"
        relations.append({"from": {"type": "workorder", "external_id": external_id}, "type": "about",
                          "to": {"type": "asset", "external_id": target}})
    assert owner.post("/api/v1/entities/bulk", {"entities": entities}, format="json").status_code == 201
    assert owner.post("/api/v1/relations/bulk", {"relations": relations}, format="json").status_code == 201
    # Closed work orders: their relations are history, which recall still follows (dated).
    ended = [r for r, o in zip(relations, reg["orders"]) if o["ended"]]
    if ended:
        assert owner.post("/api/v1/relations/end", {"relations": ended}, format="json").status_code == 200
    visible = {e["external_id"] for e in entities} - hidden

    seen_by_owner = set()
    conv = user.post("/api/v1/conversations", {"external_id": "c"}, format="json").json()
    first = reg["assets"][0]
    assert user.post(f"/api/v1/conversations/{conv['id']}/messages",
                     {"role": "user", "content": f"1号{first['kind']}今天又坏了"}, format="json").status_code == 201
    for text in _texts(reg["assets"], entities):
        for client, who in ((user, "u2"), (owner, "owner")):
            body = client.post("/api/v1/entities/resolve", {"text": text, **({"conversation_id": conv["id"]} if who == "u2" else {})},
                               format="json").json()
            named = ({body["entity"]["external_id"]} if body["status"] == "resolved" else set()) \
                | {c["external_id"] for c in body["candidates"]}
            if who == "u2":
                assert named <= visible, (text, named, hidden)
            else:
                seen_by_owner |= named
    for e in entities:
        response = user.get(f"/api/v1/entities/{e['type']}/{e['external_id']}/neighbours?include_history=true")
        if e["external_id"] in hidden:
            assert response.status_code == 404
        else:
            assert {n["entity"]["external_id"] for n in response.json()["neighbours"]} <= visible

    # Memories the user wrote about each work order, recalled by naming the assets.
    for o in entities:
        if o["type"] == "workorder":
            user.post("/api/v1/memories", {"kind": "fact", "content": f"{o['name']}：压缩机电容已更换",
                                           "entities": [f"workorder:{o['external_id']}"]}, format="json")
    for i, a in enumerate(reg["assets"]):
        body = user.post("/api/v1/recall", {"query": f"{i + 1}号{a['kind']}之前修过什么", "k": 10, "explain": True},
                         format="json").json()
        for item in body["items"]:
            linked = {ref.split(":", 1)[1] for ref in item["entity_ids"]}
            assert linked <= visible, (item, hidden)
            if "entity_path" in item:
                assert {item["entity_path"]["from"].split(":", 1)[1], item["entity_path"]["to"].split(":", 1)[1]} <= visible
    # Positive control: the owner, who may read them, is answered with every hidden entity by its name.
    assert hidden <= seen_by_owner, (hidden, seen_by_owner)
