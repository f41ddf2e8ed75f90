"""The keyword index follows the user's generation; a bump lost to a Redis partition still moves it."""
import pytest
from django.conf import settings
from django.core.cache import cache

from memory.recall.snapshot_cache import keyword_scores
from memory.services.memories import MemoryInput, memory_write

REDIS = settings.CACHES["default"]["BACKEND"].endswith("RedisCache")


def _ids(org, query):
    return set(keyword_scores(org_id=org.id, user_id="u1", query=query))


@pytest.mark.django_db(transaction=True)
def test_a_write_is_found_by_keyword_right_after_it(org):
    first = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="The zqpump valve is in barn 3."))
    assert _ids(org, "zqpump") == {first.memory.id}
    second = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="A spare zqpump seal is in the van."))
    assert _ids(org, "zqpump") == {first.memory.id, second.memory.id}


@pytest.mark.skipif(not REDIS, reason="a partition needs Redis (the local-memory cache cannot fail)")
@pytest.mark.django_db(transaction=True)
def test_a_bump_lost_in_a_partition_still_invalidates_the_index(org, monkeypatch):
    first = memory_write(MemoryInput(org=org, user_id="u1", kind="fact", content="The zqpump valve is in barn 3."))
    assert _ids(org, "zqpump") == {first.memory.id}  # index cached under the current generation
    counter = f"mem-gen:{org.id}:u1"
    before = cache.get(counter)
    lost: list[str] = []

    def partitioned_incr(key, *args, **kwargs):
        lost.append(key)
        return None  # django-redis swallows the connection error of a partition and answers None

    with monkeypatch.context() as patched:
        patched.setattr(cache, "incr", partitioned_incr)
        second = memory_write(MemoryInput(org=org, user_id="u1", kind="fact",
                                          content="A spare zqpump seal is in the van."))
    # Positive control: the write's bump went to the partition and the counter did not move, so only the
    # fallback (the MySQL epoch) can make the index below see the second memory.
    assert counter in lost and cache.get(counter) == before
    assert _ids(org, "zqpump") == {first.memory.id, second.memory.id}
