"""Fixtures of the definitions tests: the demo topology, exported."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from definitions.selectors import definitions_export
from sites import services as site_services


def load_demo() -> None:
    """The README's demo (its gateway included), plus a database link: to this very database,
    a site like any other, so that the sites part is in the document too."""
    call_command("demo_topology", "--without-second-site", stdout=StringIO())
    cfg = connection.settings_dict
    site_services.database_link_create(
        user=None,
        name="SELF_SITE",
        host=cfg["HOST"] or "127.0.0.1",
        port=int(cfg["PORT"] or 5432),
        database=cfg["NAME"],
        username=cfg["USER"] or "postgres",
        password="not-needed-with-trust",
        comment="Definitions test: a link to this database.",
    )


@pytest.fixture
def demo_document(db) -> dict[str, Any]:
    load_demo()
    return definitions_export()


@pytest.fixture(autouse=True)
def _suite(fast_passwords, role_groups) -> None:
    """Cheap password hashing and the role groups, as the API and page suites have them."""
