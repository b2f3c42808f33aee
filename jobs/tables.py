"""Tables of the jobs pages. Every column reads what jobs.selectors already fetched (select_related
and annotations), so a page costs the same number of queries whatever its size."""

from __future__ import annotations

from typing import Any

import django_tables2 as tables
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from jobs.choices import SPARK_ACTIVE_STATES
from jobs.models import Propagation, PropagationRun, SparkJob
from jobs.templatetags.propagation import age, state_badge
from jobs.templatetags.spark import seconds, since_iso, spark_progress, spark_state_badge

ATTRS = {"class": "table table-sm table-hover align-middle"}


class PropagationTable(tables.Table):
    name = tables.Column(linkify=True)
    route = tables.TemplateColumn(
        '<a href="{{ record.source_queue.get_absolute_url }}">{{ record.source_queue.name }}</a>'
        " → "
        "{% if record.destination_queue %}"
        '<a href="{{ record.destination_queue.get_absolute_url }}">'
        "{{ record.destination_queue.name }}</a>"
        "{% else %}{{ record.destination }}{% endif %}",
        verbose_name="Source → destination",
        order_by=("source_queue__name", "destination_queue__name"),
    )
    rule_sets = tables.TemplateColumn(
        "{% if record.positive_rule_set %}+"
        '<a href="{{ record.positive_rule_set.get_absolute_url }}">'
        "{{ record.positive_rule_set.name }}</a>{% endif %}"
        "{% if record.negative_rule_set %} &minus;"
        '<a href="{{ record.negative_rule_set.get_absolute_url }}">'
        "{{ record.negative_rule_set.name }}</a>{% endif %}"
        "{% if not record.positive_rule_set and not record.negative_rule_set %}"
        '<span class="text-muted">all messages</span>{% endif %}',
        verbose_name="Rule sets",
        order_by=("positive_rule_set__name", "negative_rule_set__name"),
    )
    state = tables.Column()
    backlog = tables.Column(verbose_name="Backlog")
    oldest_backlog = tables.Column(verbose_name="Oldest")
    rate = tables.Column(verbose_name="Msg/s")
    failures = tables.Column(accessor="schedule__failures", verbose_name="Failures")
    last_error = tables.Column(
        accessor="schedule__last_error_msg", verbose_name="Last error", orderable=False
    )
    next_run = tables.DateTimeColumn(
        accessor="schedule__next_run_at", verbose_name="Next run", format="Y-m-d H:i:s"
    )

    class Meta:
        model = Propagation
        fields = (
            "name",
            "route",
            "rule_sets",
            "state",
            "backlog",
            "oldest_backlog",
            "rate",
            "failures",
            "last_error",
            "next_run",
        )
        attrs = ATTRS
        row_attrs = {"data-propagation": lambda record: record.name}
        empty_text = "No propagations."

    def render_state(self, value: str) -> Any:
        return state_badge(value)

    def render_oldest_backlog(self, value: Any) -> Any:
        return format_html('<span title="{}">{}</span>', value.isoformat(), age(value))

    def render_rate(self, value: float) -> str:
        return f"{value:.1f}"

    def render_failures(self, value: int) -> Any:
        return format_html('<span class="text-danger fw-semibold">{}</span>', value) if value else 0

    def render_last_error(self, value: str) -> Any:
        if not value:
            return "—"
        short = value if len(value) <= 60 else value[:59] + "…"
        return format_html('<span class="text-danger" title="{}">{}</span>', value, short)


class PropagationRunTable(tables.Table):
    id = tables.Column(verbose_name="Run")
    propagation = tables.Column(linkify=True)
    state = tables.TemplateColumn(
        "{% with s=record.state %}"
        '<span class="badge text-bg-{% if s == "FAILED" or s == "LOST" %}danger'
        '{% elif s == "RUNNING" %}success{% elif s == "QUEUED" %}info text-dark'
        '{% else %}secondary{% endif %}" data-run-state="{{ s }}">{{ value }}</span>{% endwith %}'
    )
    end_reason = tables.Column(verbose_name="Ended because")
    queued_at = tables.DateTimeColumn(format="Y-m-d H:i:s", verbose_name="Queued")
    started_at = tables.DateTimeColumn(format="Y-m-d H:i:s", verbose_name="Started")
    heartbeat_at = tables.DateTimeColumn(format="H:i:s", verbose_name="Heartbeat")
    ended_at = tables.DateTimeColumn(format="Y-m-d H:i:s", verbose_name="Ended")
    elapsed = tables.Column(orderable=False, verbose_name="Elapsed s")
    error = tables.Column(orderable=False)

    class Meta:
        model = PropagationRun
        fields = (
            "id",
            "propagation",
            "state",
            "end_reason",
            "worker",
            "pid",
            "session_id",
            "queued_at",
            "started_at",
            "heartbeat_at",
            "ended_at",
            "elapsed",
            "batches",
            "messages",
            "propagated",
            "discarded",
            "exceptions",
            "error",
        )
        attrs = ATTRS
        empty_text = "No runs."

    def render_elapsed(self, value: float) -> str:
        return f"{value:.1f}"

    def render_error(self, value: str) -> Any:
        short = value if len(value) <= 80 else value[:79] + "…"
        return format_html('<span class="text-danger" title="{}">{}</span>', value, short)


