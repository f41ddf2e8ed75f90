"""entity_resolve (conversations/entity_resolution.py): the Django side of resolution. Mentions are
read only when a rule needs them, access is checked on the candidates returned, and the per-
generation registry cache never holds an access decision."""
import pytest

from conversations.entity_resolution import entity_resolve
from conversations.services import conversation_create, messages_append
from entities.selectors import entity_matcher_for_org
from entities.services import entity_access_set, entity_upsert

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(org, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        harvesters = [entity_upsert(org=org, type="asset", external_id=f"A-100{i}", name=f"{i}号收割机")[0]
                      for i in range(1, 6)]
        tractor = entity_upsert(org=org, type="asset", external_id="A-2001", name="3号拖拉机", aliases=["大拖"])[0]
    entity_matcher_for_org(org_id=org.id)  # built once per registry generation, outside the counts below
    return harvesters, tractor


def test_explicit_id_costs_one_query_and_plain_text_none(org, fleet, django_assert_num_queries):
    conversation, _ = conversation_create(org=org, owner_user="u1")
    with django_assert_num_queries(1):  # the access check of what matched; no mentions are read
        res, _ = entity_resolve(org=org, user_id="u1", text="A-1001的发动机有异响", conversation=conversation)
    assert (res.status, res.entity_id) == ("resolved", fleet[0][0].id)
    with django_assert_num_queries(0):
        res, _ = entity_resolve(org=org, user_id="u1", text="今天天气不错", conversation=conversation)
    assert res.status == "none"


def test_coreference_reads_the_recent_window(org, fleet, django_assert_num_queries):
    harvesters, tractor = fleet
    conversation, _ = conversation_create(org=org, owner_user="u1")
    messages_append(conversation=conversation, user_id="u1", messages=[{"role": "user", "content": "大拖今天停机了"}])
    with django_assert_num_queries(3):  # window message ids, their mentions, access
        res, _ = entity_resolve(org=org, user_id="u1", text="它为什么停机了", conversation=conversation)
    assert (res.status, res.entity_id) == ("resolved", tractor.id)


def test_category_word_returns_the_first_candidates_with_one_access_query(org, fleet, settings,
                                                                         django_assert_num_queries):
    harvesters, _ = fleet
    settings.RESOLVE_MAX_CANDIDATES = 2
    with django_assert_num_queries(1):
        res, _ = entity_resolve(org=org, user_id="u1", text="收割机的保养计划")
    assert (res.status, res.candidates, res.truncated) == ("ambiguous", [h.id for h in harvesters[:2]], True)
    # A revoked one is skipped and the next fills its place.
    entity_access_set(entity=harvesters[0], user_id="u1", granted=False, actor="test")
    res, _ = entity_resolve(org=org, user_id="u1", text="收割机的保养计划")
    assert (res.candidates, res.truncated) == ([h.id for h in harvesters[1:3]], True)
    settings.RESOLVE_MAX_CANDIDATES = 20
    res, _ = entity_resolve(org=org, user_id="u1", text="收割机的保养计划")
    assert (res.candidates, res.truncated) == ([h.id for h in harvesters[1:]], False)


def test_revocation_applies_at_once_without_a_registry_rebuild(org, fleet):
    _, tractor = fleet
    matcher = entity_matcher_for_org(org_id=org.id)
    assert entity_resolve(org=org, user_id="u1", text="大拖怎么样")[0].entity_id == tractor.id
    entity_access_set(entity=tractor, user_id="u1", granted=False, actor="test")
    assert entity_resolve(org=org, user_id="u1", text="大拖怎么样")[0].status == "none"
    assert entity_resolve(org=org, user_id="u2", text="大拖怎么样")[0].entity_id == tractor.id
    entity_access_set(entity=tractor, user_id="u1", granted=True, actor="test")
    assert entity_resolve(org=org, user_id="u1", text="大拖怎么样")[0].entity_id == tractor.id
    assert entity_matcher_for_org(org_id=org.id) is matcher


def test_restricting_an_entity_applies_to_the_cached_registry(org, fleet, django_capture_on_commit_callbacks):
    _, tractor = fleet
    with django_capture_on_commit_callbacks(execute=True):
        entity_upsert(org=org, type="asset", external_id="A-2001", name="3号拖拉机", aliases=["大拖"], grants=["u2"])
    assert entity_resolve(org=org, user_id="u1", text="大拖怎么样")[0].status == "none"
    assert entity_resolve(org=org, user_id="u2", text="大拖怎么样")[0].entity_id == tractor.id


def test_past_mentions_come_from_the_conversations_the_user_may_read_now(org, fleet, django_assert_num_queries):
    """"上次那台" reads the newest mention in a conversation the user owns and was not revoked from, or was
    granted: one plain statement, the same rule as conversation_readable_q."""
    from conversations.services import conversation_access_set

    harvesters, _ = fleet
    own, _ = conversation_create(org=org, owner_user="u1", external_id="own")
    shared, _ = conversation_create(org=org, owner_user="u2", external_id="shared")
    other, _ = conversation_create(org=org, owner_user="u2", external_id="other")
    messages_append(conversation=own, user_id="u1", messages=[{"role": "user", "content": "1号收割机漏油了"}])
    messages_append(conversation=shared, user_id="u2", messages=[{"role": "user", "content": "2号收割机漏油了"}])
    messages_append(conversation=other, user_id="u2", messages=[{"role": "user", "content": "3号收割机漏油了"}])

    def latest():
        res, _ = entity_resolve(org=org, user_id="u1", text="上次那台收割机修好了吗")
        return res.entity_id

    with django_assert_num_queries(2):  # the past mentions, the access check of the latest
        assert latest() == harvesters[0].id  # u2's conversations are not u1's to read
    conversation_access_set(conversation=shared, user_id="u1", granted=True, actor="test")
    assert latest() == harvesters[1].id  # granted: its newer mention counts
    conversation_access_set(conversation=shared, user_id="u1", granted=False, actor="test")
    conversation_access_set(conversation=own, user_id="u1", granted=False, actor="test")
    assert latest() is None  # revoked from both: nothing of theirs is read
