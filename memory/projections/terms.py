"""Keep each memory's keyword terms and text verdicts (MemoryTerms) in step with its version: one bulk
upsert per batch, beside the vector upsert, so recall's snapshots are built from stored terms
(memory/recall/keyword.py, memory/recall/snapshot.py)."""
from typing import Any

from django.db import connection

from memory.models import MemoryTerms
from memory.recall.keyword import terms_rows


def terms_sync(memories) -> None:
    rows = terms_rows(memories)
    if not rows:
        return
    options: dict[str, Any] = {"update_conflicts": True,
                               "update_fields": ["org", "user_id", "version", "tokenizer", "hashes", "cjk",
                                                 "small_talk", "speaker"]}
    if connection.features.supports_update_conflicts_with_target:  # SQLite/PostgreSQL; MySQL infers the key
        options["unique_fields"] = ["memory"]
    MemoryTerms.objects.bulk_create(rows, **options)
