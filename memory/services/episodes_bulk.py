"""Episodes of several messages written at once: the rows, versions, sources, entity links and stored
vectors in one INSERT each, inside one transaction.

Same decisions as ``memory_write`` for an episode, which skips every dedup tier (an episode is what
was said, each message its own): forget rules, then ADD. The forget rules are read once per user
instead of once per episode.
"""
import logging
from collections import defaultdict

import numpy as np
from django.conf import settings
from django.db import connection, transaction

from common.text import content_hash
from memory.choices import MemoryKind
from memory.enqueue import sync_after_commit
from memory.models import EntityLink, MemoryEmbedding, MemorySource, MemoryVersion
from memory.services.forget_rules import forget_rule_matches, forget_rule_verdict, forget_rules_for
from memory.services.memories import (
    MemoryInput,
    WriteOutcome,
    _lock_user,
    audit_restated,
    new_memory_row,
)
from memory.vectors import active_embedder, to_bytes
from tenancy.db import retry_on_contention

logger = logging.getLogger(__name__)


def _screen(inputs: list[MemoryInput], digests: list[str], vectors: list[np.ndarray], model_id: str,
            outcomes: list) -> tuple[list[int], dict[int, tuple]]:
    """Lock each user once and read their forget rules once; mark the blocked inputs' outcomes. The
    indexes of the inputs to write, and the rule each one restates (said again after a forget)."""
    rules: dict[tuple[int, str], list[tuple]] = {}
    for inp in inputs:
        key = (inp.org.id, inp.user_id)
        if key not in rules:
            _lock_user(inp.org, inp.user_id)
            rules[key] = forget_rules_for(inp.org, inp.user_id)
    kept, after_rules = [], {}
    for i, inp in enumerate(inputs):
        matches = forget_rule_matches(inp.org, inp.user_id, inp.content, digests[i], vectors[i], model_id,
                                      rules=rules[(inp.org.id, inp.user_id)])
        blocked, after_rule = forget_rule_verdict(inp.sources, matches)
        if blocked:
            logger.info("memory write blocked by forget rule org=%s", inp.org.id)
            outcomes[i] = WriteOutcome("blocked", None)
            continue
        kept.append(i)
        if after_rule is not None:
            after_rules[i] = after_rule
    return kept, after_rules


def _insert(inputs: list[MemoryInput], kept: list[int], digests: list[str], vectors: list[np.ndarray],
            model_id: str) -> list:
    """The kept episodes' rows, first versions, sources, entity links and stored vectors: one INSERT each."""
    rows = _insert_rows([new_memory_row(inputs[i], digests[i]) for i in kept])
    versions = _insert_rows([
        MemoryVersion(memory=row, n=1, content=row.content, content_hash=row.content_hash,
                      created_by=inputs[i].created_by, actor=inputs[i].actor[:200], reason="ADD")
        for i, row in zip(kept, rows)])
    MemorySource.objects.bulk_create([
        MemorySource(memory=row, version=version, message_id=s.message_id, conversation_id=s.conversation_id,
                     external_ref=s.external_ref)
        for i, row, version in zip(kept, rows, versions) for s in inputs[i].sources])
    EntityLink.objects.bulk_create([EntityLink(memory=row, entity_id=e) for i, row in zip(kept, rows)
                                    for e in set(inputs[i].entity_ids)], ignore_conflicts=True)
    MemoryEmbedding.objects.bulk_create([
        MemoryEmbedding(memory=row, model_id=model_id, version=row.version, vector=to_bytes(vectors[i]))
        for i, row in zip(kept, rows)])
    return rows


@retry_on_contention
def episodes_write(inputs: list[MemoryInput], vectors: list[np.ndarray | None]) -> list[WriteOutcome]:
    """One outcome per input, in order: "added" or "blocked". `vectors[i]`: the content's embedding
    under the live model, or None to encode the missing ones here (in one call)."""
    if not inputs:
        return []
    assert all(inp.kind == MemoryKind.EPISODE for inp in inputs), "episodes_write writes episodes only"
    embedder = active_embedder()
    model_id = embedder.model_id
    for inp in inputs:
        if len(inp.content) > settings.MAX_MEMORY_CHARS:
            inp.content = inp.content[: settings.MAX_MEMORY_CHARS]
    missing = [i for i, v in enumerate(vectors) if v is None]
    vectors = list(vectors)
    if missing:
        for i, vector in zip(missing, embedder.encode([inputs[i].content for i in missing])):
            vectors[i] = vector
    digests = [content_hash(inp.content) for inp in inputs]
    outcomes: list[WriteOutcome | None] = [None] * len(inputs)
    with transaction.atomic():
        kept, after_rules = _screen(inputs, digests, vectors, model_id, outcomes)
        rows = _insert(inputs, kept, digests, vectors, model_id)
        per_user: dict[tuple[int, str], list[tuple[int, int]]] = defaultdict(list)
        for i, row in zip(kept, rows):
            outcomes[i] = WriteOutcome("added", row)
            per_user[(inputs[i].org.id, inputs[i].user_id)].append((row.id, row.version))
            after_rule = after_rules.get(i)
            if after_rule is not None:
                audit_restated(inputs[i], row, after_rule)
        for (org_id, user_id), pairs in per_user.items():
            sync_after_commit(pairs, org_id, user_id)
    logger.info("episodes written count=%s blocked=%s", len(kept), len(inputs) - len(kept))
    return outcomes


def _insert_rows(rows: list) -> list:
    """Rows that later rows point at need their ids: one INSERT where the backend returns them
    (SQLite, MariaDB ≥ 10.5, PostgreSQL), else one INSERT per row."""
    if not rows:
        return rows
    if connection.features.can_return_rows_from_bulk_insert:
        return type(rows[0]).objects.bulk_create(rows)
    for row in rows:
        row.save(force_insert=True)
    return rows
