"""Seeding through the services, shared by the console view tests and the browser tests."""
from django.contrib.auth import get_user_model

from memory.recall import RecallQuery, recall
from memory.services.memories import MemoryInput, memory_write

OLD_STYLE = "I like long, detailed maintenance reports with every sensor reading"
NEW_STYLE = "Send me only a one-line summary of maintenance from now on"


def make_operator(username: str = "operator", password: str = "op-pass-123", **flags):
    flags = flags or {"is_staff": True, "is_superuser": True}
    return get_user_model().objects.create_user(username=username, password=password, **flags)


def write(org, content: str, *, user_id: str = "u1", kind: str = "fact", dedup: bool = True, **fields):
    outcome = memory_write(MemoryInput(org=org, user_id=user_id, kind=kind, content=content, **fields), dedup=dedup)
    assert outcome.memory is not None, outcome.action
    return outcome


def seed_supersede_chain(org, user_id: str = "u1"):
    """An old preference superseded by a newer one (same slot key): returns (old, new) rows."""
    old = write(org, OLD_STYLE, user_id=user_id, kind="preference", slot_key="pref:report_style").memory
    outcome = write(org, NEW_STYLE, user_id=user_id, kind="preference", slot_key="pref:report_style")
    assert outcome.action == "superseded" and outcome.superseded == [old.id], outcome
    old.refresh_from_db()
    return old, outcome.memory


def recalled_ids(org, user_id: str, query: str, k: int = 10) -> list[int]:
    return [item.memory.id for item in recall(RecallQuery(org=org, user_id=user_id, query=query, k=k)).items]
