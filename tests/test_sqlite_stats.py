"""Planner statistics on the embedded SQLite database (config/sqlite_stats.py): never of a nearly empty
database (they made recall ~240 ms once data arrived), taken once it is large enough, and again only
when it has grown."""
import pytest
from django.db import connection

from common import sqlite_stats
from memory.services.memories import MemoryInput, memory_write

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(connection.vendor != "sqlite", reason="MySQL keeps its own statistics")]


def _present() -> tuple[bool, int | None]:
    with connection.cursor() as cursor:
        return sqlite_stats._stats(cursor)


def test_statistics_follow_the_size_of_the_memory_table(org, monkeypatch):
    monkeypatch.setattr(sqlite_stats, "MIN_ROWS", 3)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # what an unguarded start-up wrote for an empty database
    assert sqlite_stats.sqlite_analyze() is False
    assert _present()[0] is False  # removed: the planner's defaults, not a description of no data
    facts = ["The pump is in barn 3.", "我们农场在黑龙江齐齐哈尔。", "The dog is called Rex.", "拖拉机是约翰迪尔6B。"]
    for content in facts[:3]:
        memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content=content))
    assert sqlite_stats.sqlite_analyze() is True
    present, described = _present()
    assert present and described == 3
    memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content=facts[3]))
    assert sqlite_stats.sqlite_analyze() is False  # 4 rows: not yet twice what they describe
    assert _present()[1] == 3
