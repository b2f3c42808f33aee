import django_tables2 as tables
from django.utils.html import format_html

from instances.choices import InstanceStatus
from instances.models import Instance

ATTRS = {"class": "table table-sm table-hover align-middle"}


def status_badge(status: str) -> str:
    colour = "success" if status == InstanceStatus.UP else "secondary"
    return format_html('<span class="badge text-bg-{}">{}</span>', colour, status)


class InstanceTable(tables.Table):
    inst_id = tables.Column(verbose_name="INST_ID")
    status = tables.Column(empty_values=())
    workers = tables.Column(empty_values=(), orderable=False, verbose_name="Live workers")
    started_at = tables.DateTimeColumn(verbose_name="Started", format="Y-m-d H:i:s")
    last_heartbeat = tables.DateTimeColumn(format="Y-m-d H:i:s")

    class Meta:
        model = Instance
        fields = ("inst_id", "name", "host", "status", "started_at", "last_heartbeat", "workers")
        attrs = ATTRS
        row_attrs = {"data-instance": lambda record: record.name}
        empty_text = "No instance has reported yet: start a Celery worker (AQ_INSTANCE_NAME)."

    def render_status(self, value: str) -> str:
        return status_badge(value)

    def render_workers(self, record: Instance) -> str:
        if record.status != InstanceStatus.UP:
            return "—"
        return ", ".join(sorted(record.workers)) or "—"
