"""The gateway's constants and settings, read by the agent process, the services and the
selectors alike. Imports nothing of the app, so any module of it can import this one."""

from __future__ import annotations

from typing import Any

from django.conf import settings

# The agents' advisory-lock namespace (two-int key form, "MG"): the agent process holds
# pg_advisory_lock(LOCK_NS, agent id) for as long as it lives (migration 0003's MGW_GATEWAY
# view reads it too).
LOCK_NS = 0x4D47


def config() -> dict[str, Any]:
    """settings.MGW: the agent's timings, back-off and limits."""
    return settings.MGW
