"""The back-check reads candidate rows with plain statements; what it reads must be what the ORM
gives (types, aware datetimes, vectors), on both database profiles."""
from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import Memory
from memory.selectors.recall_candidates import _CANDIDATE_COLUMNS, RecallQuery, RecallResult, back_check
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
    kept, _, _ = back_check(query, {first.id, second.id, other.id}, RecallResult(items=[]), active_embedder().model_id)
    assert set(kept) == {first.id, second.id}  # another user's row is never read
    for memory_id, candidate in kept.items():
        memory = Memory.objects.get(id=memory_id)
        for column in _CANDIDATE_COLUMNS:
            assert getattr(candidate, column) == getattr(memory, column), column
        assert candidate.created_at.tzinfo is not None
        assert candidate.vector is not None and len(bytes(candidate.vector)) == 4 * active_embedder().dim
