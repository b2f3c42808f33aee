import django_tables2 as tables

from sites.models import DatabaseLink

ATTRS = {"class": "table table-sm table-hover align-middle"}


class DatabaseLinkTable(tables.Table):
    name = tables.Column(linkify=True)
    remote_global_name = tables.Column(verbose_name="Remote site")
    address = tables.Column(
        empty_values=(), orderable=False, verbose_name="Host:port/database", accessor="address"
    )
    username = tables.Column(verbose_name="User at the site")
    sslmode = tables.Column(verbose_name="TLS")
    owner = tables.Column(default="PUBLIC")  # no owner: a PUBLIC link

    class Meta:
        model = DatabaseLink
        fields = (
            "name",
            "remote_global_name",
            "address",
            "username",
            "sslmode",
            "owner",
            "comment",
            "created",
        )
        attrs = ATTRS
        row_attrs = {"data-link": lambda record: record.name}
        empty_text = "No database links."
