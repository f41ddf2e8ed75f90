from django.db import migrations, models


class Migration(migrations.Migration):
    """Collections that exist hold points without the `owner` field: version 1 until a rebuild
    (rebuild_projections) re-projects them; collections created from now on start at 2."""

    dependencies = [("memory", "0011_recall_snapshot_reads")]

    operations = [
        migrations.AddField(model_name="vectorcollection", name="payload_version",
                            field=models.PositiveSmallIntegerField(default=1)),
        migrations.AlterField(model_name="vectorcollection", name="payload_version",
                              field=models.PositiveSmallIntegerField(default=2)),
    ]
