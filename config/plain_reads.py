"""Plain reads for the hot read path: one `SELECT columns FROM table WHERE key IN (...) AND col = value`
statement without the ORM. Recall runs several such reads on every call, and for an ~80-id IN list
the ORM's per-value preparation and row conversion cost several times the read itself. Values come
as the driver gives them (ints, text, bytes; datetimes are the caller's to convert)."""
from django.db import connection


def plain_rows(model, columns: tuple[str, ...], ids, key: str = "memory", **equal) -> list[tuple]:
    """`model.objects.filter(<key>__in=ids, **equal).values_list(*columns)`, as one plain statement
    (no default ordering either). `ids` are integers; `equal` values are parameters, never SQL."""
    ids = [int(i) for i in ids]
    if not ids:
        return []
    qn, opts = connection.ops.quote_name, model._meta
    where = [f"{qn(opts.get_field(key).column)} IN ({', '.join(['%s'] * len(ids))})"]
    where += [f"{qn(opts.get_field(name).column)} = %s" for name in equal]
    sql = (f"SELECT {', '.join(qn(opts.get_field(c).column) for c in columns)} FROM {qn(opts.db_table)} "
           f"WHERE {' AND '.join(where)}")
    with connection.cursor() as cursor:
        cursor.execute(sql, ids + list(equal.values()))
        return cursor.fetchall()
