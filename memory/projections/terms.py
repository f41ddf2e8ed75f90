"""Keep each memory's keyword terms (MemoryTerms) in step with its version: one bulk upsert per
batch, beside the vector upsert, so keyword indexes are built from stored terms (memory/keyword.py)."""
from typing import Any

from django.db import connection

from memory.keyword import terms_rows
from memory.models import MemoryTerms


def terms_sync(memories) -> None:
    rows = terms_rows(memories)
    if not rows:
        return
    options: dict[str, Any] = {"update_conflicts": True, "update_fields": ["version", "tokenizer", "terms"]}
    if connection.features.supports_update_conflicts_with_target:  # SQLite/PostgreSQL; MySQL infers the key
        options["unique_fields"] = ["memory"]
    MemoryTerms.objects.bulk_create(rows, **options)
