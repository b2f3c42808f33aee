"""The dequeue API's default navigation is NEXT_MESSAGE: sending back the ``cursor`` of the previous
answer, without naming a navigation, continues after it; FIRST_MESSAGE starts at the head again."""

from __future__ import annotations

URL = "/api/queues/ORDERS/dequeue/"


def _payloads(answer: dict) -> list:
    return [m["payload"] for m in answer["messages"]]


def test_the_cursor_alone_pages_through_the_queue(monitor_api, queue, enqueue_some):
    enqueue_some(queue, 1, 2, 3, 4, 5)
    pages, cursor = [], None
    while True:
        body = {"mode": "BROWSE", "batch": 2, **({"cursor": cursor} if cursor else {})}
        answer = monitor_api.post(URL, body, format="json").json()
        if not answer["messages"]:
            break
        pages.append(_payloads(answer))
        cursor = answer["cursor"]

    assert pages == [[1, 2], [3, 4], [5]]


def test_first_message_ignores_the_cursor(monitor_api, queue, enqueue_some):
    enqueue_some(queue, 1, 2, 3)
    first = monitor_api.post(URL, {"mode": "BROWSE"}, format="json").json()
    again = monitor_api.post(
        URL,
        {"mode": "BROWSE", "navigation": "FIRST_MESSAGE", "cursor": first["cursor"]},
        format="json",
    ).json()

    assert _payloads(first) == _payloads(again) == [1]


def test_the_schema_names_next_message_as_the_default(admin_api):
    schema = admin_api.get("/api/schema/", {"format": "json"}).json()
    props = schema["components"]["schemas"]["DequeueRequest"]["properties"]
    assert props["navigation"]["default"] == "NEXT_MESSAGE"
