"""Possible conflicts: recorded once per pair, resolved by supersede or keep-both, audited."""
import pytest

from memory.models import Memory, MemoryConflict
from memory.selectors import conflict_list
from memory.services import MemoryInput, memory_write
from memory.services.conflicts import ConflictStateError, conflict_record, conflict_resolve
from tenancy.models import AuditEvent

pytestmark = pytest.mark.django_db


def write(org, content, user="u1"):
    outcome = memory_write(MemoryInput(org=org, user_id=user, kind="preference", content=content, created_by="api",
                                       actor="test"), dedup=False)
    return outcome.memory


def test_a_pair_is_recorded_once(org):
    old, new = write(org, "保养提醒用短信发给我"), write(org, "保养提醒改成微信发给我")
    first = conflict_record(older=old, newer=new, score=0.6, signals={"subject": 0.6})
    again = conflict_record(older=old, newer=new, score=0.7)
    assert first.id == again.id and MemoryConflict.objects.count() == 1
    assert [c.id for c in conflict_list(org=org)] == [first.id]


def test_supersede_the_older_ends_it_and_is_audited(org):
    old, new = write(org, "保养提醒用短信发给我"), write(org, "保养提醒改成微信发给我")
    conflict = conflict_record(older=old, newer=new, score=0.6)
    conflict_resolve(org=org, conflict_id=conflict.id, action="supersede", operator="op1")
    old.refresh_from_db()
    assert old.status == "superseded" and old.superseded_by_id == new.id and old.version == 2
    assert Memory.objects.get(id=new.id).status == "active"
    assert list(conflict_list(org=org)) == []
    actions = set(AuditEvent.objects.filter(actor="op1").values_list("action", flat=True))
    assert actions == {"memory.supersede", "conflict.supersede"}
    with pytest.raises(ConflictStateError):
        conflict_resolve(org=org, conflict_id=conflict.id, action="keep_both", operator="op1")


def test_keep_both_leaves_both_active(org):
    old, new = write(org, "农场在齐齐哈尔"), write(org, "农场有三台收割机")
    conflict = conflict_record(older=old, newer=new, score=0.55)
    resolved = conflict_resolve(org=org, conflict_id=conflict.id, action="keep_both", operator="op1")
    assert resolved.status == "kept_both"
    assert set(Memory.objects.filter(id__in=[old.id, new.id]).values_list("status", flat=True)) == {"active"}


def test_a_conflict_of_another_org_is_not_found(org, other_org):
    old, new = write(org, "a1"), write(org, "a2")
    conflict = conflict_record(older=old, newer=new, score=0.5)
    with pytest.raises(MemoryConflict.DoesNotExist):
        conflict_resolve(org=other_org, conflict_id=conflict.id, action="supersede", operator="op")


def test_an_unknown_action_is_refused(org):
    old, new = write(org, "b1"), write(org, "b2")
    conflict = conflict_record(older=old, newer=new, score=0.5)
    with pytest.raises(ValueError):
        conflict_resolve(org=org, conflict_id=conflict.id, action="merge", operator="op")
