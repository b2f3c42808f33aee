"""Monitoring settings that cannot work (an allow-list entry that is no address, rate tiers that
cannot roll up) are named by Django's system checks, at start-up."""

from __future__ import annotations

import pytest
from django.core.checks import run_checks


def test_a_malformed_allow_list_entry_is_named_by_the_checks(settings):
    settings.AQ_METRICS_ALLOW = ["127.0.0.1", "10.0.0.0/33"]

    errors = [e for e in run_checks() if e.id == "monitoring.E001"]

    assert [e.msg for e in errors] == [
        "AQ_METRICS_ALLOW: '10.0.0.0/33' is not an address or network (CIDR)."
    ]


@pytest.mark.parametrize(
    ("interval", "tiers", "says"),
    [
        (7, ((7, 600), (60, 3600), (600, 86400)), "(60, 3600) must be a multiple of (7, 600)"),
        (5, ((10, 600), (60, 3600), (600, 86400)), "the finest tier's resolution must be"),
        (5, ((5, 600), (60, 3600)), "TIERS needs 3 tiers"),
        (5, ((5, 600), (60, 300), (600, 86400)), "(60, 300) must be a multiple of (5, 600)"),
    ],
)
def test_rate_tiers_that_cannot_roll_up_are_named_by_the_checks(settings, interval, tiers, says):
    settings.AQ_RATES = {"INTERVAL_S": interval, "TIERS": tiers}

    errors = [e.msg for e in run_checks() if e.id == "monitoring.E002"]

    assert len(errors) == 1 and says in errors[0], errors


def test_the_default_settings_pass_the_checks():
    assert not [e for e in run_checks() if e.id.startswith("monitoring.")]
