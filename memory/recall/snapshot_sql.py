"""The statements of a user's recall snapshot (memory/recall/snapshot.py): the user's active memories
as one range of memory_recall_snapshot_idx, their stored terms as one range of the owner index, and
candidate rows by key. SQLite's driver converts datetimes and booleans by a Python call per value, so
there those columns are read as text and integers (`candidate_columns`, `terms_statement`). Also the
memories linked to a query's entities (`linked_memories`, memory/recall/entity_focus.py)."""
from django.db import connection

from memory.choices import MemoryStatus
from memory.models import EntityLink, Memory, MemoryTerms

# What the back-check, the ranking and the rerank read of a candidate.
CANDIDATE_COLUMNS = ("id", "kind", "scope", "conversation_id", "created_at", "valid_from", "valid_to", "occurred_at",
                     "importance", "access_count", "content_hash")
COLUMN_INDEX = {name: i for i, name in enumerate(CANDIDATE_COLUMNS)}
SOURCE_COLUMNS = ("memory", "message", "conversation", "external_ref")
LINK_COLUMNS = ("memory", "entity")
DATETIME_AT = tuple(COLUMN_INDEX[name] for name in ("created_at", "valid_from", "valid_to", "occurred_at"))


def joined(model, columns: tuple[str, ...], where: str, params: list, tail: str = "") -> list[tuple]:
    """`model`'s columns for the rows whose `memory` is one of the memories `where` selects (`tail`: an
    ORDER BY / LIMIT after it)."""
    qn, opts, m = connection.ops.quote_name, model._meta, Memory._meta
    cols = ", ".join(f"{qn(opts.db_table)}.{qn(opts.get_field(c).column)}" for c in columns)
    sql = (f"SELECT {cols} FROM {qn(opts.db_table)} INNER JOIN {qn(m.db_table)} ON "
           f"{qn(m.db_table)}.{qn(m.pk.column)} = {qn(opts.db_table)}.{qn(opts.get_field('memory').column)} WHERE {where}"
           + (f" {tail}" if tail else ""))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def column(name: str) -> str:
    qn, m = connection.ops.quote_name, Memory._meta
    return f"{qn(m.db_table)}.{qn(m.get_field(name).column)}"


def candidate_columns() -> list[str]:
    # SQLite's driver would parse every datetime of the user's memories; as text they are parsed only
    # for the candidates a recall looks at (`snapshot._aware`), a sixth of a cold snapshot's build at 2,000.
    as_text = connection.vendor == "sqlite"
    return [f"CAST({column(c)} AS TEXT)" if as_text and COLUMN_INDEX[c] in DATETIME_AT else column(c)
            for c in CANDIDATE_COLUMNS]


def user_range(columns: list[str]) -> str:
    """These columns of the user's active memories, newest first, as the ORM's default order: BM25 ties
    keep the order they always had. Every column is in memory_recall_snapshot_idx, in this order: one
    index range, no table row visited."""
    qn, m = connection.ops.quote_name, Memory._meta
    return (f"SELECT {', '.join(columns)} FROM {qn(m.db_table)} WHERE {column('org')} = %s "
            f"AND {column('user_id')} = %s AND {column('status')} = %s "
            f"ORDER BY {column('created_at')} DESC, {column('id')} DESC")


def rows_statement() -> str:
    """Every active memory's candidate row and version."""
    return user_range(candidate_columns() + [column("version")])


def ids_statement() -> str:
    """Every active memory's id and version only (two columns of the same range)."""
    return user_range([column("id"), column("version")])


def rows_by_id_statement(n: int) -> str:
    """The candidate rows and status of n memories, by primary key (the status is read, not filtered:
    with it in the WHERE clause SQLite's planner took the status index, see memories_of). Not
    plain_rows: its datetimes would go through the driver's per-value parse (`_candidate_columns`)."""
    qn, m = connection.ops.quote_name, Memory._meta
    return (f"SELECT {', '.join(candidate_columns() + [column('status')])} FROM {qn(m.db_table)} "
            f"WHERE {column('id')} IN ({', '.join(['%s'] * n)})")


def terms_statement() -> str:
    """The stored terms of every memory of the user (not only the active ones: a range of the owner
    index, which a join from each memory would turn into a lookup per memory)."""
    qn, t = connection.ops.quote_name, MemoryTerms._meta
    # SQLite's driver turns a boolean column into a bool by a Python call per value (Django's
    # converter); as integers they are plain values.
    flags = ("cjk", "small_talk") if connection.vendor == "sqlite" else ()
    columns = ", ".join(f"CAST({qn(t.get_field(c).column)} AS INTEGER)" if c in flags else qn(t.get_field(c).column)
                        for c in ("memory", "version", "tokenizer", "hashes", "cjk", "small_talk", "speaker"))
    return (f"SELECT {columns} FROM {qn(t.db_table)} WHERE {qn(t.get_field('org').column)} = %s "
            f"AND {qn('user_id')} = %s")


def concatenated_statements() -> tuple[str, str]:
    """The ids statement and the terms statement as one row each, every column concatenated in SQL
    (SQLite). Python's sqlite3 releases the GIL around every row it steps, and a cold build runs while
    the query is encoded on another thread, which takes the GIL at each release: ~2,000 rows read
    one by one took half as long again as alone (`snapshot_build._build_concatenated`). Each list is counted, and a
    NULL, which group_concat would skip, is made a value, so the lists stay aligned."""
    qn, m, t = connection.ops.quote_name, Memory._meta, MemoryTerms._meta
    ids = (f"SELECT count(*), group_concat({column('id')}), group_concat({column('version')}), "
           f"group_concat(coalesce({column('created_at')}, ''), '|') FROM {qn(m.db_table)} "
           f"WHERE {column('org')} = %s AND {column('user_id')} = %s AND {column('status')} = %s")
    col = lambda name: qn(t.get_field(name).column)  # noqa: E731
    terms = (f"SELECT count(*), group_concat({col('memory')}), group_concat({col('version')}), "
             f"group_concat(coalesce(length({col('hashes')}), 0)), group_concat(hex({col('hashes')}), ''), "
             f"group_concat(coalesce(CAST({col('cjk')} AS INTEGER), 0)), "
             f"group_concat(coalesce(CAST({col('small_talk')} AS INTEGER), 0)), group_concat(hex({col('speaker')})) "
             f"FROM {qn(t.db_table)} WHERE {col('org')} = %s AND {qn('user_id')} = %s AND {col('tokenizer')} = %s")
    return ids, terms


def linked_memories(entity_ids, org_id: int, user_id: str, limit: int) -> list[int]:
    """The user's active memories linked to any of these entities, newest first (the ORM's query of the
    same took ~0.6 ms to build, three times its run, on every recall that names an entity)."""
    qn = connection.ops.quote_name
    link = f"{qn(EntityLink._meta.db_table)}.{qn(EntityLink._meta.get_field('entity').column)}"
    memory_id = f"{qn(EntityLink._meta.db_table)}.{qn(EntityLink._meta.get_field('memory').column)}"
    ids = [int(e) for e in entity_ids]
    where = (f"{link} IN ({', '.join(['%s'] * len(ids))}) AND {column('org')} = %s AND {column('user_id')} = %s "
             f"AND {column('status')} = %s")
    rows = joined(EntityLink, ("memory",), where, [*ids, org_id, user_id, MemoryStatus.ACTIVE.value, int(limit)],
                  tail=f"ORDER BY {column('created_at')} DESC, {memory_id} DESC LIMIT %s")
    return list(dict.fromkeys(row[0] for row in rows))
