"""The service profile's write path through a real Celery worker (tests/conftest.py, WRITE_PATH).

The worker is `celery.contrib.testing.worker.start_worker` on the configured broker (Redis), a solo pool
on a thread of the test process (it owns the test shard, so it consumes the vector queue too), with its
own database connection: it sees only committed rows, so these tests run with `transaction=True`.

A test written for eager tasks reads the result of the write right after the call. Rather than a sleep
or a poll in every test, a publish from outside the worker waits (at most WAIT_SECONDS, a liveness bound)
until the worker has run that task and everything it queued in turn: the task still goes through the
broker's serialisation and routing, runs in another thread and transaction, and retries through the
broker. A publish inside a transaction waits once that transaction commits (the task may need its rows
or its locks). A task that fails in the worker fails the test at teardown (eager mode propagated it).
"""
import threading
from collections import Counter

from celery.signals import after_task_publish, task_failure, task_postrun, task_prerun
from django.db import connection, transaction

WAIT_SECONDS = 60.0


class TaskLedger:
    """Tasks published and not yet finished by the worker, counted per task id (a retry publishes the
    same id again before its first run ends). Zero counts are dropped, so every count left is ±."""

    def __init__(self):
        self._done = threading.Condition()
        self._open: Counter = Counter()
        self._names: dict[str, str] = {}
        self._local = threading.local()
        self.ran: list[str] = []
        self.failures: list[str] = []
        self.stuck: list[str] = []

    # --------------------------------------------------------------- signal receivers
    def _published(self, sender=None, headers=None, **kwargs):
        task_id = (headers or {}).get("id")
        if task_id is None:
            return
        with self._done:
            self._open[task_id] += 1
            self._names[task_id] = str(sender)
            if self._open[task_id] == 0:  # the worker finished it before this receiver ran
                del self._open[task_id]
        if getattr(self._local, "in_task", False):
            return  # queued by a task: the publish that started the chain waits for it
        if connection.in_atomic_block:
            # Published inside a transaction (a recall's access touch in a forget, say): the task may need
            # rows or locks this transaction holds, so waiting here would deadlock. Wait once it commits.
            transaction.on_commit(self.wait, robust=True)
        else:
            self.wait()

    def _prerun(self, **kwargs):
        self._local.in_task = True

    def _postrun(self, task_id=None, task=None, state=None, **kwargs):
        self._local.in_task = False
        with self._done:
            self.ran.append(getattr(task, "name", "?"))
            # May go below zero: a fast task can finish in the worker before its publisher's
            # after_task_publish receiver has counted it (it then brings the count back to zero).
            self._open[task_id] -= 1
            if self._open[task_id] == 0:
                del self._open[task_id]
            self._done.notify_all()

    def _failed(self, sender=None, task_id=None, exception=None, **kwargs):
        self.failures.append(f"{getattr(sender, 'name', sender)}[{task_id}]: {type(exception).__name__}: {exception}")

    # --------------------------------------------------------------- use
    def wait(self, timeout: float = WAIT_SECONDS) -> bool:
        with self._done:
            drained = self._done.wait_for(lambda: all(n < 0 for n in self._open.values()), timeout)
            if not drained:
                self.stuck.append(", ".join(sorted(self._names.get(i, i) for i, n in self._open.items() if n > 0)))
        return drained

    def connect(self) -> None:
        after_task_publish.connect(self._published, weak=False)
        task_prerun.connect(self._prerun, weak=False)
        task_postrun.connect(self._postrun, weak=False)
        task_failure.connect(self._failed, weak=False)

    def disconnect(self) -> None:
        after_task_publish.disconnect(self._published)
        task_prerun.disconnect(self._prerun)
        task_postrun.disconnect(self._postrun)
        task_failure.disconnect(self._failed)

    def problems(self) -> list[str]:
        return ([f"task failed in the worker: {f}" for f in self.failures]
                + [f"the worker did not finish within {WAIT_SECONDS:.0f} s: {s}" for s in self.stuck])
