"""The dequeue form's hidden cursor remembers the mode, consumer, correlation and condition it was
made under: pressing Go after changing any of them starts NEXT_MESSAGE from the head (and says so)
instead of skipping the new selection's earlier messages. When NEXT_MESSAGE finds nothing after
the cursor the page says that FIRST_MESSAGE starts from the head again; a cursor the form cannot
read is an error shown on the page."""

from __future__ import annotations

import re

import pytest

from queues.models import Message

FORM = {"navigation": "NEXT_MESSAGE", "batch": 2, "wait": 0}


def _ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r"<strong>#(\d+)</strong>", html)]


def _cursor(html: str) -> str:
    match = re.search(r'name="cursor" value="([^"]*)"', html)
    assert match, "the dequeue form carries no cursor"
    return match.group(1)


@pytest.mark.parametrize(
    "change",
    [{"mode": "REMOVE"}, {"correlation": "C"}, {"condition": ":msg.k = 1"}],
    ids=["mode", "correlation", "condition"],
)
def test_a_changed_field_starts_from_the_head(operator_client, queue, enqueue_some, change):
    ids = enqueue_some(queue, *({"k": 1} for _ in range(4)), correlation="C")
    url = f"/queues/{queue.pk}/dequeue/"
    first = operator_client.post(url, {**FORM, "mode": "BROWSE"}).content.decode()

    again = operator_client.post(
        url, {**FORM, "mode": "BROWSE", **change, "cursor": _cursor(first)}
    ).content.decode()

    assert _ids(first) == ids[0:2]
    assert _ids(again) == ids[0:2], "the cursor of another selection skipped messages"
    assert 'id="dequeue-restarted"' in again
    # The new cursor belongs to the new selection: Go once more continues after it.
    third = operator_client.post(
        url, {**FORM, "mode": "BROWSE", **change, "cursor": _cursor(again)}
    ).content.decode()
    assert _ids(third) == ids[2:4]
    assert 'id="dequeue-restarted"' not in third


def test_switching_consumer_does_not_skip_its_earlier_messages(
    operator_client, multi_queue, enqueue_some
):
    ids = enqueue_some(multi_queue, *range(4))
    url = f"/queues/{multi_queue.pk}/dequeue/"
    billing = operator_client.post(
        url, {**FORM, "mode": "REMOVE", "consumer_name": "BILLING"}
    ).content.decode()

    shipping = operator_client.post(
        url, {**FORM, "mode": "REMOVE", "consumer_name": "SHIPPING", "cursor": _cursor(billing)}
    ).content.decode()

    assert _ids(billing) == ids[0:2]
    assert _ids(shipping) == ids[0:2]
    assert Message.objects.filter(pk__in=ids[2:4]).count() == 2


def test_nothing_after_the_cursor_says_first_message_starts_at_the_head(
    operator_client, queue, enqueue_some
):
    enqueue_some(queue, 1, 2)
    url = f"/queues/{queue.pk}/dequeue/"
    both = operator_client.post(url, {**FORM, "mode": "BROWSE"}).content.decode()

    empty = operator_client.post(
        url, {**FORM, "mode": "BROWSE", "cursor": _cursor(both)}
    ).content.decode()

    assert _ids(empty) == []
    assert 'id="dequeue-exhausted"' in empty
    assert "first message starts from the head again" in empty
    assert 'id="dequeue-exhausted"' not in both


def test_an_unreadable_cursor_is_an_error_shown_on_the_page(operator_client, queue, enqueue_some):
    enqueue_some(queue, 1)

    response = operator_client.post(
        f"/queues/{queue.pk}/dequeue/", {**FORM, "mode": "BROWSE", "cursor": "1.x.3@0"}
    )

    html = response.content.decode()
    assert response.status_code == 400
    error = re.search(r'<div class="alert[^"]*" data-field="cursor">([^<]*)</div>', html)
    assert error and "First message" in error.group(1)
    assert _ids(html) == []
