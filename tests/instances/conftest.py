from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _roles(role_groups, fast_passwords) -> None:
    """Role groups present, cheap password hashing (the API and page tests here)."""
