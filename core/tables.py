import django_tables2 as tables

from core.models import ChangeLogEntry


class ChangeLogTable(tables.Table):
    time = tables.DateTimeColumn(linkify=True, format="Y-m-d H:i:s")
    username = tables.Column(verbose_name="User")
    object_repr = tables.Column(verbose_name="Object")

    class Meta:
        model = ChangeLogEntry
        fields = ("time", "username", "action", "verb", "object_type", "object_repr")
        attrs = {"class": "table table-sm table-hover align-middle"}
