"""Each dedup tier at its threshold edges: the measured similarity of a real pair decides, and moving
the threshold by a hair to either side of it flips the outcome."""
import pytest

from common.text import is_cjk
from memory.models import Memory
from memory.services.memories import MemoryInput, memory_write
from memory.vectors import active_embedder, similarity

pytestmark = pytest.mark.django_db
EPS = 1e-3


def measured(a: str, b: str) -> float:
    embedder = active_embedder()
    va, vb = embedder.encode([a, b])
    return float(similarity(embedder, va, vb, cjk=is_cjk(a) or is_cjk(b))[0])


def write(org, content, **extra):
    return memory_write(MemoryInput(org=org, user_id="u1", kind=extra.pop("kind", "fact"), content=content, **extra))


def set_thresholds(settings, **values):
    # The subject tier (memory/subjects, tested in test_subject_supersede.py) and the learned judge's
    # restatement verdict are switched off so each embedding tier is seen alone at its edge.
    model_id = active_embedder().model_id
    settings.MEMORY_THRESHOLDS = {model_id: {"subject_same": 9.0, "subject_conflict": 9.0, **values}}
    settings.MEMORY_RESTATEMENT_MIN = 9.0


def test_exact_tier_ignores_case_width_space_and_final_punctuation(org):
    write(org, "We use PostgreSQL 16.")
    assert write(org, "we use postgresql 16").action == "duplicate"
    assert write(org, "ｗｅ ｕｓｅ ＰｏｓｔｇｒｅＳＱＬ １６").action == "duplicate"


@pytest.mark.parametrize("a,b", [("我喜欢用 Java 写后端", "Java 是我写后端时最常用的语言"),
                                 ("The user prefers short answers", "The user likes answers that are short")])
def test_semantic_duplicate_edge(org, settings, a, b):
    sim = measured(a, b)
    set_thresholds(settings, duplicate=sim + EPS, supersede=0.0)
    write(org, a)
    assert write(org, b).action == "added"  # just below the duplicate threshold: a new memory
    Memory.objects.all().delete()
    set_thresholds(settings, duplicate=sim - EPS, supersede=0.0)
    write(org, a)
    outcome = write(org, b)
    assert outcome.action == "duplicate" and abs(outcome.similarity - sim) < 1e-3


def test_supersede_edge_needs_the_same_subject(org, settings):
    from entities.services import entity_upsert

    tractor, _ = entity_upsert(org=org, type="asset", external_id="A-1", name="3号拖拉机")
    a, b = "3号拖拉机停在东区仓库", "3号拖拉机现在停在西区仓库"
    sim = measured(a, b)
    set_thresholds(settings, duplicate=0.999, supersede=sim + EPS)
    first = write(org, a, entity_ids=[tractor.id])
    assert write(org, b, entity_ids=[tractor.id]).action == "added"  # below the supersede band
    Memory.objects.all().delete()
    set_thresholds(settings, duplicate=0.999, supersede=sim - EPS)
    first = write(org, a, entity_ids=[tractor.id])
    outcome = write(org, b, entity_ids=[tractor.id])
    assert outcome.action == "superseded" and outcome.superseded == [first.memory.id]
    # the same similarity without a shared entity never supersedes on similarity alone (never a
    # global search); the subject tier, switched off here, is what recognises the same attribute
    Memory.objects.all().delete()
    write(org, a)
    assert write(org, b).action == "added"


def test_forget_rule_edge(org, settings):
    from memory.services.forget import forget_request_create

    a, b = "我家住在杭州西湖区文三路", "我住在杭州市西湖区文三路附近"
    sim = measured(a, b)
    memory = write(org, a).memory
    forget_request_create(org=org, subject_user="u1", requested_by="test", target="memory", memory_ids=[memory.id])
    from memory.models import ForgetRequest
    from memory.services.forget import forget_request_execute

    forget_request_execute(request_id=ForgetRequest.objects.get().id)
    set_thresholds(settings, duplicate=0.999, supersede=0.999, forget=sim + EPS)
    assert write(org, b).action == "added"
    Memory.objects.filter(status="active").delete()
    set_thresholds(settings, duplicate=0.999, supersede=0.999, forget=sim - EPS)
    assert write(org, b).action == "blocked"
