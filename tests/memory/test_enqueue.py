"""Enqueue by name: every name memory/enqueue.py knows is a task the Celery app registers, and a
name that is not one fails loudly instead of being dropped as "not queued"."""
import pytest
from celery import current_app

from memory import enqueue as enqueue_module
from memory.enqueue import TASK_NAMES, enqueue, task_named


def test_every_enqueued_name_is_a_registered_task():
    import memory.tasks  # noqa: F401  (what the worker imports at start)

    registered = set(current_app.tasks)
    assert set(TASK_NAMES) <= registered, set(TASK_NAMES) - registered
    names = {value for key, value in vars(enqueue_module).items() if key.isupper() and isinstance(value, str)
             and value.startswith("memory.tasks.")}
    assert names == set(TASK_NAMES)  # a constant left out of TASK_NAMES would escape this test


def test_a_name_that_is_no_task_is_a_bug_not_a_lost_message():
    with pytest.raises(KeyError):
        enqueue("memory.tasks.no_such_task", 1)
    assert task_named("memory.tasks.memory_touch").name == "memory.tasks.memory_touch"
