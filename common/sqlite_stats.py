"""Planner statistics for the embedded SQLite database.

Without `sqlite_stat1`, SQLite's planner does not know how selective an index is: for
`id IN (…) AND status = ?` (bound parameters) it chose the status index and scanned every active row
(~30 ms at 100k memories) instead of looking the ids up by primary key (~0.1 ms), and for
`id IN (…) AND org_id = ?` it scanned the whole org. But statistics of a nearly empty database are
worse than none: taken at the start of a fresh install, they made every recall ~240 ms once a few
thousand memories existed. So statistics are written only once the memory table has `MIN_ROWS`
rows, and written again whenever it has grown to `GROWTH` times what they describe (`ANALYZE` with a
row limit per index: approximate statistics, milliseconds even at a million rows). The web process
checks at start-up and every few minutes (memory/jobs/startup_warmup.py, memory/jobs/scheduler_thread.py). MySQL keeps its
own statistics: nothing to do there."""
from django.db import connection

ANALYSIS_LIMIT = 1000  # rows sampled per index
MIN_ROWS = 1000
GROWTH = 2.0
_TABLE = "memory_memory"


def _stats(cursor) -> tuple[bool, int | None]:
    """(any statistics at all, how many memory rows they describe)."""
    cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'")
    if cursor.fetchone() is None:
        return False, None
    cursor.execute("SELECT tbl, stat FROM sqlite_stat1")
    rows = cursor.fetchall()
    described = next((int(stat.split()[0]) for tbl, stat in rows if tbl == _TABLE and stat), None)
    return bool(rows), described


def sqlite_analyze() -> bool:
    """Refresh the planner statistics when the database is SQLite and the memory table has grown
    enough since they were taken; True when statistics were written."""
    if connection.vendor != "sqlite":
        return False
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {_TABLE}")  # the smallest index's scan: ~20 ms at a million rows
        rows = int(cursor.fetchone()[0])
        present, described = _stats(cursor)
        if rows < MIN_ROWS:
            if present:  # statistics of an emptier (or a larger) database than this: back to the defaults
                cursor.execute("DELETE FROM sqlite_stat1")
                cursor.execute("ANALYZE sqlite_master")
            return False
        if described is not None and rows < GROWTH * max(described, 1):
            return False
        cursor.execute(f"PRAGMA analysis_limit = {ANALYSIS_LIMIT}")
        cursor.execute("ANALYZE")
    return True
