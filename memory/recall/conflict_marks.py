"""Recall and open possible conflicts: when both memories of an open conflict are recalled, the
newer ranks first, and `explain` marks each with the pair (DESIGN §5: both kept, the newer first). A
conflict the learned judge read as two memories (it vetoed the rules' replace) is only marked: it waits
for review, and nothing in it says the newer holds now."""
from __future__ import annotations

import json

from django.db import connection

from memory.choices import SUBJECT_KINDS
from memory.models import MemoryConflict


def open_conflicts(*, org, user_id: str, ids: list[int]) -> list[tuple[int, int, int, bool, bool]]:
    """(conflict id, older, newer, flagged by the learned judge, vetoed by it) of the open possible conflicts
    with either side among `ids`, newest first."""
    if not ids:
        return []
    # One plain statement (the (org, user, status) index, either side among the items) instead of the
    # ORM's OR-query: recall runs this on every call. Newest conflict first, as the model orders them.
    qn, opts = connection.ops.quote_name, MemoryConflict._meta
    col = lambda name: qn(opts.get_field(name).column)  # noqa: E731
    marks = ", ".join(["%s"] * len(ids))
    sql = (f"SELECT {col('id')}, {col('older')}, {col('newer')}, {col('created_at')}, {col('signals')} "
           f"FROM {qn(opts.db_table)} "
           f"WHERE {col('org')} = %s AND {col('user_id')} = %s AND {col('status')} = %s "
           f"AND ({col('older')} IN ({marks}) OR {col('newer')} IN ({marks}))")
    with connection.cursor() as cursor:
        cursor.execute(sql, [org.id, user_id, "open", *ids, *ids])
        found = cursor.fetchall()
    rows = [(row, _signals(row[4])) for row in sorted(found, key=lambda row: (row[3], row[0]), reverse=True)]
    return [(*row[:3], "judge" in signals, bool(signals.get("veto"))) for row, signals in rows]


def _signals(raw) -> dict:
    """The JSON column as the plain cursor returns it (text on SQLite and MariaDB)."""
    if isinstance(raw, (bytes, str)):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    return raw if isinstance(raw, dict) else {}


def conflicts_apply(items: list, *, org, user_id: str, explain: bool, pairs: list | None = None) -> list:
    """`pairs`: open_conflicts over these items or more, when the caller read them already."""
    if pairs is None:
        pairs = open_conflicts(org=org, user_id=user_id,
                               ids=[item.memory.id for item in items if item.memory.kind in SUBJECT_KINDS])
    if not pairs:
        return items
    order = [item.memory.id for item in items]
    for conflict_id, older, newer, _, vetoed in pairs:
        if explain:
            for item in items:
                if item.memory.id in (older, newer):
                    role = "older" if item.memory.id == older else "newer"
                    item.parts.setdefault("conflicts", []).append(
                        {"id": conflict_id, "role": role, "with": newer if role == "older" else older})
        if not vetoed and older in order and newer in order and order.index(older) < order.index(newer):
            order.remove(newer)
            order.insert(order.index(older), newer)
    by_id = {item.memory.id: item for item in items}
    return [by_id[i] for i in order]
