"""The gateway's API lists issue the same number of SQL queries for 3 rows or 30."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.gateway.pages.test_gateway_list_pages_cost_the_same_whatever_their_size import _grow


def _count(client, path: str) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path)
    assert response.status_code == 200, response.content
    return len(ctx.captured_queries), len(response.json()["results"])


@pytest.mark.parametrize("path", ["agents", "links", "foreign-queues", "jobs"])
def test_a_list_costs_the_same_for_more_rows(monitor_api, admin_user, default_agent, path):
    _grow(admin_user, 0, 3)
    small, _ = _count(monitor_api, f"/api/gateway/{path}/?limit=3")
    _grow(admin_user, 3, 30)
    large, rows = _count(monitor_api, f"/api/gateway/{path}/?limit=30")
    assert rows == 30 and large == small
