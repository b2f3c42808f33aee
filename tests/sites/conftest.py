"""The sites suite: one private second PostgreSQL per session (tests/sites/helpers.py), role
groups and cheap password hashing for every test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.sites.helpers import SiteServer, site_server

pytest.importorskip("pgserver")


@pytest.fixture(scope="session")
def site() -> Iterator[SiteServer]:
    with site_server() as server:
        yield server


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
