"""Identity is exact (issue 42): every user-id column and source ref of memory; then the ids the old comparison equated are reported compare byte for byte. Only MySQL/MariaDB columns change (to a
binary, NO PAD collation); SQLite compares bytes already, so there only the migration state moves."""
from django.db import migrations

import tenancy.identifiers
from tenancy.identifiers import AlterIdentifierField


def report_collisions(apps, schema_editor):
    """Print which ids the old case/accent-insensitive comparison equated (also:
    `python manage.py identity_collisions`), so an operator can see whether users were merged."""
    from tenancy.collisions import identity_collisions, report_lines

    collisions = identity_collisions(apps)
    if collisions:
        print("\n" + "\n".join(report_lines(collisions)))


class Migration(migrations.Migration):

    dependencies = [
        ('memory', '0012_vector_collection_payload_version'),
        ('conversations', '0004_ident_binary_ids'),
        ('entities', '0003_ident_binary_ids'),
        ('tenancy', '0003_ident_binary_ids'),
    ]

    operations = [
        AlterIdentifierField(
            model_name='forgetrequest',
            name='subject_user',
            field=tenancy.identifiers.IdentifierField(blank=True, max_length=128),
        ),
        AlterIdentifierField(
            model_name='forgetrule',
            name='user_id',
            field=tenancy.identifiers.IdentifierField(blank=True, max_length=128, null=True),
        ),
        AlterIdentifierField(
            model_name='mem0addevent',
            name='user_id',
            field=tenancy.identifiers.IdentifierField(max_length=128),
        ),
        AlterIdentifierField(
            model_name='memory',
            name='user_id',
            field=tenancy.identifiers.IdentifierField(max_length=128),
        ),
        AlterIdentifierField(
            model_name='memorycacheepoch',
            name='user_id',
            field=tenancy.identifiers.IdentifierField(max_length=128),
        ),
        AlterIdentifierField(
            model_name='memoryconflict',
            name='user_id',
            field=tenancy.identifiers.IdentifierField(max_length=128),
        ),
        AlterIdentifierField(
            model_name='memorysource',
            name='external_ref',
            field=tenancy.identifiers.IdentifierField(blank=True, max_length=200, null=True),
        ),
        AlterIdentifierField(
            model_name='memoryterms',
            name='user_id',
            field=tenancy.identifiers.IdentifierField(max_length=128, null=True),
        ),
        AlterIdentifierField(
            model_name='memorywritelock',
            name='user_id',
            field=tenancy.identifiers.IdentifierField(max_length=128),
        ),
        migrations.RunPython(report_collisions, migrations.RunPython.noop, elidable=True),
    ]
