"""Identity is exact: identifiers compare byte for byte on every backend (issue 42; docs/security.md).

Two rules, one per place an identifier can be bent:
- the edge: a user id is 1-128 of the documented ASCII alphabet `A-Z a-z 0-9 _ . @ : + -`. The class is
  spelled out: Python's `\\w` is Unicode by default and would let in `é`, full-width `Ａ` or a latin-1
  byte such as `ÿ`, which a case- and accent-insensitive comparison equates with `a`, `A` and `y`;
- the column: every identifier compared for access (user ids, org slugs, external ids, entity types and
  ids, API-key prefixes, idempotency keys, task keys) is an `IdentifierField`, whose column uses a binary
  collation. MySQL/MariaDB tables take the database's collation (`utf8mb4_unicode_ci`,
  `utf8mb4_general_ci`: both ignore case and accents), so `WHERE user_id = 'caseuser'` matched
  `CaseUser`'s rows. SQLite compares with BINARY already.
"""
import re
import unicodedata

from django.db import models
from django.db.migrations import AlterField

__all__ = ["USER_ID_MESSAGE", "USER_ID_PATTERN", "USER_ID_RE", "AlterIdentifierField", "IdentifierField",
           "IdentifierSlugField", "binary_collation", "loose_form"]

USER_ID_PATTERN = r"^[A-Za-z0-9_.@:+\-]{1,128}\Z"
USER_ID_RE = re.compile(USER_ID_PATTERN, re.ASCII)
USER_ID_MESSAGE = "Must be 1-128 characters of A-Z a-z 0-9 _ . @ : + - (ASCII only; compared exactly)."


def binary_collation(connection) -> str | None:
    """The collation that compares this backend's text byte for byte, or None where that is the default.
    MariaDB's `utf8mb4_nopad_bin` and MySQL 8's `utf8mb4_0900_bin` are also NO PAD: `utf8mb4_bin` would
    still equate 'plan' with 'plan ' (trailing spaces ignored)."""
    if connection.vendor != "mysql":
        return None
    return "utf8mb4_nopad_bin" if connection.mysql_is_mariadb else "utf8mb4_0900_bin"


class _BinaryCollation:
    """Reports the backend's binary collation as the column's, unless one is given explicitly. It is
    decided per connection (not stored in migrations), so one migration serves SQLite and MySQL."""

    def db_parameters(self, connection):
        params = super().db_parameters(connection)
        if self.db_collation is None:
            params["collation"] = binary_collation(connection)
        return params


class IdentifierField(_BinaryCollation, models.CharField):
    """A CharField holding an identifier compared for access: equal only when byte-for-byte equal."""


class IdentifierSlugField(_BinaryCollation, models.SlugField):
    """A SlugField (org slugs) compared byte for byte."""


class AlterIdentifierField(AlterField):
    """AlterField to an IdentifierField that touches the database only on MySQL/MariaDB, where the column's
    collation changes. Elsewhere nothing changes in the schema, and SQLite would copy the whole table
    to change a field's class."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "mysql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "mysql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)


def loose_form(value: str) -> str:
    """What the old comparison saw: case folded, accents and compatibility forms (full width) removed.
    Two ids with the same loose form were one user to a `*_ci` column; used to report such merges."""
    decomposed = unicodedata.normalize("NFKD", value)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFKC", stripped).casefold().rstrip(" ")
