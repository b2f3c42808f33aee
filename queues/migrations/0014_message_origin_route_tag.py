"""Origin site, route and tag on every message (issue 14, directed networks): three nullable
columns with no default, so adding them to the partitioned message table rewrites nothing, and a
message enqueued here writes none of them (NULL origin means "this site")."""

import django.contrib.postgres.fields
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("queues", "0013_propagation_receipt"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="origin_site",
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
        migrations.AddField(
            model_name="message",
            name="route",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.CharField(max_length=255), blank=True, null=True, size=None
            ),
        ),
        migrations.AddField(
            model_name="message",
            name="tag",
            field=models.BinaryField(blank=True, max_length=2000, null=True),
        ),
    ]
