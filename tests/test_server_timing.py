"""The Server-Timing header (config/server_timing.py): absent by default, and when on, the parts of a
served recall or context call in the order they ran, each a duration that fits inside `app`."""
import pytest

from common import server_timing
from tests.conversations.api_helpers import create_conversation

pytestmark = pytest.mark.django_db


@pytest.fixture
def timed(settings):
    settings.MIDDLEWARE = ["common.server_timing.ServerTimingMiddleware", *settings.MIDDLEWARE]


def test_no_header_by_default(api):
    response = api.post("/api/v1/recall", {"query": "报表数据库用什么"}, format="json")
    assert response.status_code == 200
    assert "Server-Timing" not in response.headers


def test_recall_reports_its_parts_inside_app(timed, api):
    api.post("/api/v1/memories", {"kind": "fact", "content": "报表数据库用的是 PostgreSQL 15"}, format="json")
    response = api.post("/api/v1/recall", {"query": "报表数据库用什么"}, format="json")
    assert response.status_code == 200 and response.json()["items"]
    parts = server_timing.parse(response.headers["Server-Timing"])
    assert list(parts)[:2] == ["pre_view", "view"] and list(parts)[-1] == "app"
    assert {"recall_total", "recall_embed", "recall_vector", "recall_back_check_rank"} <= set(parts)
    assert all(ms >= 0 for ms in parts.values())
    # Each part lies inside the one that contains it.
    assert parts["recall_total"] <= parts["view"] <= parts["app"]
    assert parts["pre_view"] + parts["view"] <= parts["app"]


def test_context_reports_view_and_app(timed, api):
    conversation = create_conversation(api)
    response = api.post(f"/api/v1/conversations/{conversation['id']}/context", {"message": "下周的维保计划"},
                        format="json")
    assert response.status_code == 200, response.content
    parts = server_timing.parse(response.headers["Server-Timing"])
    assert set(parts) == {"pre_view", "view", "app"} and parts["view"] <= parts["app"]


def test_a_refused_request_still_carries_app(timed, api):
    response = api.post("/api/v1/recall", {"query": "x", "k": "many"}, format="json")
    assert response.status_code == 400
    parts = server_timing.parse(response.headers["Server-Timing"])
    assert "app" in parts and "view" not in parts


def test_recording_outside_a_request_is_a_no_op():
    server_timing.add("view", 1.0)
    server_timing.since_start("pre_view")
    assert server_timing._record.get() is None
    assert server_timing.header_value({"view": 1.234}, 2.0) == "view;dur=1.23, app;dur=2.00"
