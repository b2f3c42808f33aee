"""The gateway pages tests: clients per role (tests/conftest.py) and a small gateway
(tests/gateway/conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _gateway_pages_setup(role_groups, fast_passwords) -> None:
    """Role groups present, cheap password hashing: for every test here."""
