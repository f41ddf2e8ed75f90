import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from tenancy.models import ApiKey
from tenancy.services import api_key_revoke
from tests.conftest import make_client

pytestmark = pytest.mark.django_db


def test_missing_key_is_401():
    response = APIClient().get("/api/v1/conversations", HTTP_X_MEMORY_USER="u1")
    assert response.status_code == 401


def test_wrong_key_is_401(org):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer mk_deadbeef_nope", HTTP_X_MEMORY_USER="u1")
    assert client.get("/api/v1/conversations").status_code == 401


def test_key_is_stored_hashed(org):
    client = make_client(org)
    key = ApiKey.objects.get(org=org)
    assert client.raw_key.split("_", 2)[2] not in key.secret_hash
    assert len(key.secret_hash) == 64


def test_revoked_key_is_refused_immediately(org):
    client = make_client(org)
    assert client.get("/api/v1/conversations").status_code == 200
    api_key_revoke(key=ApiKey.objects.get(org=org))
    assert client.get("/api/v1/conversations").status_code == 401


def test_acting_user_header_required(org):
    client = make_client(org, user=None)
    response = client.get("/api/v1/conversations")
    assert response.status_code == 400
    assert "X-Memory-User" in response.json()


def test_acting_user_header_validated(org):
    client = make_client(org, user=None)
    response = client.get("/api/v1/conversations", HTTP_X_MEMORY_USER="bad user/../x")
    assert response.status_code == 400


def test_x_api_key_header_also_accepted(org):
    client = make_client(org)
    other = APIClient()
    other.credentials(HTTP_X_API_KEY=client.raw_key, HTTP_X_MEMORY_USER="u1")
    assert other.get("/api/v1/conversations").status_code == 200


def test_create_api_key_command_prints_a_working_key(capsys, db):
    call_command("create_api_key", "newco")
    raw = capsys.readouterr().out.strip()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}", HTTP_X_MEMORY_USER="u1")
    assert client.get("/api/v1/conversations").status_code == 200


def test_health_endpoints(client, db):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    body = ready.json()
    assert body["checks"]["database"]["status"] == "ok"
    assert set(body["checks"]) >= {"database", "cache", "vector_index", "broker"}


def test_openapi_schema_served(client, db):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    assert "/api/v1/conversations" in response.content.decode()
    assert client.get("/api/docs/").status_code == 200
