"""Applications enqueue, dequeue, lock, acknowledge and release through the API."""

from __future__ import annotations

from queues.models import Message


def _payloads(response) -> list:  # type: ignore[no-untyped-def]
    assert response.status_code == 200, response.content
    return [m["payload"] for m in response.json()["messages"]]


def test_it_enqueues_one_message_with_its_properties(operator_api, queue):
    response = operator_api.post(
        "/api/queues/ORDERS/enqueue/",
        {
            "payload": {"order": 1},
            "priority": 3,
            "correlation": "c-1",
            "headers": {"trace": "t1"},
            "type_name": "ORDER",
        },
        format="json",
    )

    assert response.status_code == 201, response.content
    [mid] = response.json()["ids"]
    msg = Message.objects.get(pk=mid)
    assert (msg.payload, msg.priority, msg.correlation, msg.headers, msg.type_name) == (
        {"order": 1},
        3,
        "c-1",
        {"trace": "t1"},
        "ORDER",
    )
    assert (msg.state, msg.enq_user) == ("READY", "oscar")


def test_it_enqueues_a_batch_in_order(operator_api, queue):
    response = operator_api.post(
        "/api/queues/ORDERS/enqueue/",
        {"messages": [{"payload": i} for i in range(5)]},
        format="json",
    )

    assert response.status_code == 201, response.content
    ids = response.json()["ids"]
    assert len(ids) == 5 and ids == sorted(ids)
    assert [Message.objects.get(pk=i).payload for i in ids] == [0, 1, 2, 3, 4]


def test_a_typed_queue_takes_a_payload_matching_its_schema(operator_api, typed_queue):
    response = operator_api.post(
        "/api/queues/TYPED_ORDERS/enqueue/",
        {"payload": {"order_id": 1, "items": [{"sku": "A", "qty": 1}]}, "type_name": "ORDER"},
        format="json",
    )

    assert response.status_code == 201, response.content


def test_a_delayed_message_waits(operator_api, queue):
    operator_api.post("/api/queues/ORDERS/enqueue/", {"payload": 1, "delay": 3600}, format="json")

    assert Message.objects.get().state == "WAITING"
    assert _payloads(operator_api.post("/api/queues/ORDERS/dequeue/", {}, format="json")) == []


def test_remove_dequeue_returns_and_deletes_in_order(operator_api, queue, enqueue_some):
    enqueue_some(queue, "a", "b", "c")

    first = _payloads(operator_api.post("/api/queues/ORDERS/dequeue/", {}, format="json"))
    rest = _payloads(operator_api.post("/api/queues/ORDERS/dequeue/", {"batch": 5}, format="json"))

    assert (first, rest) == (["a"], ["b", "c"])
    assert not Message.objects.exists()


def test_dequeue_by_correlation(operator_api, queue, enqueue_some):
    enqueue_some(queue, "x", correlation="other")
    enqueue_some(queue, "y", correlation="mine")

    got = operator_api.post("/api/queues/ORDERS/dequeue/", {"correlation": "mine"}, format="json")

    assert _payloads(got) == ["y"]


def test_an_empty_queue_answers_with_no_messages(operator_api, queue):
    response = operator_api.post("/api/queues/ORDERS/dequeue/", {}, format="json")

    assert response.json() == {"messages": [], "cursor": None}


def test_a_locked_message_is_hidden_until_acknowledged(operator_api, queue, enqueue_some):
    enqueue_some(queue, "a", "b")

    locked = operator_api.post("/api/queues/ORDERS/dequeue/", {"mode": "LOCKED"}, format="json")
    [msg] = locked.json()["messages"]
    others = _payloads(
        operator_api.post("/api/queues/ORDERS/dequeue/", {"batch": 5}, format="json")
    )
    ack = operator_api.post(
        "/api/queues/ORDERS/ack/",
        {"msgid": msg["id"], "lock_token": msg["lock_token"]},
        format="json",
    )

    assert (msg["payload"], others) == ("a", ["b"])
    assert ack.status_code == 200, ack.content
    assert ack.json()["id"] == msg["id"]
    assert not Message.objects.exists()


def test_a_release_without_failure_gives_the_message_back_untouched(
    operator_api, queue, enqueue_some
):
    enqueue_some(queue, "a")
    [msg] = operator_api.post(
        "/api/queues/ORDERS/dequeue/", {"mode": "LOCKED"}, format="json"
    ).json()["messages"]

    response = operator_api.post(
        "/api/queues/ORDERS/release/",
        {"msgid": msg["id"], "lock_token": msg["lock_token"], "failed": False},
        format="json",
    )

    assert response.status_code == 204
    row = Message.objects.get(pk=msg["id"])
    assert (row.state, row.attempts, row.lock_token) == ("READY", 0, None)


