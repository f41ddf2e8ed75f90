"""Buffered access statistics (memory/recall/access_stats.py) in the embedded profile."""
import pytest

from memory.models import Memory
from memory.recall import access_stats as access
from tests.memory.test_recall import remember

pytestmark = pytest.mark.django_db(transaction=True)


def test_flush_pending_writes_what_is_buffered_before_the_database_goes(api, settings):
    memory_id = remember(api, "我们合作社今年的采购预算是八十万")["id"]
    # The buffered path (as when tasks run eagerly), with no flush due within the test.
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.ACCESS_STATS_FLUSH_SECONDS = 3600
    access.flush_pending()  # whatever earlier tests left; restarts the flush period
    before = Memory.objects.get(id=memory_id).access_count
    access.record_access([memory_id, memory_id])
    assert Memory.objects.get(id=memory_id).access_count == before  # buffered, not written
    assert access.flush_pending() == 1
    assert Memory.objects.get(id=memory_id).access_count == before + 2
    assert access.flush_pending() == 0  # nothing left for the exit-time flush
