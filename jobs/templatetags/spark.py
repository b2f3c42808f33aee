"""Template helpers for Spark job pages: the state badge, the progress bar and durations."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from jobs.choices import SPARK_STATE_COLOURS, SparkJobState
from jobs.templatetags.propagation import badge

register = template.Library()


@register.filter
def spark_state_badge(state: str | None) -> SafeString:
    """A Bootstrap badge coloured from SPARK_STATE_COLOURS."""
    state = state or ""
    try:
        label = SparkJobState(state).label
    except ValueError:
        label = state or "—"
    return badge(label, SPARK_STATE_COLOURS.get(state, "secondary"), "data-spark-state", state)


@register.filter
def spark_progress(job: Any) -> SafeString:
    """Spark tasks done of total as a bar (empty until the driver reports its stages)."""
    done, total = job.tasks_done or 0, job.tasks_total or 0
    pct = min(100, round(100 * done / total)) if total else 0
    colour = SPARK_STATE_COLOURS.get(job.state, "secondary")
    return format_html(
        '<div class="progress" style="min-width: 7rem; height: 1.1rem;" role="progressbar" '
        'aria-valuenow="{}" aria-valuemin="0" aria-valuemax="100" data-progress="{}/{}">'
        '<div class="progress-bar bg-{}" style="width: {}%">{}</div></div>',
        pct,
        done,
        total,
        colour,
        pct,
        f"{done}/{total}" if total else "",
    )


@register.filter
def seconds(value: float | None) -> str:
    """A duration, short: 4.2 s, 3.5 min, 2.1 h."""
    if value is None:
        return "—"
    if value < 120:
        return f"{value:.1f} s"
    if value < 7200:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.1f} h"


@register.filter
def get_key(mapping: dict[str, Any] | None, key: str) -> Any:
    """``mapping[key]``, 0 when missing (a part that wrote nothing to a destination)."""
    return (mapping or {}).get(key, 0)


@register.filter
def since_iso(value: str | None) -> str:
    """The time since an ISO timestamp (a phase's start in SparkJob.phase_at), short."""
    from datetime import datetime

    from django.utils import timezone

    try:
        at = datetime.fromisoformat(str(value))
    except ValueError:
        return "—"
    return seconds(max(0.0, (timezone.now() - at).total_seconds()))
