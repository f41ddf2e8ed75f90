"""Two extractions of the same fact at once never leave two active memories.

Service profile only: the embedded profile's test database is SQLite in shared-cache memory mode,
whose table locks fail at once instead of waiting (a file database in production waits on its busy
timeout), so it cannot model two concurrent writers."""
import threading

import pytest
from django.db import connection

from memory.models import Memory
from memory.services.memories import MemoryInput, memory_write
from tenancy.services import org_get_or_create


def _race(org, contents: list[str], kind="fact") -> list[str]:
    barrier = threading.Barrier(len(contents))
    outcomes, errors = [], []

    def worker(content):
        try:
            barrier.wait(timeout=10)
            outcomes.append(memory_write(MemoryInput(org=org, user_id="u1", kind=kind, content=content,
                                                     created_by="extractor")).action)
        except Exception as exc:  # surfaced below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(c,)) for c in contents]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    return outcomes


@pytest.mark.service_only
@pytest.mark.django_db(transaction=True)
def test_same_fact_from_two_workers_is_stored_once():
    org = org_get_or_create(slug="race")
    outcomes = _race(org, ["我们合作社今年的采购预算是八十万。", "我们合作社今年的采购预算是八十万"])
    assert sorted(outcomes) == ["added", "duplicate"]
    assert Memory.objects.filter(status="active", kind="fact").count() == 1


@pytest.mark.service_only
@pytest.mark.django_db(transaction=True)
def test_same_slot_updates_from_two_workers_leave_one_active():
    org = org_get_or_create(slug="race2")
    barrier_contents = ["维保计划默认看未来两周", "维保计划默认看未来一个月"]
    outcomes = []
    barrier = threading.Barrier(2)
    errors = []

    def worker(content):
        try:
            barrier.wait(timeout=10)
            outcomes.append(memory_write(MemoryInput(org=org, user_id="u1", kind="preference", content=content,
                                                     slot_key="pref:维保计划.时间范围")).action)
        except Exception as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(c,)) for c in barrier_contents]
    [t.start() for t in threads]
    [t.join(timeout=60) for t in threads]
    assert not errors, errors
    assert sorted(outcomes) == ["added", "superseded"]
    assert Memory.objects.filter(status="active", kind="preference").count() == 1
