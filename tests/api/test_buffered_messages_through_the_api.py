"""Buffered messages through the REST API: enqueue and dequeue with delivery_mode, the mode in the
answer, flow control as a 409 naming the field, and V$BUFFERED_QUEUES under /api/status/."""

from __future__ import annotations

import pytest

from tests.queues.helpers import make_queue

pytestmark = pytest.mark.django_db(transaction=True)


def test_buffered_round_trip_and_its_status_view(admin_user, admin_api, settings):
    settings.AQ_BUFFER_FLOW_CONTROL_MSGS = 2
    settings.AQ_BUFFER_FLOW_CONTROL_RECHECK_S = 0
    q = make_queue(admin_user, "BAPI")
    url = f"/api/queues/{q.pk}/"
    r = admin_api.post(url + "enqueue/", {"payload": {"a": 1}}, format="json")
    assert r.status_code == 201
    r = admin_api.post(
        url + "enqueue/",
        {"messages": [{"payload": 1}, {"payload": 2}], "delivery_mode": "BUFFERED"},
        format="json",
    )
    assert r.status_code == 201, r.content
    r = admin_api.post(url + "enqueue/", {"payload": 3, "delivery_mode": "BUFFERED"}, format="json")
    assert r.status_code == 409, r.content
    assert r.json()["delivery_mode"][0].startswith("ORA-25307: Enqueue rate too high")
    r = admin_api.post(
        url + "enqueue/",
        {"payload": 3, "delivery_mode": "BUFFERED", "visibility": "ON_COMMIT"},
        format="json",
    )
    assert r.status_code == 400 and "visibility" in str(r.json())

    # The message list filters by delivery mode (an unknown mode is refused, naming the filter).
    r = admin_api.get(url + "messages/", {"delivery_mode": "BUFFERED"})
    assert r.status_code == 200, r.content
    rows = r.json()["results"] if isinstance(r.json(), dict) else r.json()
    assert sorted(m["payload"] for m in rows) == [1, 2]
    r = admin_api.get(url + "messages/", {"delivery_mode": "PERSISTENT"})
    rows = r.json()["results"] if isinstance(r.json(), dict) else r.json()
    assert [m["payload"] for m in rows] == [{"a": 1}]
    r = admin_api.get(url + "messages/", {"delivery_mode": "FAST"})
    assert r.status_code == 400 and "delivery_mode" in r.json()

    r = admin_api.get("/api/status/v_buffered_queues/")
    assert r.status_code == 200
    rows = r.json()["results"] if isinstance(r.json(), dict) else r.json()
    assert [(x["queue_name"], x["num_msgs"], x["cnum_msgs"]) for x in rows] == [("BAPI", 2, 2)]

    r = admin_api.post(url + "dequeue/", {"delivery_mode": "BUFFERED", "batch": 5}, format="json")
    assert r.status_code == 200
    got = r.json()["messages"]
    assert [(m["payload"], m["delivery_mode"], m["buffered_state"]) for m in got] == [
        (1, "BUFFERED", "IN MEMORY"),
        (2, "BUFFERED", "IN MEMORY"),
    ]
    r = admin_api.post(url + "dequeue/", {"delivery_mode": "PERSISTENT"}, format="json")
    assert [m["payload"] for m in r.json()["messages"]] == [{"a": 1}]
    r = admin_api.post(
        url + "dequeue/", {"mode": "LOCKED", "delivery_mode": "BUFFERED"}, format="json"
    )
    assert r.status_code == 400 and "delivery_mode" in str(r.json())
