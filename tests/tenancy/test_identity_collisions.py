"""Identifier columns compare exactly, and the ids the old comparison equated are reported
(tenancy/identifiers.py, tenancy/collisions.py, migrations *_ident_binary_ids)."""
import json
from io import StringIO

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from conversations.models import Conversation
from conversations.services import conversation_create
from entities.models import Entity
from entities.services import entity_upsert
from tenancy.collisions import identity_collisions
from tenancy.identifiers import USER_ID_RE, IdentifierField, IdentifierSlugField, binary_collation, loose_form
from tenancy.services import org_get_or_create
from tests.conftest import SERVICE_PROFILE


@pytest.mark.parametrize("value", ["u1", "CaseUser", "a.b@c.d", "x:y+z-w_v", "A" * 128])
def test_documented_alphabet_is_accepted(value):
    assert USER_ID_RE.match(value)


@pytest.mark.parametrize("value", ["café", "ｃａｓｅ", "iso\xff1", "İ", "user\n", "a b", "", "A" * 129, "٣", "ß"])
def test_anything_outside_the_ascii_alphabet_is_refused(value):
    assert not USER_ID_RE.match(value)


def test_loose_form_equates_what_a_ci_collation_did():
    assert len({loose_form(v) for v in ("CaseUser", "caseuser", "ＣａｓｅＵｓｅｒ", "CÁSEUSER")}) == 1
    assert loose_form("isoÿ1") == loose_form("isoy1")
    assert loose_form("user1") != loose_form("user2")


@pytest.mark.django_db
def test_ids_differing_by_case_are_different_rows_on_every_backend():
    org = org_get_or_create(slug="acme")
    first, created = conversation_create(org=org, owner_user="CaseUser", external_id="S1")
    second, created_too = conversation_create(org=org, owner_user="caseuser", external_id="s1")
    assert created and created_too and first.id != second.id
    assert list(Conversation.objects.filter(org=org, owner_user="caseuser").values_list("id", flat=True)) == [second.id]
    entity_upsert(org=org, type="asset", external_id="A-1", name="upper")
    entity_upsert(org=org, type="asset", external_id="a-1", name="lower")
    assert Entity.objects.filter(org=org).count() == 2
    assert Entity.objects.get(org=org, external_id="a-1").name == "lower"
    assert org_get_or_create(slug="Acme").id != org.id


def _seed_look_alikes():
    org = org_get_or_create(slug="acme")
    other = org_get_or_create(slug="globex")
    conversation_create(org=org, owner_user="CaseUser")
    conversation_create(org=org, owner_user="caseuser")
    conversation_create(org=org, owner_user="someone")
    conversation_create(org=other, owner_user="CASEUSER")  # another org: no collision with acme's
    entity_upsert(org=org, type="asset", external_id="A-1", name="x", grants=["isoy1"])
    entity_upsert(org=org, type="asset", external_id="a-1", name="y")
    return org


@pytest.mark.django_db
def test_identity_collisions_lists_look_alike_ids_per_org():
    _seed_look_alikes()
    out = StringIO()
    call_command("identity_collisions", "--json", stdout=out)
    groups = {(g["what"], g["org"], tuple(g["values"])) for g in json.loads(out.getvalue())}
    assert ("user id", "acme", ("CaseUser", "caseuser")) in groups
    assert ("entities_entity.external_id", "acme", ("A-1", "a-1")) in groups
    assert not any(g[1] == "globex" for g in groups)  # one user id per org there
    assert not any("someone" in g[2] or "isoy1" in g[2] for g in groups)
    text = StringIO()
    call_command("identity_collisions", stdout=text)
    assert "org acme: user id 'CaseUser', 'caseuser'" in text.getvalue()


@pytest.mark.django_db
def test_the_migration_reports_with_its_historical_models():
    """Memory's 0013 runs the same scan over the migration state's models, which carry the field classes."""
    _seed_look_alikes()
    state = MigrationExecutor(connection).loader.project_state(("memory", "0013_ident_binary_ids"))
    found = {(c.what, c.org, tuple(c.values)) for c in identity_collisions(state.apps)}
    assert ("user id", "acme", ("CaseUser", "caseuser")) in found


@pytest.mark.django_db
def test_without_look_alikes_the_report_says_none():
    org_get_or_create(slug="acme")
    out = StringIO()
    call_command("identity_collisions", stdout=out)
    assert "none" in out.getvalue()


@pytest.mark.django_db
@pytest.mark.skipif(not SERVICE_PROFILE, reason="MySQL/MariaDB columns only: SQLite compares bytes already")
def test_every_identifier_column_has_the_binary_collation():
    expected = binary_collation(connection)
    columns = [(m._meta.db_table, f.column) for m in apps.get_models() for f in m._meta.concrete_fields
               if isinstance(f, (IdentifierField, IdentifierSlugField))]
    assert len(columns) >= 20
    with connection.cursor() as cursor:
        cursor.execute("SELECT TABLE_NAME, COLUMN_NAME, COLLATION_NAME FROM information_schema.COLUMNS "
                       "WHERE TABLE_SCHEMA = DATABASE()")
        collation = {(t, c): coll for t, c, coll in cursor.fetchall()}
    assert {col: collation[col] for col in columns if collation[col] != expected} == {}
