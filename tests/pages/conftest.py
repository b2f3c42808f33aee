"""Page fixtures: session-logged-in clients per role; the topologies are the API suite's."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.api.conftest import (  # noqa: F401  (fixtures shared with the API suite)
    _fast_passwords,
    _role_groups,
    enqueue_some,
    expired_message,
    multi_queue,
    roleless_user,
    snapshot,
    topology,
    typed_queue,
)


def _logged_in(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def admin_client(admin_user) -> Client:
    return _logged_in(admin_user)


@pytest.fixture
def operator_client(operator_user) -> Client:
    return _logged_in(operator_user)


@pytest.fixture
def monitor_client(monitor_user) -> Client:
    return _logged_in(monitor_user)
