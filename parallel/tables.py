import django_tables2 as tables

from parallel.models import LogicalQueue

ATTRS = {"class": "table table-sm table-hover align-middle"}


class LogicalQueueTable(tables.Table):
    name = tables.Column(linkify=True)
    partition_count = tables.Column(verbose_name="Partitions")

    class Meta:
        model = LogicalQueue
        fields = ("name", "partition_count", "comment", "created")
        attrs = ATTRS
        empty_text = "No logical queue yet."
