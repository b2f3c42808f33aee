"""The propagation tests run windows with short slices (tests/conftest.py ``fast_windows``); the
topology fixtures (``mc_table``, ``sc_table``, ``make_queue``, ``rule_set``) are shared there."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _fast_windows(fast_windows) -> None:
    """Every propagation test here returns soon after its source goes idle."""
