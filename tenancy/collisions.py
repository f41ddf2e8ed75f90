"""Which identifiers were one to the old comparison (issue 42): a report for operators.

Before migration `*_ident_binary_ids`, MySQL/MariaDB compared identifier columns with the database's
case- and accent-insensitive collation: `CaseUser` and `caseuser` (or `isoy1` and `isoÿ1`) read and
wrote each other's rows. Rows kept the id they were written with, so after the columns became binary
each row belongs to the id it names; what the report shows is which ids may have seen (or merged
into) each other's data, so an operator can review them. Nothing is changed.

Works on any app registry (the live one for the `identity_collisions` command, a migration's
historical one) by finding `IdentifierField`s, so no app needs importing here.
"""
from collections import defaultdict
from dataclasses import dataclass, field

from tenancy.identifiers import IdentifierField, IdentifierSlugField, loose_form

__all__ = ["Collision", "identity_collisions", "report_lines"]

# Columns holding end-user ids: one namespace per org, whatever the table.
USER_ID_FIELDS = frozenset({"user_id", "owner_user", "subject_user"})


@dataclass
class Collision:
    what: str  # "user id", or the table.column of another identifier
    org: str  # the org's slug ("" for org slugs themselves)
    values: list[str]
    columns: list[str] = field(default_factory=list)


def _org_path(model, depth: int = 0) -> str | None:
    """The lookup from `model` to its org id: `org_id`, or through a foreign key (`entity__org_id`)."""
    names = {f.name: f for f in model._meta.concrete_fields}
    if "org" in names and names["org"].is_relation:
        return "org_id"
    if depth >= 3:
        return None
    for f in model._meta.concrete_fields:
        if f.is_relation and f.related_model is not model:
            inner = _org_path(f.related_model, depth + 1)
            if inner:
                return f"{f.name}__{inner}"
    return None


def identity_collisions(apps) -> list[Collision]:
    """Groups of two or more distinct identifier values, per org, that the old comparison equated."""
    Org = apps.get_model("tenancy", "Org")
    slugs = dict(Org.objects.values_list("id", "slug"))
    seen: dict[tuple[str, object], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for model in apps.get_models():
        for f in model._meta.concrete_fields:
            if not isinstance(f, (IdentifierField, IdentifierSlugField)):
                continue
            column = f"{model._meta.db_table}.{f.column}"
            what = "user id" if f.name in USER_ID_FIELDS else column
            path = _org_path(model)
            rows = (model.objects.exclude(**{f"{f.name}__isnull": True}).values_list(path, f.name).distinct()
                    if path else ((None, v) for v in model.objects.values_list(f.name, flat=True).distinct()))
            for org_id, value in rows:
                if value:
                    seen[(what, org_id)][value].add(column)
    found = []
    for (what, org_id), values in seen.items():
        groups: dict[str, list[str]] = defaultdict(list)
        for value in values:
            groups[loose_form(value)].append(value)
        for group in groups.values():
            if len(group) > 1:
                columns = sorted({c for v in group for c in values[v]})
                found.append(Collision(what=what, org=slugs.get(org_id, "") if org_id else "",
                                       values=sorted(group), columns=columns))
    return sorted(found, key=lambda c: (c.org, c.what, c.values))


def report_lines(collisions: list[Collision]) -> list[str]:
    if not collisions:
        return ["identity collisions: none (no two ids were equal under the old case/accent-insensitive comparison)"]
    lines = [f"identity collisions: {len(collisions)} group(s) of ids that the old case/accent-insensitive "
             "comparison treated as one; review whether these users saw each other's data:"]
    for c in collisions:
        org = f"org {c.org}: " if c.org else ""
        lines.append(f"  {org}{c.what} {', '.join(repr(v) for v in c.values)}  ({', '.join(c.columns)})")
    return lines
