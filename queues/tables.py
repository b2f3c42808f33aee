import django_tables2 as tables
from django.utils import timezone
from django.utils.html import format_html

from core.generic import ActionsColumn, RowAction
from queues.models import (
    Agent,
    Message,
    Queue,
    QueuePrivilege,
    QueueTable,
    QueueTableOwnerMove,
)
from queues.selectors import message_origin, tag_hex

ATTRS = {"class": "table table-sm table-hover align-middle"}


class QueueTableTable(tables.Table):
    name = tables.Column(linkify=True)
    queue_count = tables.Column(verbose_name="Queues")
    owner = tables.Column()
    primary_instance = tables.Column(verbose_name="Primary")
    secondary_instance = tables.Column(verbose_name="Secondary")
    owner_instance = tables.Column(verbose_name="Owner instance")

    class Meta:
        model = QueueTable
        fields = (
            "name",
            "sort_order",
            "multiple_consumers",
            "secure",
            "payload_type",
            "queue_count",
            "owner",
            "primary_instance",
            "secondary_instance",
            "owner_instance",
            "comment",
        )
        attrs = ATTRS
        empty_text = "No queue tables."


class OwnerMoveTable(tables.Table):
    at = tables.DateTimeColumn(verbose_name="Time", format="Y-m-d H:i:s")
    queue_table_name = tables.Column(verbose_name="Queue table")
    from_instance = tables.Column(verbose_name="From", default="— (0)")
    to_instance = tables.Column(verbose_name="To", default="— (0)")
    reason = tables.Column(verbose_name="Why")

    class Meta:
        model = QueueTableOwnerMove
        fields = ("at", "queue_table_name", "from_instance", "to_instance", "reason")
        attrs = ATTRS
        row_attrs = {"data-move": lambda record: record.queue_table_name}
        empty_text = "No ownership moves yet."

    def render_queue_table_name(self, record: QueueTableOwnerMove, value: str) -> str:
        if record.queue_table_id is None:
            return value
        return format_html('<a href="{}">{}</a>', record.queue_table.get_absolute_url(), value)


class QueueListTable(tables.Table):
    name = tables.Column(linkify=True)
    queue_table = tables.Column(linkify=True)
    kind = tables.Column(verbose_name="Type")
    depth_ready = tables.Column(verbose_name="Ready")
    depth_waiting = tables.Column(verbose_name="Waiting")
    depth_processed = tables.Column(verbose_name="Processed")
    depth_expired = tables.Column(verbose_name="Expired")
    oldest_ready = tables.Column(verbose_name="Oldest ready")
    enqueued = tables.Column(verbose_name="Enqueued")
    dequeued = tables.Column(verbose_name="Dequeued")
    enqueue_enabled = tables.BooleanColumn(verbose_name="Enq")
    dequeue_enabled = tables.BooleanColumn(verbose_name="Deq")

    class Meta:
        model = Queue
        fields = (
            "name",
            "queue_table",
            "kind",
            "depth_ready",
            "depth_waiting",
            "depth_processed",
            "depth_expired",
            "oldest_ready",
            "enqueued",
            "dequeued",
            "enqueue_enabled",
            "dequeue_enabled",
        )
        attrs = ATTRS
        empty_text = "No queues."

    def render_oldest_ready(self, value):  # type: ignore[no-untyped-def]
        age = timezone.now() - value
        return format_html(
            '<span title="{}">{} s</span>', value.isoformat(), int(age.total_seconds())
        )

    def render_kind(self, value, record):  # type: ignore[no-untyped-def]
        return "exception" if record.kind == "EXCEPTION_QUEUE" else "normal"


class MessageTable(tables.Table):
    id = tables.Column(linkify=False)
    enq_time = tables.DateTimeColumn(format="Y-m-d H:i:s")
    payload = tables.TemplateColumn(template_name="queues/_payload_cell.html", orderable=False)
    txn_group = tables.Column(verbose_name="Transaction group")
    delivery_mode = tables.Column(verbose_name="Delivery")
    in_buffer = tables.Column(verbose_name="Buffer")

    # Rendered for NULL too: a message enqueued here shows this site's name.
    origin_site = tables.Column(verbose_name="Origin site", empty_values=(), orderable=False)
    route = tables.Column(verbose_name="Route", default="", orderable=False)
    tag = tables.Column(verbose_name="Tag", default="", orderable=False)

    def render_origin_site(self, value: str | None) -> str:
        return message_origin(value)

    def render_route(self, value: list[str] | None) -> str:
        return " → ".join(value or ())

    def render_tag(self, value: bytes | memoryview | None) -> str:
        return tag_hex(value) or ""

    def render_in_buffer(self, value: bool, record: Message) -> str:
        # AQ$<queue table>'s MSG_STATE words for a buffered message.
        if record.delivery_mode != "BUFFERED":
            return "—"
        return "IN MEMORY" if value else "SPILLED"

    class Meta:
        model = Message
        # The payload comes before the message type and sender, so that it is in sight on a
        # normal screen without scrolling the table.
        fields = (
            "id",
            "state",
            "delivery_mode",
            "in_buffer",
            "priority",
            "correlation",
            "enq_time",
            "attempts",
            "original_queue",
            "exception_reason",
            "replayed",
            "payload",
            "txn_group",
            "kind",
            "type_name",
            "sender",
            "origin_site",
            "route",
            "tag",
        )
        attrs = ATTRS
        empty_text = "No messages."


class AgentTable(tables.Table):
    name = tables.Column()
    users = tables.ManyToManyColumn(verbose_name="Users", transform=lambda u: u.username)
    actions = ActionsColumn(RowAction("queues:agent_delete", "Drop"))

    class Meta:
        model = Agent
        fields = ("name", "address", "users", "comment")
        attrs = ATTRS
        empty_text = "No agents."


class QueuePrivilegeTable(tables.Table):
    queue = tables.Column(linkify=True)
    user = tables.Column()
    created = tables.DateTimeColumn(format="Y-m-d H:i:s")
    actions = ActionsColumn(RowAction("queues:privilege_revoke", "Revoke"))

    class Meta:
        model = QueuePrivilege
        fields = ("queue", "user", "privilege", "created")
        attrs = ATTRS
        empty_text = "No grants."