def _maybe_link(obj: Any, name: str) -> Any:
    """A link to a queue that still exists; its name alone once it was dropped."""
    if obj is None:
        return format_html('{} <span class="text-muted">(dropped)</span>', name)
    return format_html('<a href="{}">{}</a>', obj.get_absolute_url(), name)


def _spark_job_url(record: SparkJob) -> str:
    return reverse("spark:job", args=[record.pk])


class SparkJobTable(tables.Table):
    """Spark jobs from selectors.spark_job_list (counters annotated, destinations prefetched)."""

    id = tables.Column(verbose_name="Job", linkify=_spark_job_url)
    name = tables.Column(linkify=_spark_job_url)
    source_queue = tables.Column(
        verbose_name="Source", accessor="source_name", order_by=("source_name",)
    )
    destinations = tables.Column(empty_values=(), orderable=False, verbose_name="Destinations")
    mode = tables.Column()
    state = tables.Column()
    # Where a running job is (QUEUED … WRITING) before Spark has tasks to count; the table
    # polls itself, so it moves with the job.
    phase = tables.Column()
    progress = tables.Column(
        empty_values=(), verbose_name="Progress", order_by=("tasks_done", "tasks_total")
    )
    read = tables.Column(verbose_name="Read")
    propagated_total = tables.Column(verbose_name="Propagated")
    exceptions = tables.Column(verbose_name="Exceptions")
    duration = tables.Column(empty_values=(), orderable=False, verbose_name="Duration")
    submitted = tables.Column(empty_values=(), verbose_name="Submitted", order_by=("submitted_at",))

    class Meta:
        model = SparkJob
        fields = (
            "id",
            "name",
            "source_queue",
            "destinations",
            "mode",
            "state",
            "phase",
            "progress",
            "read",
            "propagated_total",
            "exceptions",
            "duration",
            "submitted",
        )
        attrs = ATTRS
        row_attrs = {"data-spark-job": lambda record: record.pk}
        empty_text = "No Spark jobs."

    def render_destinations(self, record: SparkJob) -> Any:
        return format_html_join(
            ", ",
            "{}{}",
            (
                (
                    _maybe_link(d.queue, d.queue_name),
                    format_html(' <span class="text-muted">via {}</span>', d.propagation_name)
                    if d.propagation_name
                    else "",
                )
                for d in record.destinations.all()
            ),
        )

    def render_source_queue(self, record: SparkJob) -> Any:
        return _maybe_link(record.source_queue, record.source_name)

    def render_mode(self, record: SparkJob) -> Any:
        badge = (
            mark_safe(' <span class="badge text-bg-info text-dark" data-dry-run>dry run</span>')
            if record.dry_run
            else ""
        )
        return format_html("{}{}", record.mode, badge)

    def render_state(self, record: SparkJob) -> Any:
        return spark_state_badge(record.state)  # ``value`` would be the label

    def render_phase(self, record: SparkJob) -> Any:
        since = (
            (record.phase_at or {}).get(record.phase)
            if record.state in SPARK_ACTIVE_STATES
            else None
        )
        return format_html(
            '<span data-spark-phase="{}">{}</span>{}',
            record.phase,
            record.get_phase_display(),
            format_html(' <span class="text-muted">(for {})</span>', since_iso(since))
            if since
            else "",
        )

    def render_progress(self, record: SparkJob) -> Any:
        return spark_progress(record)

    def render_exceptions(self, value: int) -> Any:
        return format_html('<span class="text-danger fw-semibold">{}</span>', value) if value else 0

    def render_duration(self, record: SparkJob) -> str:
        return seconds(record.duration)

    def render_submitted(self, record: SparkJob) -> Any:
        return format_html(
            '{} <span class="text-muted" title="{}">{} ago</span>',
            record.submitted_by or "—",
            record.submitted_at.isoformat(),
            age(record.submitted_at),
        )
