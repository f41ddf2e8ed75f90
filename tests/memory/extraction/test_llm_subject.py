"""Item 7 of issue 15: the LLM extractor names a subject per standing candidate, and its
candidates go through the same subject matcher as the rules' (stub server, real HTTP)."""
import pytest

from memory.extraction.llm import LLMExtractor
from memory.models import Memory
from tests.conversations.api_helpers import create_conversation
from tests.memory.extraction.stub_llm_server import StubLLMServer
from tests.memory.extraction.test_llm import AT, answer, make, memory, user_input

pytestmark = pytest.mark.django_db


@pytest.fixture
def stub():
    with StubLLMServer() as server:
        yield server


def test_the_subject_is_parsed_and_only_kept_for_standing_kinds(stub):
    stub.answer(answer(memory(subject="农场位置"),
                       memory(kind="event", content="1号收割机3月5日停机了", assertion="confirmed_event",
                              slot_key=None, subject="收割机", occurred_at=AT.isoformat())))
    fact, event = make(stub).extract(user_input(existing=())).candidates
    assert fact.subject == "农场位置" and event.subject is None


@pytest.mark.parametrize("bad", [123, ["农场"], "x" * 101])
def test_a_bad_subject_falls_back_to_rules(stub, bad):
    stub.answer(answer(memory(subject=bad)))
    result = make(stub).extract(user_input(existing=()))
    assert result.produced_by == "rules-fallback"


def say(api, conv, content, at):
    response = api.post(f"/api/v1/conversations/{conv['id']}/messages",
                        {"role": "user", "content": content, "occurred_at": at}, format="json")
    assert response.status_code == 201, response.content


def _fact(content, subject):
    return memory(content=content, slot_key=None, subject=subject)


@pytest.fixture
def llm(settings, stub):
    settings.LLM_BASE_URL = stub.base_url
    settings.LLM_MODEL = "stub-model"
    settings.LLM_TIMEOUT = 3
    return stub


def _standing(status):
    return list(Memory.objects.filter(status=status, kind__in=("fact", "preference")))


def test_same_subject_without_key_or_supersedes_replaces_the_old(api, llm):
    s1, s2 = create_conversation(api, "s1"), create_conversation(api, "s2")
    llm.answer(answer(_fact("我们的维修师傅是李明", "维修师傅")))
    say(api, s1, "我们的维修师傅是李明。", "2026-03-01T09:00:00+08:00")
    # The model neither reuses a key nor lists supersedes: the subject matcher decides.
    llm.answer(answer(_fact("现在负责维修的师傅是赵刚", "维修师傅")))
    say(api, s2, "李明走了，现在负责维修的师傅是赵刚。", "2026-04-01T09:00:00+08:00")
    [current] = _standing("active")
    [old] = _standing("superseded")
    assert "赵刚" in current.content and old.superseded_by_id == current.id
    assert current.versions.get().actor == "llm:stub-model:extract_v2"
    # The prompt sent was v2, which asks for the subject.
    assert "`subject`" in llm.requests[-1].messages[0]["content"]


def test_other_subjects_of_one_thing_coexist(api, llm):
    s1, s2 = create_conversation(api, "s1"), create_conversation(api, "s2")
    llm.answer(answer(_fact("我们农场在黑龙江齐齐哈尔", "农场位置")))
    say(api, s1, "我们农场在黑龙江齐齐哈尔。", "2026-03-01T09:00:00+08:00")
    llm.answer(answer(_fact("我们农场有三台收割机", "农场收割机数量")))
    say(api, s2, "我们农场有三台收割机。", "2026-04-01T09:00:00+08:00")
    assert len(_standing("active")) == 2 and not _standing("superseded")


def test_prompt_v2_is_its_own_file():
    extractor = LLMExtractor(base_url="http://127.0.0.1:9", model="m")
    assert extractor.prompt.version == "extract_v2" and "subject" in extractor.prompt.text
