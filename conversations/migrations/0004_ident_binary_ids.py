"""Identity is exact (issue 42): owners, external ids, grant and message user ids, message refs and task keys compare byte for byte. Only MySQL/MariaDB columns change (to a
binary, NO PAD collation); SQLite compares bytes already, so there only the migration state moves."""
from django.db import migrations

import tenancy.identifiers
from tenancy.identifiers import AlterIdentifierField


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0003_message_pending_extraction_index'),
    ]

    operations = [
        AlterIdentifierField(
            model_name='conversation',
            name='external_id',
            field=tenancy.identifiers.IdentifierField(blank=True, max_length=200, null=True),
        ),
        AlterIdentifierField(
            model_name='conversation',
            name='owner_user',
            field=tenancy.identifiers.IdentifierField(max_length=128),
        ),
        AlterIdentifierField(
            model_name='conversationaccess',
            name='user_id',
            field=tenancy.identifiers.IdentifierField(max_length=128),
        ),
        AlterIdentifierField(
            model_name='entitymention',
            name='user_id',
            field=tenancy.identifiers.IdentifierField(max_length=128),
        ),
        AlterIdentifierField(
            model_name='message',
            name='external_ref',
            field=tenancy.identifiers.IdentifierField(blank=True, max_length=200, null=True),
        ),
        AlterIdentifierField(
            model_name='message',
            name='user_id',
            field=tenancy.identifiers.IdentifierField(max_length=128),
        ),
        AlterIdentifierField(
            model_name='taskstate',
            name='key',
            field=tenancy.identifiers.IdentifierField(max_length=200),
        ),
    ]
