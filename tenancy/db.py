"""Database errors told apart: lock contention (wait, retry) versus a database that cannot be reached.

Django raises ``OperationalError`` for both "the database is gone" and "another transaction holds
the lock". Only the first is an outage (503 ``database_unavailable``); the second is normal under
concurrent writes and is retried inside the request:

- SQLite (embedded default): "database is locked" / "database table is locked". Write transactions
  take the lock at BEGIN (``transaction_mode: IMMEDIATE``) and wait up to the busy timeout
  (``DATABASE_BUSY_TIMEOUT``), so this is rare; when the wait runs out the transaction is retried.
- MariaDB/MySQL: deadlock (1213, the server rolled the transaction back) and lock wait timeout
  (1205). Both are safe to retry from the start of the outermost transaction.

A retry only wraps an outermost transaction: inside an enclosing ``atomic`` block the failed
statement has broken the outer transaction, so the error goes up to whoever opened it.
"""
from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.db import OperationalError, connection

logger = logging.getLogger(__name__)

MYSQL_CONTENTION_CODES = {1205, 1213}  # ER_LOCK_WAIT_TIMEOUT, ER_LOCK_DEADLOCK
SQLITE_CONTENTION_TEXT = ("database is locked", "database table is locked", "database schema is locked")

F = TypeVar("F", bound=Callable)


class DatabaseBusy(Exception):
    """Lock contention outlasted every retry; nothing was committed."""


def is_contention(exc: BaseException) -> bool:
    """True for lock contention (retry), False for everything else (an outage or a bug)."""
    if not isinstance(exc, OperationalError):
        return False
    cause = exc.__cause__ or exc
    code = cause.args[0] if cause.args else None
    if isinstance(code, int):
        return code in MYSQL_CONTENTION_CODES
    text = str(cause).lower()
    return any(marker in text for marker in SQLITE_CONTENTION_TEXT)


def retry_on_contention(fn: F) -> F:
    """Run ``fn`` (one outermost transaction) again when it fails on lock contention.

    ``DATABASE_CONTENTION_RETRIES`` attempts after the first, with a short jittered backoff; then
    ``DatabaseBusy`` (answered 429 ``database_busy`` with Retry-After: nothing was committed).
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if connection.in_atomic_block:  # not ours to retry: the enclosing transaction is broken
            return fn(*args, **kwargs)
        retries = settings.DATABASE_CONTENTION_RETRIES
        for attempt in range(retries + 1):
            try:
                return fn(*args, **kwargs)
            except OperationalError as exc:
                if not is_contention(exc):
                    raise
                if attempt == retries:
                    logger.warning("%s: lock contention after %d attempts", fn.__qualname__, attempt + 1)
                    raise DatabaseBusy(fn.__qualname__) from exc
                logger.info("%s: lock contention (%s), retry %d", fn.__qualname__, type(exc.__cause__).__name__,
                            attempt + 1)
                time.sleep(min(1.0, 0.05 * 2 ** attempt) * (0.5 + random.random()))
        raise AssertionError("unreachable")

    return wrapper  # type: ignore[return-value]
