"""Odd paging, ordering and filter parameters on API lists are a 4xx or ignored, never a 500."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/queues/?kind=WEIRD", "kind"),
        ("/api/queues/?queue_table=abc", "queue_table"),
        ("/api/queue-tables/?sort_order=random", "sort_order"),
        ("/api/messages/?state=GONE", "state"),
        ("/api/changelog/?since=not-a-date", "since"),
    ],
)
def test_a_bad_filter_is_a_400_naming_it(monitor_api, queue, path, field):
    response = monitor_api.get(path)

    assert response.status_code == 400
    assert field in response.json()


@pytest.mark.parametrize(
    "path",
    [
        "/api/queues/?ordering=no_such_field",
        "/api/queues/?limit=abc",
        "/api/queues/?offset=-1",
        "/api/queues/?limit=100000",
    ],
)
def test_odd_paging_and_ordering_are_ignored(monitor_api, queue, path):
    response = monitor_api.get(path)

    assert response.status_code == 200
    assert {r["name"] for r in response.json()["results"]} == {"ORDERS", "AQ$_QT_ORDERS_E"}
