import django_tables2 as tables

from core.models import ChangeLogEntry


class ChangeLogTable(tables.Table):
    time = tables.Column(linkify=True)
    username = tables.Column(verbose_name="User")

    class Meta:
        model = ChangeLogEntry
        fields = ("time", "username", "action", "verb", "object_type", "object_repr")
        attrs = {"class": "table table-sm table-hover align-middle"}
