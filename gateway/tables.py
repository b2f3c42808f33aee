"""Tables of the gateway pages. Columns read only what gateway.selectors fetched (select_related,
annotations, prefetches), so a page costs the same number of queries whatever its size."""

from __future__ import annotations

from typing import Any

import django_tables2 as tables
from django.utils.html import format_html

from core.generic import ActionsColumn, RowAction
from gateway.models import Agent, ForeignQueue, Job, Link
from gateway.selectors import agent_ping
from gateway.templatetags.mgw import failures, log_level_name, mgw_badge, option_value, options_text

ATTRS = {"class": "table table-sm table-hover align-middle"}


def _short_error(value: str) -> Any:
    if not value:
        return "—"
    short = value if len(value) <= 60 else value[:59] + "…"
    return format_html('<span class="text-danger" title="{}">{}</span>', value, short)


class AgentTable(tables.Table):
    """MGW_GATEWAY's columns, one row per agent."""

    name = tables.Column(linkify=("gateway:agent", {"pk": tables.A("pk")}))
    status = tables.Column()
    ping = tables.Column(empty_values=(), orderable=False, verbose_name="Ping")
    start_time = tables.DateTimeColumn(format="Y-m-d H:i:s", verbose_name="Started")
    memory_mb = tables.Column(verbose_name="Memory MB")
    log_level = tables.Column(verbose_name="Log level")
    restart_required = tables.Column(verbose_name="Restart required", orderable=False)
    last_error_msg = tables.Column(verbose_name="Last error", orderable=False)
    last_error_at = tables.DateTimeColumn(format="Y-m-d H:i:s", verbose_name="Error at")
    link_count = tables.Column(verbose_name="Links")
    job_count = tables.Column(verbose_name="Jobs")
    options = tables.Column(empty_values=(), orderable=False, verbose_name="Options")

    class Meta:
        model = Agent
        fields = (
            "name",
            "status",
            "ping",
            "instance",
            "pid",
            "start_time",
            "memory_mb",
            "username",
            "max_memory",
            "max_threads",
            "log_level",
            "restart_required",
            "last_error_msg",
            "last_error_at",
            "link_count",
            "job_count",
            "options",
            "comment",
        )
        attrs = ATTRS
        row_attrs = {"data-agent": lambda record: record.name}
        empty_text = "No agents."

    def __init__(self, *args: Any, live: set[int] | None = None, **kwargs: Any) -> None:
        # The live agents are read once per page (pg_locks), not once per row.
        self.live = live if live is not None else set()
        super().__init__(*args, **kwargs)

    def render_status(self, value: str, record: Agent) -> Any:
        return mgw_badge(record.status)

    def render_ping(self, record: Agent) -> Any:
        return mgw_badge(agent_ping(record, live=self.live))

    def render_memory_mb(self, value: float) -> str:
        return f"{value:.0f}"

    def render_log_level(self, value: Any, record: Agent) -> str:
        return log_level_name(record.log_level)

    def render_restart_required(self, value: list[str]) -> Any:
        return (
            format_html('<span class="text-warning">{}</span>', ", ".join(value)) if value else "—"
        )

    def render_last_error_msg(self, value: str) -> Any:
        return _short_error(value)

    def render_options(self, record: Agent) -> str:
        return ", ".join(f"{o.name}={option_value(o)}" for o in record.options.all()) or "—"


class LinkTable(tables.Table):
    name = tables.Column(linkify=("gateway:link", {"pk": tables.A("pk")}))
    link_type = tables.Column(verbose_name="Type")
    agent = tables.Column(linkify=("gateway:agent", {"pk": tables.A("agent_id")}))
    address = tables.Column(empty_values=(), orderable=False, verbose_name="Host:port")
    outbound_log_queue = tables.Column(verbose_name="Outbound log queue")
    queue_count = tables.Column(verbose_name="Queues")
    job_count = tables.Column(verbose_name="Jobs")

    class Meta:
        model = Link
        fields = (
            "name",
            "link_type",
            "agent",
            "address",
            "max_connections",
            "outbound_log_queue",
            "queue_count",
            "job_count",
            "comment",
        )
        attrs = ATTRS
        row_attrs = {"data-link": lambda record: record.name}
        empty_text = "No links."

    def render_link_type(self, value: str, record: Link) -> str:
        return record.link_type

    def render_address(self, record: Link) -> str:
        props = record.properties or {}
        host = props.get("host") or props.get("url") or props.get("servers") or ""
        port = props.get("port")
        return f"{host}:{port}" if host and port else str(host or "—")


