"""Mem0 agent and run ids select conversations exactly (memory/mem0/scoping.py): `Bot` is not `bot`.
A `startswith`/`endswith` lookup is a LIKE, which SQLite answers ignoring ASCII case."""
import pytest

from memory.mem0.scoping import Filters, conversation_for, conversations_matching

pytestmark = pytest.mark.django_db


def test_agent_and_run_ids_differing_by_case_select_different_conversations(org):
    upper = conversation_for(org=org, user_id="u1", agent_id="Bot", run_id="Run1")
    lower = conversation_for(org=org, user_id="u1", agent_id="bot", run_id="run1")
    assert upper.id != lower.id

    def ids(**filters) -> set[int]:
        return set(conversations_matching(org=org, user_id="u1", filters=Filters(**filters)).values_list("id", flat=True))

    assert ids(agent_id="bot") == {lower.id} and ids(agent_id="Bot") == {upper.id}
    assert ids(run_id="run1") == {lower.id} and ids(run_id="Run1") == {upper.id}
    assert ids(agent_id="bot", run_id="run1") == {lower.id}
    assert ids() == {upper.id, lower.id}
    assert ids(agent_id="BOT") == set()
    assert not conversations_matching(org=org, user_id="U1", filters=Filters()).exists()
