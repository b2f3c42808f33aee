"""The queue page's dequeue form defaults to NEXT_MESSAGE and carries the position of the last
message it showed (a hidden ``cursor``), so pressing Go again continues after it, as a PL/SQL
session's NEXT_MESSAGE dequeues do; FIRST_MESSAGE starts at the head again."""

from __future__ import annotations

import re

from queues.models import Message

FORM = {"mode": "BROWSE", "batch": 2, "wait": 0}


def _ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r"<strong>#(\d+)</strong>", html)]


def _cursor(html: str) -> str:
    match = re.search(r'name="cursor" value="([^"]*)"', html)
    assert match, "the dequeue form carries no cursor"
    return match.group(1)


def test_the_form_offers_next_message_first(operator_client, queue):
    html = operator_client.get(f"/queues/{queue.pk}/").content.decode()
    assert re.search(r'<option value="NEXT_MESSAGE" selected>', html)


def test_go_again_continues_after_the_last_message_shown(operator_client, queue, enqueue_some):
    ids = enqueue_some(queue, *range(5))
    url = f"/queues/{queue.pk}/dequeue/"

    seen, cursor = [], ""
    for _ in range(3):
        html = operator_client.post(
            url, {**FORM, "navigation": "NEXT_MESSAGE", "cursor": cursor}
        ).content.decode()
        seen.append(_ids(html))
        cursor = _cursor(html)
    again = operator_client.post(url, {**FORM, "navigation": "FIRST_MESSAGE", "cursor": cursor})

    assert seen == [ids[0:2], ids[2:4], ids[4:5]]
    assert f"continues after #{ids[4]}" in html
    assert _ids(again.content.decode()) == ids[0:2]
    assert Message.objects.filter(queue=queue, state="READY").count() == 5


def test_a_forged_cursor_is_a_form_error_naming_it(operator_client, queue, enqueue_some):
    enqueue_some(queue, 1)
    response = operator_client.post(
        f"/queues/{queue.pk}/dequeue/", {**FORM, "navigation": "NEXT_MESSAGE", "cursor": "x"}
    )
    assert response.status_code == 400
    assert 'data-field="cursor"' in response.content.decode()
