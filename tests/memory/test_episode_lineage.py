"""Episodes follow what their message became (memory/recall/lineage.py): superseded →
below the current memory; active → below that memory; task-scoped → only in its own conversation;
the assistant's acknowledgement inherits the user turn it answers."""
import json

import pytest

from memory.models import Memory
from memory.recall.lineage import episode_lineage
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db


def turn(api, conv, role, content):
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages", {"role": role, "content": content}, format="json")
    assert response.status_code == 201, response.content


def recall(api, query, conv, k=8):
    response = api.post("/api/v1/recall", {"query": query, "k": k, "conversation_id": conv["id"], "explain": True},
                        format="json")
    assert response.status_code == 200, response.content
    return response.json()


def lineage_states(body) -> dict[int, dict]:
    stage = next(s for s in body["stages"] if s["stage"] == "episode_lineage")
    return {int(k): v for k, v in stage["states"].items()}


def test_superseded_statement_and_its_acknowledgement_rank_below_the_current_memory(api):
    s1, s2, s3 = (create_conversation(api, name) for name in ("s1", "s2", "s3"))
    turn(api, s1, "user", "维保计划默认给我看未来两周的。")
    turn(api, s1, "assistant", "明白，默认展示未来两周。")
    turn(api, s2, "user", "以后维保计划默认改成看未来一个月的。")
    current = Memory.objects.exclude(kind="episode").get(status="active")
    assert "一个月" in current.content and Memory.objects.filter(status="superseded").exists()
    body = recall(api, "维保计划默认看多长时间", s3)
    items = body["items"]
    assert items[0]["id"] == current.id
    old = [i for i in items if "两周" in i["content"]]
    assert old and all(i["kind"] == "episode" for i in old)
    states = lineage_states(body)
    for item in old:  # the user's turn and the assistant's acknowledgement alike
        assert states[item["id"]] == {"state": "stale", "refs": [current.id]}
        assert item["score"] < items[0]["score"]
    context = api.post(f"/api/v1/conversations/{s3['id']}/context", {"message": "维保计划默认看多长时间"},
                       format="json").json()
    memory_sections = [s for s in context["sections"] if s["name"] in ("memories", "preferences")]
    assert "一个月" in json.dumps(memory_sections, ensure_ascii=False)
    assert "两周" not in json.dumps(memory_sections, ensure_ascii=False)


def test_an_active_memory_outranks_the_episode_it_came_from(api):
    s1, s2 = create_conversation(api, "s1"), create_conversation(api, "s2")
    turn(api, s1, "user", "我喜欢简洁的回答，不要长篇大论。")
    turn(api, s1, "assistant", "好的，以后回答尽量简洁。")
    memory = Memory.objects.exclude(kind="episode").get()
    body = recall(api, "我喜欢什么样的回答", s2)
    assert body["items"][0]["id"] == memory.id
    states = lineage_states(body)
    assert all(v == {"state": "live", "refs": [memory.id]} for v in states.values())


def test_a_task_scoped_instruction_stays_in_its_own_conversation(api):
    s1, s2, s3 = (create_conversation(api, name) for name in ("s1", "s2", "s3"))
    turn(api, s1, "user", "维保计划默认给我看未来两周的。")
    turn(api, s2, "user", "这次只看本周的就行。")
    turn(api, s2, "assistant", "好的，这次只列本周。")
    assert Memory.objects.filter(scope="task", kind="context").exists()
    elsewhere = recall(api, "维保计划看多长时间", s3)
    assert not [i for i in elsewhere["items"] if "本周" in i["content"]]
    dropped = next(s for s in elsewhere["stages"] if s["stage"] == "episode_lineage")["dropped"]
    instruction = Memory.objects.get(kind="episode", content__startswith="这次只看")
    ack = Memory.objects.get(kind="episode", content__startswith="好的，这次")
    assert dropped.get(str(instruction.id)) == "task-scoped instruction of another conversation"
    # the assistant's acknowledgement inherits the instruction's scope (dropped too whenever it is a candidate)
    lineage = episode_lineage(ack.org_id, {ack.id})[ack.id]
    assert (lineage.state, lineage.conversation_id) == ("task", s2["id"])
    assert set(dropped.values()) <= {"task-scoped instruction of another conversation"}
    context = api.post(f"/api/v1/conversations/{s3['id']}/context", {"message": "维保计划看多长时间"}, format="json").json()
    assert "本周" not in json.dumps(context, ensure_ascii=False)
    own = recall(api, "这次看多长时间", s2)
    assert [i for i in own["items"] if "本周" in i["content"]]  # its own conversation still has it


def test_small_talk_is_not_recalled_as_history(api):
    s1, s2 = create_conversation(api, "s1"), create_conversation(api, "s2")
    turn(api, s1, "user", "好的，坚持下去！")
    turn(api, s1, "user", "周报的格式用表格。")
    body = recall(api, "坚持", s2)
    assert not [i for i in body["items"] if "坚持" in i["content"]]
    assert "small talk" in next(s for s in body["stages"] if s["stage"] == "episode_lineage")["dropped"].values()
    assert Memory.objects.filter(kind="episode", content__contains="坚持", status="active").exists()  # still stored
