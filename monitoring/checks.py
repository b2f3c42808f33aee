"""System checks of the monitoring settings: a bad value is named at start-up, not found by a
scrape or a sampler pass."""

from __future__ import annotations

import ipaddress
import itertools
from collections.abc import Iterable

from django.conf import settings
from django.core.checks import Error, register

from monitoring.choices import RANGE_TIER


@register()
def check_allow_list(app_configs: Iterable[object] | None = None, **kwargs: object) -> list[Error]:
    """A malformed AQ_METRICS_ALLOW entry is named at start-up, not found by a scrape."""
    errors = []
    for entry in settings.AQ_METRICS_ALLOW:
        try:
            ipaddress.ip_network(entry.strip(), strict=False)
        except ValueError:
            errors.append(
                Error(
                    f"AQ_METRICS_ALLOW: {entry!r} is not an address or network (CIDR).",
                    id="monitoring.E001",
                )
            )
    return errors


@register()
def check_rate_tiers(app_configs: Iterable[object] | None = None, **kwargs: object) -> list[Error]:
    """AQ_RATES: one tier per range, the finest the sampling interval, each coarser tier a
    multiple of the one before (a bucket rolls up whole into the next) and kept longer."""
    interval = settings.AQ_RATES["INTERVAL_S"]
    tiers = list(settings.AQ_RATES["TIERS"])
    problems = []
    if len(tiers) != len(RANGE_TIER):
        problems.append(f"TIERS needs {len(RANGE_TIER)} tiers (one per range), not {len(tiers)}.")
    elif interval <= 0 or tiers[0][0] != interval:
        problems.append(f"the finest tier's resolution must be INTERVAL_S ({interval}), > 0.")
    else:
        for (res, keep), (coarser, coarser_keep) in itertools.pairwise(tiers):
            if coarser % res or coarser <= res or coarser_keep <= keep or keep < res:
                problems.append(
                    f"tier ({coarser}, {coarser_keep}) must be a multiple of ({res}, {keep})'s "
                    "resolution, coarser, and kept longer."
                )
    return [Error(f"AQ_RATES: {p}", id="monitoring.E002") for p in problems]
