"""The sites suite: the private second PostgreSQL (``site``, tests/conftest.py), role groups and
cheap password hashing for every test."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _sites_setup(role_groups, fast_passwords) -> None:
    """Role groups present, cheap password hashing: for every test here."""


@pytest.fixture
def make_link(admin_user, site):  # type: ignore[no-untyped-def]
    """A link to site_b made through the service (as alice): ``make_link("SITE_B", **fields)``."""
    from sites import services

    def make(name: str = "SITE_B", **overrides: object):  # type: ignore[no-untyped-def]
        return services.database_link_create(
            user=admin_user, name=name, **site.link_fields(**overrides)
        )

    return make
