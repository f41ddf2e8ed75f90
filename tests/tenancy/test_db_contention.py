"""Lock contention is told apart from an unreachable database (tenancy/db.py), with real errors:
a second SQLite connection holding the write lock, and a path that cannot be opened."""
import sqlite3

import pytest
from django.db import OperationalError
from django.db.backends.sqlite3.base import DatabaseWrapper

from tenancy.db import DatabaseBusy, is_contention, retry_on_contention
from tenancy.exceptions import api_exception_handler


def sqlite_wrapper(path: str, timeout: float = 0.05) -> DatabaseWrapper:
    return DatabaseWrapper({"NAME": path, "ENGINE": "django.db.backends.sqlite3", "OPTIONS": {"timeout": timeout},
                            "TIME_ZONE": None, "CONN_MAX_AGE": 0, "CONN_HEALTH_CHECKS": False, "AUTOCOMMIT": True,
                            "ATOMIC_REQUESTS": False, "USER": "", "PASSWORD": "", "HOST": "", "PORT": "",
                            "TEST": {}}, alias="contention-test")


@pytest.fixture(autouse=True)
def _own_connections(django_db_blocker):
    with django_db_blocker.unblock():  # these tests open their own SQLite files, never the test database
        yield


@pytest.fixture
def locked_db(tmp_path):
    path = str(tmp_path / "db.sqlite3")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x INTEGER)")
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    holder.execute("INSERT INTO t VALUES (1)")
    yield path, holder
    holder.close()


def real_error(path: str) -> OperationalError:
    wrapper = sqlite_wrapper(path)
    try:
        with wrapper.cursor() as cursor:
            cursor.execute("INSERT INTO t VALUES (2)")
    except OperationalError as exc:
        return exc
    finally:
        wrapper.close()
    raise AssertionError("the write should have failed")


def test_a_locked_database_is_contention_and_answers_429_not_503(locked_db):
    exc = real_error(locked_db[0])
    assert "locked" in str(exc) and is_contention(exc)
    response = api_exception_handler(exc, {})
    assert response.status_code == 429 and response.data["code"] == "database_busy"
    assert response["Retry-After"] == "1"


def test_an_unopenable_database_is_an_outage(tmp_path):
    exc = real_error(str(tmp_path / "missing-dir" / "db.sqlite3"))
    assert not is_contention(exc)
    response = api_exception_handler(exc, {})
    assert response.status_code == 503 and response.data["code"] == "database_unavailable"


def test_mysql_deadlock_and_lock_wait_timeout_are_contention():
    # The codes as the MySQL drivers put them in args[0]; Django re-raises with the same args.
    assert is_contention(OperationalError(1213, "Deadlock found when trying to get lock"))
    assert is_contention(OperationalError(1205, "Lock wait timeout exceeded"))
    assert not is_contention(OperationalError(2003, "Can't connect to MySQL server"))


def test_contention_is_retried_until_the_lock_is_released(locked_db, settings):
    path, holder = locked_db
    settings.DATABASE_CONTENTION_RETRIES = 5
    calls = []

    @retry_on_contention
    def write():
        calls.append(1)
        if len(calls) == 3:
            holder.execute("COMMIT")  # the other writer finishes while we back off
        wrapper = sqlite_wrapper(path)
        try:
            with wrapper.cursor() as cursor:
                cursor.execute("INSERT INTO t VALUES (2)")
        finally:
            wrapper.close()

    write()
    assert len(calls) == 3
    assert sqlite3.connect(path).execute("SELECT count(*) FROM t").fetchone() == (2,)


def test_contention_that_outlasts_the_retries_is_busy_and_anything_else_is_not_retried(locked_db, settings):
    path, _ = locked_db
    settings.DATABASE_CONTENTION_RETRIES = 2
    calls = []

    @retry_on_contention
    def write():
        calls.append(1)
        raise real_error(path)

    with pytest.raises(DatabaseBusy):
        write()
    assert len(calls) == 3
    outage = real_error(str(path) + ".d/missing/db")

    @retry_on_contention
    def unreachable():
        calls.append(1)
        raise outage

    with pytest.raises(OperationalError):
        unreachable()
    assert len(calls) == 4


@pytest.mark.service_only
@pytest.mark.django_db(transaction=True)
def test_a_real_mariadb_deadlock_is_retried_and_both_transactions_commit(settings):
    """Two transactions lock two rows in opposite order: MariaDB kills one (1213); it runs again."""
    import threading
    from collections import Counter

    from django.db import connection, transaction
    from django.db.models import F, Value
    from django.db.models.functions import Concat

    from tenancy.models import Org
    from tenancy.services import org_get_or_create

    settings.DATABASE_CONTENTION_RETRIES = 3
    a, b = org_get_or_create(slug="deadlock-a", name="a"), org_get_or_create(slug="deadlock-b", name="b")
    both_hold_one = threading.Barrier(2)
    attempts, errors = Counter(), []

    @retry_on_contention
    def touch(first: Org, second: Org, who: str) -> None:
        with transaction.atomic():
            attempts[who] += 1
            Org.objects.select_for_update().get(id=first.id)
            if attempts[who] == 1:
                both_hold_one.wait(timeout=10)
            Org.objects.filter(id=second.id).update(name=Concat(F("name"), Value(who)))

    def run(first, second, who):
        try:
            touch(first, second, who)
        except Exception as exc:  # surfaced below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(a, b, "1")), threading.Thread(target=run, args=(b, a, "2"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert sorted(attempts.values()) == [1, 2]  # the deadlock victim ran again
    assert Org.objects.get(id=a.id).name == "a2" and Org.objects.get(id=b.id).name == "b1"