class ForeignQueueTable(tables.Table):
    address = tables.Column(
        empty_values=(),
        order_by=("name", "link__name"),
        verbose_name="Name@link",
        linkify=("gateway:link", {"pk": tables.A("link_id")}),
    )
    provider_queue = tables.Column(verbose_name="Provider name")
    link_type = tables.Column(accessor="link__link_type", verbose_name="Link type")
    options = tables.Column(orderable=False)
    jobs = tables.Column(empty_values=(), orderable=False, verbose_name="Jobs using it")
    unregister = ActionsColumn(RowAction("gateway:foreignqueue_delete", "Unregister", post=False))

    class Meta:
        model = ForeignQueue
        fields = ("address", "provider_queue", "domain", "link_type", "options", "jobs", "comment")
        attrs = ATTRS
        row_attrs = {"data-foreign-queue": lambda record: str(record)}
        empty_text = "No foreign queues registered."

    def render_address(self, record: ForeignQueue) -> str:
        return str(record)

    def render_options(self, value: dict[str, Any]) -> str:
        return options_text(value)

    def render_jobs(self, record: ForeignQueue) -> str:
        return ", ".join(foreign_queue_job_names(record)) or "—"


def foreign_queue_job_names(fq: ForeignQueue) -> list[str]:
    """The jobs using ``fq`` (source, destination or exception), from the prefetches of
    gateway.selectors.foreign_queue_list."""
    jobs = [*fq.jobs_in.all(), *fq.jobs_out.all(), *fq.jobs_exc.all()]
    return sorted({j.name for j in jobs})


class JobTable(tables.Table):
    """MGW_JOBS' columns."""

    name = tables.Column(linkify=("gateway:job", {"pk": tables.A("pk")}))
    source = tables.Column(empty_values=(), order_by=("source_queue__name", "source_foreign__name"))
    destination = tables.Column(
        empty_values=(), order_by=("destination_queue__name", "destination_foreign__name")
    )
    link = tables.Column(linkify=("gateway:link", {"pk": tables.A("link_id")}))
    agent = tables.Column(accessor="link__agent__name", verbose_name="Agent")
    status = tables.Column()
    propagated_msgs = tables.Column(verbose_name="Propagated")
    exceptionq_msgs = tables.Column(verbose_name="To exception q.")
    failures = tables.Column()
    last_error_msg = tables.Column(verbose_name="Last error", orderable=False)
    last_error_at = tables.DateTimeColumn(format="Y-m-d H:i:s", verbose_name="Error at")
    poll_interval = tables.Column(verbose_name="Poll s")
    options = tables.Column(orderable=False)

    class Meta:
        model = Job
        fields = (
            "name",
            "direction",
            "source",
            "destination",
            "link",
            "agent",
            "status",
            "enabled",
            "propagated_msgs",
            "exceptionq_msgs",
            "failures",
            "last_error_msg",
            "last_error_at",
            "poll_interval",
            "options",
        )
        attrs = ATTRS
        row_attrs = {"data-job": lambda record: record.name}
        empty_text = "No jobs."

    def render_direction(self, value: str, record: Job) -> str:
        return record.direction

    def render_source(self, record: Job) -> str:
        return record.source_name

    def render_destination(self, record: Job) -> str:
        return record.destination_name

    def render_status(self, value: str, record: Job) -> Any:
        return mgw_badge(record.status)

    def render_enabled(self, value: bool) -> str:
        return "yes" if value else "no"

    def render_failures(self, value: int) -> Any:
        text = failures(value)
        return (
            format_html('<span class="text-danger fw-semibold">{}</span>', text) if value else text
        )

    def render_last_error_msg(self, value: str) -> Any:
        return _short_error(value)

    def render_poll_interval(self, value: float | None) -> str:
        return f"{value:g}"

    def render_options(self, value: dict[str, Any]) -> str:
        return options_text(value)
