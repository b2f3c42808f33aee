"""Odd paging, sorting and filter parameters on list pages never give a 500."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "path",
    [
        "/queues/?sort=no_such_column",
        "/queues/?sort=-depth_ready",
        "/queues/?page=999",
        "/queues/?page=abc",
        "/queues/?per_page=-5",
        "/queues/?queue_table=abc",
        "/queues/?kind=WEIRD",
        "/queues/?enqueue_enabled=perhaps",
        "/queues/tables/?sort_order=random",
        "/changelog/?since=not-a-date",
        "/changelog/?action=explode",
        "/queues/status/?view=dba_nothing",
        "/queues/{queue}/?state=GONE",
        "/queues/{queue}/?page=999",
    ],
)
def test_a_list_page_survives_odd_parameters(monitor_client, queue, path):
    response = monitor_client.get(path.format(queue=queue.pk))

    assert response.status_code in (200, 400, 404)


@pytest.mark.parametrize(
    "path",
    [
        "/queues/?per_page=0",
        "/queues/?per_page=-5",
        "/queues/tables/?per_page=-1",
        "/changelog/?per_page=-1",
        "/queues/status/?per_page=-1",
        "/queues/{queue}/?per_page=-1",
        "/queues/tables/{table}/?per_page=-1",
    ],
)
def test_a_page_size_below_one_shows_a_page(monitor_client, queue, path):
    response = monitor_client.get(path.format(queue=queue.pk, table=queue.queue_table_id))

    assert response.status_code == 200
