"""Planner statistics for the embedded SQLite database.

Without `sqlite_stat1`, SQLite's planner does not know how selective an index is: for
`id IN (…) AND status = ?` (bound parameters) it chose the status index and scanned every active row
(~30 ms at 100k memories) instead of looking the ids up by primary key (~0.1 ms), and for
`id IN (…) AND org_id = ?` it scanned the whole org. `ANALYZE` with a row limit per index
(`PRAGMA analysis_limit`: approximate statistics, milliseconds even at a million rows) fixes the
plans; the web process runs it at start-up and hourly (memory/warmup.py, memory/scheduler.py).
MySQL keeps its own statistics: nothing to do there."""
from django.db import connection

ANALYSIS_LIMIT = 1000  # rows sampled per index


def sqlite_analyze() -> bool:
    """Refresh the planner statistics when the database is SQLite; False otherwise."""
    if connection.vendor != "sqlite":
        return False
    with connection.cursor() as cursor:
        cursor.execute(f"PRAGMA analysis_limit = {ANALYSIS_LIMIT}")
        cursor.execute("ANALYZE")
    return True
