"""The back-check reads candidate rows from the user's snapshot, built with plain statements; what it
holds must be what the ORM gives (types, aware datetimes), on both database profiles, and the
vectors read for the candidates must be the stored ones."""
from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from memory.models import Memory, MemoryEmbedding
from memory.recall.back_check import back_check
from memory.recall.candidates import read_vectors
from memory.recall.query import RecallQuery, RecallResult
from memory.recall.snapshot_sql import CANDIDATE_COLUMNS
from memory.services.memories import MemoryInput, memory_write
from memory.vectors import active_embedder


@pytest.mark.django_db(transaction=True)
def test_candidate_rows_equal_the_orm_rows(org):
    now = timezone.now()
    first = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="The pump is in barn 3.")).memory
    second = memory_write(MemoryInput(org=org, user_id="u1", kind="event", content="明天去佳木斯修收割机。")).memory
    Memory.objects.filter(id=second.id).update(valid_from=now - timedelta(days=1, microseconds=7),
                                               valid_to=now + timedelta(days=3), occurred_at=now)
    other = memory_write(MemoryInput(org=org, user_id="u2", kind="fact", content="Not u1's.")).memory
    query = RecallQuery(org=org, user_id="u1", query="pump")
    kept, _, _ = back_check(query, {first.id, second.id, other.id}, RecallResult(items=[]))
    assert set(kept) == {first.id, second.id}  # another user's row is never read
    for memory_id, candidate in kept.items():
        memory = Memory.objects.get(id=memory_id)
        for column in CANDIDATE_COLUMNS:
            assert getattr(candidate, column) == getattr(memory, column), column
        assert candidate.created_at.tzinfo is not None
    read_vectors(kept, active_embedder().model_id)
    for memory_id, candidate in kept.items():
        stored = MemoryEmbedding.objects.get(memory_id=memory_id, model_id=active_embedder().model_id).vector
        assert np.allclose(candidate.vector, np.frombuffer(bytes(stored), dtype=np.float32), atol=1e-6)
