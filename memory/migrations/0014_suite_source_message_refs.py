from django.db import migrations
from django.db.models import OuterRef, Subquery


def fill_message_refs(apps, schema_editor):
    """Sources written by message id before the fix carry no ref: give them their message's."""
    MemorySource = apps.get_model("memory", "MemorySource")
    Message = apps.get_model("conversations", "Message")
    ref = Message.objects.filter(id=OuterRef("message_id")).values("external_ref")[:1]
    # A message without a ref sets NULL again: nothing changes for it.
    MemorySource.objects.filter(external_ref__isnull=True, message_id__isnull=False).update(external_ref=Subquery(ref))


class Migration(migrations.Migration):
    dependencies = [("memory", "0013_ident_binary_ids"), ("conversations", "0004_ident_binary_ids")]

    operations = [migrations.RunPython(fill_message_refs, migrations.RunPython.noop)]
