from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import Memory
from memory.services.lifecycle import memories_evict, memories_expire, value_score
from memory.services.memories import MemoryInput, memory_write
from tenancy.models import AuditEvent

pytestmark = pytest.mark.django_db


def write(org, content, **extra):
    return memory_write(MemoryInput(org=org, user_id="u1", kind=extra.pop("kind", "fact"), content=content, **extra)).memory


def test_expiry_invalidates_task_and_dated_items(org):
    now = timezone.now()
    task = write(org, "这次只看本周的", kind="context", scope="task", valid_to=now - timedelta(minutes=1))
    later = write(org, "本月只看东区", kind="context", valid_to=now + timedelta(days=3))
    keep = write(org, "我们农场在齐齐哈尔")
    assert memories_expire(now=now) == 1
    assert Memory.objects.get(id=task.id).status == "expired"
    assert Memory.objects.get(id=later.id).status == "active" and Memory.objects.get(id=keep.id).status == "active"
    assert AuditEvent.objects.filter(action="memory.expired", target_id=str(task.id)).exists()
    assert memories_expire(now=now) == 0  # idempotent


def test_eviction_keeps_the_most_valuable_within_capacity(org):
    org.memory_capacity = 2
    org.save()
    now = timezone.now()
    old_unused = write(org, "我们去年用过一台旧的烘干机", importance=0.2)
    Memory.objects.filter(id=old_unused.id).update(created_at=now - timedelta(days=300))
    used = write(org, "我们农场在黑龙江齐齐哈尔", importance=0.5)
    Memory.objects.filter(id=used.id).update(access_count=20, last_accessed_at=now)
    important = write(org, "我们合作社今年的采购预算是八十万", importance=0.9)
    assert memories_evict(now=now) == 1
    statuses = dict(Memory.objects.exclude(kind="episode").values_list("id", "status"))
    assert statuses == {old_unused.id: "invalidated", used.id: "active", important.id: "active"}
    evicted = Memory.objects.get(id=old_unused.id)
    assert evicted.invalid_reason == "evicted"  # auditable, not dropped
    assert value_score(evicted, now) < value_score(Memory.objects.get(id=used.id), now)
    assert memories_evict(now=now) == 0
