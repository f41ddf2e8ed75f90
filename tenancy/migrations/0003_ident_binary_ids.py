"""Identity is exact (issue 42): org slugs, API-key prefixes and idempotency keys' user, endpoint and key compare byte for byte. Only MySQL/MariaDB columns change (to a
binary, NO PAD collation); SQLite compares bytes already, so there only the migration state moves."""
from django.db import migrations

import tenancy.identifiers
from tenancy.identifiers import AlterIdentifierField


class Migration(migrations.Migration):

    dependencies = [
        ('tenancy', '0002_idempotency_record'),
    ]

    operations = [
        AlterIdentifierField(
            model_name='apikey',
            name='prefix',
            field=tenancy.identifiers.IdentifierField(max_length=16, unique=True),
        ),
        AlterIdentifierField(
            model_name='auditevent',
            name='org_slug',
            field=tenancy.identifiers.IdentifierField(blank=True, max_length=100),
        ),
        AlterIdentifierField(
            model_name='idempotencyrecord',
            name='endpoint',
            field=tenancy.identifiers.IdentifierField(max_length=200),
        ),
        AlterIdentifierField(
            model_name='idempotencyrecord',
            name='key',
            field=tenancy.identifiers.IdentifierField(max_length=255),
        ),
        AlterIdentifierField(
            model_name='idempotencyrecord',
            name='user_id',
            field=tenancy.identifiers.IdentifierField(max_length=128),
        ),
        AlterIdentifierField(
            model_name='org',
            name='slug',
            field=tenancy.identifiers.IdentifierSlugField(max_length=100, unique=True),
        ),
    ]
