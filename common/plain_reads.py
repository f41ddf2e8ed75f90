"""Plain reads for the hot read path: one `SELECT columns FROM table WHERE key IN (...) AND col = value`
statement without the ORM. Recall runs several such reads on every call, and for an ~80-id IN list
the ORM's per-value preparation and row conversion cost several times the read itself. Values come
as the driver gives them (ints, text, bytes; datetimes are the caller's to convert)."""
from django.db import connection


def plain_rows(model, columns: tuple[str, ...], ids, key: str = "memory", **equal) -> list[tuple]:
    """`model.objects.filter(<key>__in=ids, **equal).values_list(*columns)`, as one plain statement
    (no default ordering either). `ids` are integers, or None for no IN condition; `equal` values are
    parameters, never SQL (None means IS NULL)."""
    qn, opts = connection.ops.quote_name, model._meta
    where, params = [], []
    if ids is not None:
        ids = [int(i) for i in ids]
        if not ids:
            return []
        where.append(f"{qn(opts.get_field(key).column)} IN ({', '.join(['%s'] * len(ids))})")
        params += ids
    for name, value in equal.items():
        column = qn(opts.get_field(name).column)
        if value is None:
            where.append(f"{column} IS NULL")
        else:
            where.append(f"{column} = %s")
            params.append(value)
    sql = (f"SELECT {', '.join(qn(opts.get_field(c).column) for c in columns)} FROM {qn(opts.db_table)}"
           + (f" WHERE {' AND '.join(where)}" if where else ""))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def plain_instances(model, ids, key: str = "id", **equal) -> list:
    """`model.objects.filter(<key>__in=ids, **equal)` as model instances, from one plain statement: the
    instances the ORM would build (every concrete field, its database converters applied, `from_db`),
    without compiling a query. For the few rows a hot path returns (recall's top k, an API key)."""
    opts = model._meta
    fields = opts.concrete_fields
    rows = plain_rows(model, tuple(f.name for f in fields), ids, key=key, **equal)
    converters = [(i, [*connection.ops.get_db_converters(f.get_col(opts.db_table)), *f.get_db_converters(connection)],
                   f.get_col(opts.db_table)) for i, f in enumerate(fields)]
    converters = [(i, funcs, col) for i, funcs, col in converters if funcs]
    names = [f.attname for f in fields]
    out = []
    for row in rows:
        values = list(row)
        for i, funcs, col in converters:
            for convert in funcs:
                values[i] = convert(values[i], col, connection)
        out.append(model.from_db(connection.alias, names, values))
    return out
