"""The LLM reviewer's task on a real Celery worker (service profile: Redis broker, MariaDB): queued by
name through memory/enqueue.py, it decides the pair and its projections follow, all in the worker."""
import pytest

from memory.enqueue import LLM_REVIEW, llm_review_enqueue
from memory.models import Memory, MemoryConflict
from memory.services import MemoryInput, memory_write
from memory.services.conflicts import conflict_record
from tests.memory.extraction.stub_llm_server import StubLLMServer
from tests.memory.test_worker import wait_until, worker_ran  # noqa: F401 - fixture

pytestmark = [pytest.mark.worker, pytest.mark.service_only, pytest.mark.django_db(transaction=True)]


def test_the_queued_review_runs_on_the_worker(own_index, celery_worker_session, worker_ran, org, settings):  # noqa: F811
    def write(content):
        return memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content=content, created_by="extractor",
                                        actor="test"), dedup=False).memory

    older, newer = write("The depot closes at 18:00"), write("The depot now closes at 20:00")
    assert wait_until(lambda: not Memory.objects.filter(projected_version__lt=1).exists())
    conflict = conflict_record(older=older, newer=newer, score=0.6)
    with StubLLMServer() as stub:
        stub.answer_reviews()
        settings.LLM_BASE_URL, settings.LLM_MODEL = stub.base_url, "stub-model"
        assert llm_review_enqueue() is True

        assert wait_until(lambda: MemoryConflict.objects.get(id=conflict.id).status == "superseded")
        assert len(stub.requests) == 1
    assert LLM_REVIEW in worker_ran
    older.refresh_from_db()
    assert older.status == "superseded" and older.superseded_by_id == newer.id
    assert wait_until(lambda: Memory.objects.filter(id=older.id, projected_version=older.version).exists())
