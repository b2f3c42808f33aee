import django_tables2 as tables

from sites.models import DatabaseLink

ATTRS = {"class": "table table-sm table-hover align-middle"}


class DatabaseLinkTable(tables.Table):
    name = tables.Column(linkify=True)
    remote_global_name = tables.Column(verbose_name="Remote site")
    # sites.selectors.connect_text: a socket directory reads as localhost (socket /dir).
    connect = tables.Column(orderable=False, verbose_name="Host:port/database")
    username = tables.Column(verbose_name="User at the site")
    sslmode = tables.Column(verbose_name="TLS")
    owner = tables.Column(default="PUBLIC")  # no owner: a PUBLIC link

    class Meta:
        model = DatabaseLink
        fields = (
            "name",
            "remote_global_name",
            "connect",
            "username",
            "sslmode",
            "owner",
            "comment",
            "created",
        )
        attrs = ATTRS
        row_attrs = {"data-link": lambda record: record.name}
        empty_text = "No database links."
