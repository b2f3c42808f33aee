"""The message table's foreign keys to queues and queue tables go (queue_id, queue_table_id,
original_queue_id). Each was checked at every enqueue's commit by locking the parent row
(``SELECT ... FOR KEY SHARE``: a WAL record per message, a MultiXact once two enqueuers overlap):
6 points of the plain-table insert rate in one interleaved run (docs/BENCHMARKS.md, "Issue 13
engine changes"). What they guarded is kept by locking: queue_delete and queue_table_delete take
``lock_storage`` (SHARE on the queue table's partitions) before counting its messages, and
writers that check a queue in one statement and write in another take ``hold_storage`` first.

Dropping a constraint of the partitioned parent drops its clones on every partition; the reverse
adds them back on the parent (and so on every partition). The indexes are left as they are: in
the same run one combined index for the queue monitor instead of four partial ones gained about
1 point, within the noise."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("queues", "0010_message_storage_per_queue_table"),
    ]

    operations = [
        migrations.AlterField(
            model_name="message",
            name="original_queue",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="queues.queue",
            ),
        ),
        migrations.AlterField(
            model_name="message",
            name="queue",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="messages",
                to="queues.queue",
            ),
        ),
        migrations.AlterField(
            model_name="message",
            name="queue_table",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="queues.queuetable",
            ),
        ),
    ]
