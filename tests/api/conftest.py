"""The API suite: token clients per role and the topologies come from tests/conftest.py."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _api_setup(role_groups, fast_passwords) -> None:
    """Role groups present, cheap password hashing: for every test here."""