def test_a_failed_release_counts_an_attempt(operator_api, queue, enqueue_some):
    enqueue_some(queue, "a")
    [msg] = operator_api.post(
        "/api/queues/ORDERS/dequeue/", {"mode": "LOCKED"}, format="json"
    ).json()["messages"]

    operator_api.post(
        "/api/queues/ORDERS/release/",
        {"msgid": msg["id"], "lock_token": msg["lock_token"]},
        format="json",
    )

    assert Message.objects.get(pk=msg["id"]).attempts == 1


def test_browse_pages_with_a_cursor_and_next_message(monitor_api, queue, enqueue_some):
    enqueue_some(queue, 1, 2, 3, 4, 5)
    url = "/api/queues/ORDERS/dequeue/"

    first = monitor_api.post(url, {"mode": "BROWSE", "batch": 2}, format="json").json()
    second = monitor_api.post(
        url,
        {"mode": "BROWSE", "batch": 2, "navigation": "NEXT_MESSAGE", "cursor": first["cursor"]},
        format="json",
    ).json()
    third = monitor_api.post(
        url,
        {"mode": "BROWSE", "batch": 2, "navigation": "NEXT_MESSAGE", "cursor": second["cursor"]},
        format="json",
    ).json()
    past_the_end = monitor_api.post(
        url,
        {"mode": "BROWSE", "batch": 2, "navigation": "NEXT_MESSAGE", "cursor": third["cursor"]},
        format="json",
    ).json()

    assert [[m["payload"] for m in p["messages"]] for p in (first, second, third)] == [
        [1, 2],
        [3, 4],
        [5],
    ]
    assert past_the_end == {"messages": [], "cursor": third["cursor"]}
    assert first["cursor"] == first["messages"][-1]["cursor"]
    assert Message.objects.filter(state="READY").count() == 5


def test_two_browses_return_the_same_sequence(monitor_api, queue, enqueue_some):
    enqueue_some(queue, *range(6))
    body = {"mode": "BROWSE", "batch": 10}

    once = _payloads(monitor_api.post("/api/queues/ORDERS/dequeue/", body, format="json"))
    twice = _payloads(monitor_api.post("/api/queues/ORDERS/dequeue/", body, format="json"))

    assert once == twice == list(range(6))


def test_a_priority_queue_table_dequeues_by_priority(admin_api, admin_user):
    admin_api.post("/api/queue-tables/", {"name": "QT_P", "sort_order": "priority"})
    admin_api.post("/api/queues/", {"name": "P", "queue_table": "QT_P"})
    enq = admin_api.post(
        "/api/queues/P/enqueue/",
        {"messages": [{"payload": "low", "priority": 9}, {"payload": "high", "priority": 1}]},
        format="json",
    )
    assert enq.status_code == 201, enq.content

    got = admin_api.post("/api/queues/P/dequeue/", {"mode": "BROWSE", "batch": 5}, format="json")

    assert _payloads(got) == ["high", "low"]


def test_each_subscriber_dequeues_each_message_once(operator_api, multi_queue):
    operator_api.post(
        "/api/queues/EVENTS/enqueue/", {"messages": [{"payload": 1}, {"payload": 2}]}, format="json"
    )
    url = "/api/queues/EVENTS/dequeue/"

    billing = _payloads(operator_api.post(url, {"consumer_name": "BILLING", "batch": 5}))
    billing_again = _payloads(operator_api.post(url, {"consumer_name": "BILLING", "batch": 5}))
    shipping = _payloads(operator_api.post(url, {"consumer_name": "shipping", "batch": 5}))

    assert (billing, billing_again, shipping) == ([1, 2], [], [1, 2])


def test_a_recipient_list_limits_who_gets_the_message(operator_api, multi_queue):
    enq = operator_api.post(
        "/api/queues/EVENTS/enqueue/",
        {"payload": "only billing", "recipients": ["BILLING"]},
        format="json",
    )
    url = "/api/queues/EVENTS/dequeue/"

    assert enq.status_code == 201, enq.content
    assert _payloads(operator_api.post(url, {"consumer_name": "SHIPPING"}, format="json")) == []
    assert _payloads(operator_api.post(url, {"consumer_name": "BILLING"}, format="json")) == [
        "only billing"
    ]


def test_the_messages_of_a_queue_are_listed_with_filters(monitor_api, queue, enqueue_some):
    enqueue_some(queue, 1, 2)
    enqueue_some(queue, 3, delay=3600)

    every = monitor_api.get("/api/queues/ORDERS/messages/").json()
    waiting = monitor_api.get("/api/queues/ORDERS/messages/?state=WAITING").json()
    global_ready = monitor_api.get(f"/api/messages/?queue={queue.pk}&state=READY").json()

    assert every["count"] == 3
    assert [m["payload"] for m in waiting["results"]] == [3]
    assert [m["payload"] for m in global_ready["results"]] == [1, 2]
