"""A number filter takes at most 18 digits: ``?priority=1e1000000`` made Django build the whole
integer (about a minute of one thread per request). Past that it is a 400 naming the filter,
on a queue's messages and on the list of every message; the queue page leaves it out."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("value", ["1e1000000", "-1e19", "1e-1000000"])
@pytest.mark.parametrize("url", ["/api/queues/ORDERS/messages/", "/api/messages/"])
def test_a_number_filter_past_eighteen_digits_is_a_400_naming_it(admin_api, queue, url, value):
    response = admin_api.get(url, {"priority": value})

    assert response.status_code == 400, response.content
    assert "priority" in response.json(), response.json()


def test_a_number_filter_within_range_still_filters(admin_api, queue):
    enqueued = admin_api.post(
        "/api/queues/ORDERS/enqueue/", {"payload": {"n": 1}, "priority": 3}, format="json"
    )
    assert enqueued.status_code == 201, enqueued.content

    assert admin_api.get("/api/queues/ORDERS/messages/", {"priority": "3"}).json()["count"] == 1
    assert admin_api.get("/api/queues/ORDERS/messages/", {"priority": "4"}).json()["count"] == 0
    assert admin_api.get("/api/queues/ORDERS/messages/", {"priority": "1e18"}).json()["count"] == 0


def test_the_queue_page_leaves_such_a_filter_out(admin_client, queue):
    response = admin_client.get(f"/queues/{queue.pk}/", {"priority": "1e1000000"})

    assert response.status_code == 200
