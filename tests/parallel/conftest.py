from __future__ import annotations

import pytest

from instances.services import instance_heartbeat


@pytest.fixture(autouse=True)
def _roles(role_groups, fast_passwords) -> None:
    """Role groups present, cheap password hashing (the API and page tests here)."""


def up(name: str) -> int:
    """An instance UP through a heartbeat of one of its workers, as a real worker sends."""
    return instance_heartbeat(name=name, host=f"host-{name}", worker=f"w@{name}")


def down(name: str) -> None:
    instance_heartbeat(name=name, host=f"host-{name}", worker=f"w@{name}", stopping=True)


@pytest.fixture
def three_instances(db) -> list[int]:
    """S003's 3-node RAC: instances n1, n2, n3, all up."""
    return [up("n1"), up("n2"), up("n3")]
