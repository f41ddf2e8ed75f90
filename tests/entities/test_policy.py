"""The access policy given the registry snapshot (entities/policy.py): the snapshot and the way the
rules are read only save queries; the answer is the same, and revocation still applies at once."""
import pytest

from entities import policy
from entities.policy import allowed_entity_ids
from entities.selectors import entity_matcher_for_org
from entities.services import entity_access_set, entity_deactivate, entity_upsert
from tests.entities.test_policy_http import BusinessService

pytestmark = pytest.mark.django_db


@pytest.fixture
def ents(org, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        out = {
            "open": entity_upsert(org=org, type="asset", external_id="A-1", name="一号机")[0],
            "denied": entity_upsert(org=org, type="asset", external_id="A-2", name="二号机")[0],
            "secret": entity_upsert(org=org, type="asset", external_id="A-3", name="三号机", grants=["u2"])[0],
            "granted": entity_upsert(org=org, type="asset", external_id="A-4", name="四号机", grants=["u1"])[0],
            "gone": entity_upsert(org=org, type="asset", external_id="A-5", name="五号机")[0],
        }
        entity_deactivate(entity=out["gone"], actor="test")
    entity_access_set(entity=out["denied"], user_id="u1", granted=False, actor="test")
    return out


@pytest.mark.parametrize("rules_by_id_max", [policy.RULES_BY_ID_MAX, 0])
def test_local_policy_answer_is_the_same_however_it_is_read(org, ents, monkeypatch, rules_by_id_max):
    monkeypatch.setattr(policy, "RULES_BY_ID_MAX", rules_by_id_max)  # 0: every user's rule in the org
    ids = {e.id for e in ents.values()}
    matcher = entity_matcher_for_org(org_id=org.id)
    expected = {
        "u1": {ents["open"].id, ents["granted"].id, ents["gone"].id},
        "u2": {ents["open"].id, ents["denied"].id, ents["secret"].id, ents["gone"].id},
    }
    for user, allowed in expected.items():
        assert allowed_entity_ids(org_id=org.id, user_id=user, entity_ids=ids) == allowed
        assert allowed_entity_ids(org_id=org.id, user_id=user, entity_ids=ids, registry=matcher) == allowed
        active = ids - {ents["gone"].id}  # all in the snapshot
        assert allowed_entity_ids(org_id=org.id, user_id=user, entity_ids=active, registry=matcher) == allowed & active


def test_local_policy_with_the_registry_reads_rules_every_time(org, ents, django_assert_num_queries):
    matcher = entity_matcher_for_org(org_id=org.id)
    open_id = ents["open"].id
    with django_assert_num_queries(1):  # the user's rules: never cached
        assert allowed_entity_ids(org_id=org.id, user_id="u1", entity_ids={open_id}, registry=matcher) == {open_id}
    entity_access_set(entity=ents["open"], user_id="u1", granted=False, actor="test")
    assert entity_matcher_for_org(org_id=org.id) is matcher  # no registry change, no rebuild
    assert allowed_entity_ids(org_id=org.id, user_id="u1", entity_ids={open_id}, registry=matcher) == set()


@pytest.fixture
def service():
    svc = BusinessService()
    yield svc
    svc.stop()


@pytest.fixture
def http_policy(settings, service, monkeypatch):
    settings.ENTITY_ACCESS_POLICY = "http"
    settings.ENTITY_POLICY_URL = service.url
    settings.ENTITY_POLICY_TIMEOUT = 0.3
    settings.ENTITY_POLICY_CACHE_TTL = 0.0
    monkeypatch.setattr(policy, "_policy", None)  # built from the settings above
    return service


def test_http_policy_names_entities_from_the_registry_without_a_query(org, ents, http_policy,
                                                                      django_assert_num_queries):
    http_policy.allowed = {("asset", "A-1"), ("asset", "A-3"), ("asset", "A-5")}
    matcher = entity_matcher_for_org(org_id=org.id)
    ids = {e.id for e in ents.values()}
    with django_assert_num_queries(0):
        got = allowed_entity_ids(org_id=org.id, user_id="u1", entity_ids=ids, registry=matcher, org_slug=org.slug)
    # A-5 is deactivated: not named to the business service, denied, exactly as without the registry.
    assert got == {ents["open"].id, ents["secret"].id}
    assert allowed_entity_ids(org_id=org.id, user_id="u1", entity_ids=ids) == got
    asked = [{e["id"] for e in body["entities"]} for body in http_policy.requests]
    assert asked == [{"A-1", "A-2", "A-3", "A-4"}] * 2
    assert {body["org"] for body in http_policy.requests} == {org.slug}


def test_http_policy_with_the_registry_still_fails_closed(org, ents, http_policy):
    http_policy.allowed = {("asset", "A-1")}
    http_policy.delay = 1.0  # slower than the timeout
    matcher = entity_matcher_for_org(org_id=org.id)
    assert allowed_entity_ids(org_id=org.id, user_id="u1", entity_ids={ents["open"].id}, registry=matcher,
                              org_slug=org.slug) == set()
