"""Messages → extraction → memories, through the public API (embedded profile runs tasks eagerly)."""
import pytest

from conversations.models import Message
from memory.models import Memory, MemorySource
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db


def say(api, conv, content, role="user", at="2026-03-02T09:00:00+08:00", ref=None):
    body = {"role": role, "content": content, "occurred_at": at}
    if ref:
        body["external_ref"] = ref
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def active(kind=None):
    qs = Memory.objects.filter(status="active").exclude(kind="episode")
    return list(qs.filter(kind=kind) if kind else qs)


def test_preference_is_extracted_with_its_source(api):
    conv = create_conversation(api)
    message = say(api, conv, "以后给我的维保建议请按紧急程度从高到低排序。", ref="D1:1")
    [pref] = active("preference")
    assert "紧急程度" in pref.content and pref.assertion == "user_stated"
    source = MemorySource.objects.get(memory=pref)
    assert source.message_id == message["id"] and source.external_ref == "D1:1"
    assert Message.objects.get(id=message["id"]).extracted_at is not None


def test_every_message_is_an_episode_with_its_ref(api):
    conv = create_conversation(api)
    say(api, conv, "The weather has been rainy all week.", ref="X2:1")
    episode = Memory.objects.get(kind="episode")
    assert episode.sources.get().external_ref == "X2:1"
    assert episode.occurred_at.isoformat().startswith("2026-03-02T01:00")


def test_update_supersedes_old_value(api):
    s1, s2 = create_conversation(api, "s1"), create_conversation(api, "s2")
    say(api, s1, "维保计划默认给我看未来两周的。", at="2026-03-01T09:00:00+08:00")
    say(api, s2, "以后维保计划默认改成看未来一个月的。", at="2026-04-01T09:00:00+08:00")
    [current] = active("preference")
    assert "一个月" in current.content
    old = Memory.objects.get(status="superseded")
    assert "两周" in old.content and old.superseded_by_id == current.id


def test_correction_supersedes_even_when_embeddings_are_close(api):
    conv = create_conversation(api)
    say(api, conv, "我们农场在黑龙江佳木斯。")
    say(api, conv, "不对，你记错了，我们农场在黑龙江齐齐哈尔，不是佳木斯。", at="2026-03-05T09:00:00+08:00")
    [fact] = active("fact")
    assert "齐齐哈尔" in fact.content and "佳木斯" not in fact.content
    assert fact.versions.get().reason == "CORRECT"


def test_temporary_instruction_is_task_scoped(api):
    conv = create_conversation(api)
    say(api, conv, "这次只看本周的就行。")
    assert not active("preference")
    task = Memory.objects.filter(scope="task").exclude(kind="episode")
    assert task.count() == 1 and task.get().conversation_id == conv["id"] and task.get().valid_to is not None


def test_do_not_remember_stores_nothing_and_is_no_episode(api):
    conv = create_conversation(api)
    message = say(api, conv, "我的身份证号是330106199001011234，这个别记下来，只是这次填表用。")
    assert not Memory.objects.filter(status="active").exists()
    assert Message.objects.get(id=message["id"]).do_not_remember is True


def test_assistant_suggestion_is_never_a_fact(api):
    conv = create_conversation(api)
    say(api, conv, "建议下周安排对1号收割机做一次割台保养。", role="assistant")
    [suggestion] = active("suggestion")
    assert suggestion.assertion == "model_suggestion"
    assert not active("fact") and not active("event")


def test_restatement_is_stored_once(api):
    conv = create_conversation(api)
    say(api, conv, "我喜欢简洁的回答。")
    say(api, conv, "我喜欢简洁的回答", at="2026-03-03T09:00:00+08:00")
    assert len(active("preference")) == 1
    # the restatement is kept as a second source of the same memory
    assert MemorySource.objects.filter(memory=active("preference")[0]).count() == 2


def test_reextraction_is_idempotent(api):
    conv = create_conversation(api)
    say(api, conv, "我们合作社今年的采购预算是八十万。")
    before = sorted(Memory.objects.values_list("id", "status"))
    assert api.post(f"/api/v1/conversations/{conv['id']}/reextract", {}, format="json").status_code == 202
    assert sorted(Memory.objects.values_list("id", "status")) == before


def test_events_on_one_asset_are_kept_apart(api):
    conv = create_conversation(api)
    say(api, conv, "1号收割机今天液压系统漏油停机了。")
    say(api, conv, "1号收割机今天发动机过热又停机了。", at="2026-04-10T09:00:00+08:00")
    events = active("event")
    assert len(events) == 2
    assert {e.occurred_at.date().isoformat() for e in events} == {"2026-03-02", "2026-04-10"}
