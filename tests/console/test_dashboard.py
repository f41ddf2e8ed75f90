"""The dashboard: the metrics time series (sampling, deltas, minimum interval, pruning) and the page
that charts it, its links, and the app index without Celery's tables for non-superusers."""
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from console import metrics_history
from console.metrics_history import metrics_sample
from console.models import MetricSample
from memory.jobs.beat_schedule import BEAT_JOBS
from memory.services.conflicts import conflict_record
from memory.services.forget import forget_request_create
from tests.console.helpers import make_operator, write

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_series(settings):
    """Each test starts a new per-process series (the sampler keeps this process's last totals)."""
    settings.METRICS_SAMPLE_SECONDS = 60
    metrics_history._state.update(last=None, totals={}, pid=None)
    metrics_sample(force=True)  # baseline: requests made by earlier tests are not this test's
    MetricSample.objects.all().delete()
    metrics_history._state["last"] = None
    yield
    metrics_history._state.update(last=None, totals={}, pid=None)


@pytest.fixture
def console(client):
    client.force_login(make_operator())
    return client


def test_a_sample_holds_this_process_request_deltas_and_the_backlog_gauges(client, org):
    write(org, "The dryer's maintenance window is Sunday night", kind="fact")
    forget_request_create(org=org, subject_user="u1", requested_by="op", target="user", via="console")
    for _ in range(3):
        client.get("/healthz")
    client.get("/api/v1/memories/999")  # 401 without a key: a client error
    sample = metrics_sample(force=True)
    assert sample.routes["GET healthz"][0] == 3
    assert sample.routes["GET healthz"][1:3] == [0, 0]  # no 4xx, no 5xx
    assert sample.routes["GET healthz"][-1] == 3  # the +Inf latency bucket counts every request
    assert sample.routes["GET api/v1/memories/<int:memory_id>"][1] == 1
    assert sample.gauges["forget_pending"] == 1
    assert sample.gauges["up"]["database"] == 1 and "projection_lag" in sample.gauges
    client.get("/healthz")
    second = metrics_sample(force=True)
    assert second.routes["GET healthz"][0] == 1  # a delta since the previous sample, not the running total


def test_sampling_keeps_a_minimum_interval_and_prunes_old_rows(settings):
    assert metrics_sample() is not None
    assert metrics_sample() is None  # within METRICS_SAMPLE_SECONDS of the last one
    settings.METRICS_SAMPLE_SECONDS = 0
    assert metrics_sample() is not None
    old = MetricSample.objects.create(at=timezone.now() - timedelta(hours=settings.METRICS_HISTORY_HOURS + 1),
                                      process="old:1", gauges={}, routes={})
    metrics_sample(force=True)
    assert not MetricSample.objects.filter(id=old.id).exists()
    assert MetricSample.objects.count() == 3


def test_the_sampler_is_a_beat_job_and_a_task():
    from console.tasks import metrics_sample_task

    job = next(j for j in BEAT_JOBS if j.task == "console.tasks.metrics_sample_task")
    assert job.every_minutes == 1 and metrics_sample_task.name == job.task


def test_dashboard_is_the_landing_page_and_charts_every_series(console, client, org, settings):
    # Both memories must stay active for the conflict to be open: the learned judge replaces the first
    # with the second ("instead"), which is right, and not what this test is about.
    settings.MEMORY_LEARNED_REPLACE = {**settings.MEMORY_LEARNED_REPLACE, "enabled": False}
    older = write(org, "Remind me by SMS", kind="preference").memory
    newer = write(org, "Notify me on WeChat instead", kind="preference").memory
    conflict_record(older=older, newer=newer, score=0.6)
    now = timezone.now()
    for minutes, lag, requests in ((30, 4, 10), (20, 2, 20), (10, 0, 40)):
        MetricSample.objects.create(
            at=now - timedelta(minutes=minutes), process="web:1",
            gauges={"projection_lag": lag, "extraction_backlog": 1, "forget_pending": 0, "conflicts_open": 1,
                    "up": {"database": 1, "cache": 1, "broker": 0, "vector_index": 1}},
            routes={"POST api/v1/recall": [requests, 0, 1, requests * 0.02] + [0, 0, requests, requests, requests,
                                                                                requests, requests, requests, requests,
                                                                                requests, requests, requests]})
    response = console.get(reverse("admin:index"))
    assert response.status_code == 200
    html = response.content.decode()
    for section in ("dependencies", "gauge-projection_lag", "gauge-extraction_backlog", "gauge-forget_pending",
                    "gauge-conflicts_open", "request-rate", "error-rate", "latency"):
        assert f'id="{section}"' in html, section
    # Three samples one bucket apart draw a line (a polyline), not only dots, in the gauge and route charts.
    assert html.count("<polyline") >= 5
    assert 'class="dep-cell down"' in html  # the broker was down in the samples
    assert reverse("admin:memory_memory_changelist") + "?projection=lagging" in html
    assert reverse("admin:conversations_message_changelist") + "?extraction=pending" in html
    assert reverse("console:conflicts") in html
    assert "POST api/v1/recall" in html
    rows = response.context["routes"]
    recall = next(r for r in rows if r["route"] == "POST api/v1/recall")
    assert recall["requests"] >= 70 and recall["server_errors"] >= 3
    assert next(c for c in response.context["gauge_cards"] if c["key"] == "conflicts_open")["now"] == 1
    assert console.get(reverse("admin:index") + "?hours=48").status_code == 200


def test_the_lists_behind_the_dashboard_filter(console, org):
    lagging = write(org, "A memory whose projection is behind", kind="fact").memory  # eager tasks ran: in step
    from memory.models import Memory
    Memory.objects.filter(id=lagging.id).update(version=5)
    response = console.get(reverse("admin:memory_memory_changelist") + "?projection=lagging")
    assert [m.id for m in response.context["cl"].result_list] == [lagging.id]
    assert console.get(reverse("admin:conversations_message_changelist") + "?extraction=pending").status_code == 200


def test_celery_tables_are_hidden_from_operators_who_are_not_superusers(client):
    from console.roles import APPROVER, ensure_roles

    viewer = make_operator("approver", is_staff=True, is_superuser=False)
    viewer.groups.add(ensure_roles()[APPROVER])
    client.force_login(viewer)
    labels = {app["app_label"] for app in client.get(reverse("admin:index")).context["app_list"]}
    assert "memory" in labels and "django_celery_beat" not in labels
    assert client.get("/admin/django_celery_beat/").status_code == 404
    client.force_login(make_operator("root"))
    labels = {app["app_label"] for app in client.get(reverse("admin:index")).context["app_list"]}
    assert "django_celery_beat" in labels


def test_favicon_is_served_and_linked(console):
    response = console.get("/favicon.ico")
    assert response.status_code == 200 and response["Content-Type"] == "image/x-icon"
    assert b"".join(response.streaming_content)[:4] == b"\x00\x00\x01\x00"  # an ICO header
    assert b'rel="icon"' in console.get(reverse("admin:index")).content


def test_static_files_are_counted_apart_from_unmatched_paths(client):
    client.get("/static/admin/css/base.css")
    client.get("/no/such/path")
    sample = metrics_sample(force=True)
    assert "GET static" in sample.routes and sample.routes["GET unmatched"][1] == 1
