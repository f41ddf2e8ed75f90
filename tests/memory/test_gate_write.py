"""Remember by default, end to end: a message through the REST API becomes a standing memory that
carries the gate's keep probability and model (D25); a question or thanks becomes only an episode."""
import pytest

from memory.learn.gate import get_gate
from memory.models import Memory
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db


def say(api, conv, content):
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages",
                        {"role": "user", "content": content, "occurred_at": "2026-03-02T09:00:00+08:00"}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def standing():
    return list(Memory.objects.filter(status="active", kind__in=["fact", "preference"], scope="user"))


@pytest.mark.parametrize("text", ["三号冷库的温度设在零下十八度。", "Our expense claims go through Concur."])
def test_a_plain_statement_becomes_a_standing_memory_with_the_gates_reading(api, text):
    conv = create_conversation(api)
    say(api, conv, text)
    [memory] = standing()
    assert memory.metadata["gate"]["model"] == get_gate().version
    assert get_gate().threshold <= memory.metadata["gate"]["p"] <= 1.0
    recalled = api.post("/api/v1/recall", {"query": text}, format="json").json()["items"]
    assert memory.id in [i["id"] for i in recalled]


def test_a_question_and_thanks_leave_only_episodes(api):
    conv = create_conversation(api)
    say(api, conv, "你们周末营业吗？")
    say(api, conv, "谢谢，辛苦了！")
    assert standing() == []
    assert Memory.objects.filter(kind="episode").count() == 2


def test_a_batch_keeps_the_same_statements(api):
    conv = create_conversation(api)
    body = {"messages": [{"role": "user", "content": t, "occurred_at": "2026-03-02T09:00:00+08:00"}
                         for t in ("我对花生过敏。", "谢谢！", "老婆不吃香菜。")]}
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages/batch", body, format="json")
    assert response.status_code == 201, response.content
    kept = standing()
    assert sorted(m.content for m in kept) == sorted(["我对花生过敏", "老婆不吃香菜"])
    assert all("gate" in m.metadata for m in kept)


def test_warm_up_loads_the_learned_models_embedder_when_the_live_model_is_another(settings, db):
    """A write must never load the learned models' embedder itself (seconds, under its user's write
    lock; the Redis-pause write stall): the start-up warm-up loads it when the live model differs."""
    from memory import embeddings
    from memory.jobs.startup_warmup import warm_up
    from memory.learn.encode import GATE_EMBEDDER

    settings.EMBEDDING_MODEL = "use-multilingual"
    key = embeddings._canonical_name(GATE_EMBEDDER)
    saved = embeddings._cache.pop(key, None)
    try:
        warm_up()
        assert key in embeddings._cache
    finally:
        if saved is not None:
            embeddings._cache[key] = saved
