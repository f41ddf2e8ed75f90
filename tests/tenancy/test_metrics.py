"""/metrics: Prometheus text with request metrics by route and backlog gauges read at scrape time."""
import re

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from memory.models import Memory
from tests.conftest import make_client


def _scrape(client=None, **headers) -> dict[tuple[str, tuple], float]:
    response = (client or Client()).get("/metrics", **headers)
    assert response.status_code == 200, response.status_code
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


@pytest.mark.django_db
def test_projection_lag_is_read_from_the_database(org):
    api = make_client(org, "u1")
    assert api.post("/api/v1/memories", {"kind": "fact", "content": "农场在齐齐哈尔。"}, format="json").status_code == 201
    before = _scrape()[("memsvc_projection_lagging_memories", ())]
    Memory.objects.filter(org=org).update(projected_version=0)
    after = _scrape()[("memsvc_projection_lagging_memories", ())]
    assert after == before + 1
    assert _scrape()[("memsvc_source_up", (("source", "database"),))] == 1


@pytest.mark.django_db
def test_requests_are_counted_by_route_pattern_not_path(org):
    api = make_client(org, "u1")
    created = api.post("/api/v1/conversations", {"title": "t"}, format="json").json()
    api.get(f"/api/v1/conversations/{created['id']}")
    api.get("/api/v1/conversations/999999")
    samples = _scrape()
    routes = {dict(labels).get("route") for (name, labels) in samples if name == "memsvc_http_requests_total"}
    assert "api/v1/conversations/<int:conversation_id>" in routes
    assert not any(route and re.search(r"/\d+", route) for route in routes), routes
    statuses = {dict(labels)["status"] for (name, labels) in samples
                if name == "memsvc_http_requests_total" and dict(labels)["route"] == "api/v1/conversations/<int:conversation_id>"}
    assert {"200", "404"} <= statuses


@pytest.mark.django_db
def test_token_protects_metrics_when_set(settings):
    settings.METRICS_TOKEN = "s3cret"
    assert Client().get("/metrics").status_code == 401
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert ("memsvc_source_up", (("source", "database"),)) in _scrape(HTTP_AUTHORIZATION="Bearer s3cret")
