"""Identity is exact (issue 42): entity types, external ids and grant user ids compare byte for byte. Only MySQL/MariaDB columns change (to a
binary, NO PAD collation); SQLite compares bytes already, so there only the migration state moves."""
from django.db import migrations

import tenancy.identifiers
from tenancy.identifiers import AlterIdentifierField


class Migration(migrations.Migration):

    dependencies = [
        ('entities', '0002_entity_access_user_index'),
    ]

    operations = [
        AlterIdentifierField(
            model_name='entity',
            name='external_id',
            field=tenancy.identifiers.IdentifierField(max_length=200),
        ),
        AlterIdentifierField(
            model_name='entity',
            name='type',
            field=tenancy.identifiers.IdentifierField(max_length=50),
        ),
        AlterIdentifierField(
            model_name='entityaccess',
            name='user_id',
            field=tenancy.identifiers.IdentifierField(max_length=128),
        ),
    ]
