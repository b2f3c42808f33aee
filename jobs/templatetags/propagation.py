"""Template helpers for propagation pages: the state badge and short ages."""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from jobs.choices import ScheduleState
from jobs.selectors import state_colour

register = template.Library()


@register.filter
def state_badge(state: str | None) -> SafeString:
    """A Bootstrap badge coloured from STATE_COLOURS (one place for pages and the graph)."""
    state = state or ""
    try:
        label = ScheduleState(state).label
    except ValueError:
        label = state or "—"
    return badge(label, state_colour(state), "data-state", state)


def badge(label: str, colour: str, data_attribute: str, value: str) -> SafeString:
    """A Bootstrap badge of ``colour`` carrying ``data_attribute="value"`` for tests and scripts;
    dark text on the light colours."""
    text = " text-dark" if colour in ("light", "warning", "info") else ""
    return format_html(
        '<span class="badge text-bg-{}{}" {}="{}">{}</span>',
        colour,
        text,
        data_attribute,
        value,
        label,
    )


@register.filter
def age(moment: datetime | None) -> str:
    """How long ago ``moment`` was, short: 42 s, 3 min, 2.5 h, 4 d."""
    if moment is None:
        return "—"
    s = max((timezone.now() - moment).total_seconds(), 0)
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 172800:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.0f} d"


@register.filter
def num(value: float | None) -> str:
    """A number without trailing zeros: 1.5, 60, 0.25."""
    return "—" if value is None else f"{value:g}"
