"""Template helpers of the gateway pages: one badge for agent, ping and job states (colours from
gateway.choices.BADGE), log level names, and the masked value of an option."""

from __future__ import annotations

from typing import Any

from django import template
from django.conf import settings
from django.utils.safestring import SafeString, mark_safe

from core import crypto
from gateway.choices import BADGE, AgentPing, AgentStatus, JobStatus, LogLevel
from jobs.templatetags.propagation import badge

register = template.Library()

_LABELS: dict[str, str] = {
    **dict(AgentStatus.choices),
    **dict(JobStatus.choices),
    **dict(AgentPing.choices),
}


@register.filter
def mgw_badge(value: str | None) -> SafeString:
    """A badge for an AgentStatus, JobStatus or AgentPing value; ``—`` for none (no ping)."""
    if not value:
        return mark_safe('<span class="text-muted" data-mgw="">—</span>')
    return badge(value, BADGE.get(value, "secondary"), "data-mgw", value)


@register.filter
def log_level_name(value: int | None) -> str:
    try:
        return LogLevel(value).label
    except ValueError:
        return str(value)


@register.filter
def option_value(option: Any) -> str:
    """An AgentOption's value as pages show it: the mask when encrypted, never the token."""
    return crypto.MASK if option.encrypted else option.value


@register.filter
def failures(value: int) -> str:
    """Job failures against MGW's limit: ``3/16``."""
    return f"{value}/{settings.MGW['MAX_FAILURES']}"


@register.filter
def options_text(options: dict[str, Any] | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted((options or {}).items())) or "—"
