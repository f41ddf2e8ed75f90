"""Shared fixtures. The same suite runs on the embedded profile and the service profile
(DATABASE_URL/REDIS_URL/CELERY_BROKER_URL set by `make test-service`)."""
import pytest
from django.conf import settings
from rest_framework.test import APIClient

from tenancy.services import api_key_create, org_get_or_create

SERVICE_PROFILE = settings.DATABASES["default"]["ENGINE"].endswith("mysql")


# The write path's tests (extraction, dedup and supersede, projections, forgetting, conflicts). In the
# service profile their tasks go through the Redis broker to a real Celery worker (tests/celery_worker.py);
# in the embedded profile they run eagerly, as the embedded default does.
WRITE_PATH = (
    "tests/memory/extraction/test_llm_subject.py",
    "tests/memory/test_batch_extraction.py",
    "tests/memory/test_write_flow.py",
    "tests/memory/test_dedup_thresholds.py",
    "tests/memory/test_subject_supersede.py",
    "tests/memory/test_subject_delivery.py",
    "tests/memory/test_episode_lineage.py",
    "tests/memory/test_forget.py",
    "tests/memory/test_forget_echoes.py",
    "tests/memory/test_lifecycle.py",
    "tests/memory/test_conflicts.py",
    "tests/memory/api/test_conflicts.py",
    "tests/memory/api/test_memories.py",
)
_worker_runs: dict[str, int] = {}  # test id -> tasks the real worker ran for it (service profile)


def pytest_configure(config):
    config.addinivalue_line("markers", "worker: runs a real Celery worker on the configured broker")
    config.addinivalue_line("markers", "write_path_worker: the service profile runs this test's tasks on a real worker")
    config.addinivalue_line("markers", "service_only: needs the service profile (MariaDB/Redis)")
    config.addinivalue_line("markers", "browser: drives the console in Chromium")


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="service profile only (run by make test-service)")
    for item in items:
        if "service_only" in item.keywords and not SERVICE_PROFILE:
            item.add_marker(skip)
        db = item.get_closest_marker("django_db")
        if SERVICE_PROFILE and db is not None and "worker" not in item.keywords \
                and item.nodeid.split("::")[0].startswith(WRITE_PATH):
            # The worker sees committed rows only: a transactional test (this marker is the closest one).
            item.add_marker(pytest.mark.django_db(*db.args, **{**db.kwargs, "transaction": True}), append=False)
            item.add_marker(pytest.mark.write_path_worker)


def pytest_terminal_summary(terminalreporter):
    if _worker_runs:
        ran = sum(1 for n in _worker_runs.values() if n)
        terminalreporter.write_line(f"real Celery worker: {len(_worker_runs)} write-path tests on the broker, "
                                    f"{ran} of them ran tasks on the worker ({sum(_worker_runs.values())} tasks)")


@pytest.fixture(scope="session", autouse=True)
def _isolated_var(tmp_path_factory):
    """Each test session gets its own vector index and tiktoken cache, apart from `make run`'s var/."""
    root = tmp_path_factory.mktemp("var")
    settings.VECTOR_INDEX_PATH = str(root / "qdrant")
    from memory.vector_index import reset_vector_index

    reset_vector_index()
    yield root
    reset_vector_index()


@pytest.fixture(autouse=True)
def _eager_celery(request):
    """Tasks run inline unless a test asks for a real worker (`@pytest.mark.worker`) or is a write-path
    test in the service profile (`write_path_worker`), whose publishes wait for the worker."""
    from config.celery import app

    old = app.conf.task_always_eager
    real = "write_path_worker" in request.keywords
    app.conf.task_always_eager = not real and "worker" not in request.keywords
    ledger = None
    if real:
        from tests.celery_worker import TaskLedger

        request.getfixturevalue("celery_worker_session")
        ledger = TaskLedger()
        ledger.connect()
    yield
    if ledger is not None:
        ledger.wait()  # nothing of this test may run into the next test's flush
        ledger.disconnect()
        _worker_runs[request.node.nodeid] = len(ledger.ran)
    app.conf.task_always_eager = old
    if ledger is not None and ledger.problems():
        pytest.fail("\n".join(ledger.problems()), pytrace=False)


@pytest.fixture(autouse=True)
def _immediate_access_stats(settings):
    settings.ACCESS_STATS_FLUSH_SECONDS = 0  # tests read access counts right after a recall
    # No background snapshot rebuilds racing the test's own statements (tests/memory/test_recall_snapshot.py
    # turns them on).
    settings.RECALL_CORPUS = {**settings.RECALL_CORPUS, "refresh": False}


@pytest.fixture(autouse=True)
def _clear_cache():
    from django.core.cache import cache

    from conversations import window_cache
    from memory.models import VectorCollection
    from memory.recall import snapshot_cache

    cache.clear()
    snapshot_cache.clear()
    window_cache.clear_local()
    VectorCollection.forget_cached_live()
    yield


@pytest.fixture
def own_index(settings, tmp_path):
    """An embedded vector index of this test's own: ids restart after each test's rollback or flush,
    so points left in a shared index would read as this test's memories."""
    from memory.vector_index import get_vector_index, reset_vector_index

    settings.VECTOR_INDEX_PATH = str(tmp_path / "qdrant")
    settings.QDRANT_URL = ""
    reset_vector_index()
    yield get_vector_index()
    reset_vector_index()


@pytest.fixture(scope="session")
def celery_worker_session():
    from celery.contrib.testing.worker import start_worker

    from config.celery import app

    # This process owns the test shard, so its worker also consumes the vector queue (projections).
    queues = sorted({settings.CELERY_TASK_DEFAULT_QUEUE, settings.CELERY_VECTOR_QUEUE} - {""})
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=30, queues=queues) as worker:
        yield worker


@pytest.fixture
def org(db):
    return org_get_or_create(slug="acme")


@pytest.fixture
def other_org(db):
    return org_get_or_create(slug="globex")


class CommitClient(APIClient):
    """Runs the on-commit callbacks of each request when it returns, as a real commit would, even
    inside the test's wrapping transaction (so projections and extraction follow each call)."""

    def request(self, **kwargs):
        from django.test import TestCase

        with TestCase.captureOnCommitCallbacks(execute=True):
            return super().request(**kwargs)


def make_client(org, user: str | None = "u1") -> APIClient:
    _, raw = api_key_create(org=org, name="test")
    client = CommitClient()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {raw}"}
    if user is not None:
        headers["HTTP_X_MEMORY_USER"] = user
    client.credentials(**headers)
    client.raw_key = raw
    return client


@pytest.fixture
def api(org):
    return make_client(org, "u1")


@pytest.fixture
def api_u2(org):
    return make_client(org, "u2")


@pytest.fixture
def api_other_org(other_org):
    return make_client(other_org, "u1")
