"""POST /api/queues/bulk/: one verb on many queues, each through its own service. A refused
queue gets the service's message and changes nothing; the others are still done."""

from __future__ import annotations

import pytest

from core.models import ChangeLogEntry
from queues import services as qs
from queues.choices import QueueKind
from queues.models import Message, Queue

pytestmark = pytest.mark.django_db

URL = "/api/queues/bulk/"


@pytest.fixture
def three(admin_user, queue_table) -> list[Queue]:
    return [
        qs.queue_create(user=admin_user, name=name, queue_table=queue_table)
        for name in ("Q_A", "Q_B", "Q_C")
    ]


@pytest.fixture
def exception_queue(queue_table) -> Queue:
    return Queue.objects.get(queue_table=queue_table, kind=QueueKind.EXCEPTION)


def _flags(*queues: Queue) -> list[tuple[bool, bool]]:
    return [
        (q.enqueue_enabled, q.dequeue_enabled)
        for q in Queue.objects.filter(pk__in=[q.pk for q in queues]).order_by("name")
    ]


def test_operator_stops_three_queues_at_once(operator_api, three):
    response = operator_api.post(URL, {"action": "stop", "ids": [q.pk for q in three]})

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["action"], body["done"], body["refused"]) == ("stop", 3, 0)
    assert [(r["id"], r["name"], r["outcome"]) for r in body["results"]] == [
        (q.pk, q.name, "done") for q in three
    ]
    assert _flags(*three) == [(False, False)] * 3
    # One change-log line per queue, from the queue's own service.
    assert ChangeLogEntry.objects.filter(verb="queue_stop").count() == 3


def test_stop_enqueue_only_leaves_dequeue_on(operator_api, three):
    response = operator_api.post(URL, {"action": "stop_enqueue", "ids": [three[0].pk]})

    assert response.status_code == 200, response.content
    assert _flags(three[0]) == [(False, True)]


def test_a_refused_queue_keeps_its_state_and_the_others_are_started(
    operator_api, three, exception_queue
):
    qs.queue_stop(user=None, queue=three[0])
    qs.queue_stop(user=None, queue=three[1])
    qs.queue_stop(user=None, queue=exception_queue, enqueue=False, dequeue=True)
    ids = [three[0].pk, exception_queue.pk, three[1].pk]

    response = operator_api.post(URL, {"action": "start", "ids": ids})

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["done"], body["refused"]) == (2, 1)
    assert [r["outcome"] for r in body["results"]] == ["done", "refused", "done"]
    refused = body["results"][1]
    assert refused["detail"] == "Exception queues cannot be enabled for enqueue."
    assert refused["code"] == "invalid"
    assert _flags(three[0], three[1]) == [(True, True), (True, True)]
    # Not half done: START_QUEUE would also have enabled its dequeue.
    exception_queue.refresh_from_db()
    assert (exception_queue.enqueue_enabled, exception_queue.dequeue_enabled) == (False, False)


def test_drop_refuses_a_queue_with_messages_and_drops_the_rest(admin_api, three, enqueue_some):
    enqueue_some(three[1], {"n": 1})

    response = admin_api.post(URL, {"action": "drop", "ids": [q.pk for q in three]})

    assert response.status_code == 200, response.content
    body = response.json()
    assert [r["outcome"] for r in body["results"]] == ["done", "refused", "done"]
    assert "still holds" in body["results"][1]["detail"]
    assert body["results"][1]["code"] == "conflict"
    assert list(
        Queue.objects.filter(pk__in=[q.pk for q in three]).values_list("name", flat=True)
    ) == ["Q_B"]
    assert Message.objects.filter(queue=three[1]).count() == 1


def test_purge_empties_each_queue_and_says_how_many(operator_api, three, enqueue_some):
    enqueue_some(three[0], {"n": 1}, {"n": 2})

    response = operator_api.post(URL, {"action": "purge", "ids": [three[0].pk, three[2].pk]})

    assert response.status_code == 200, response.content
    details = [r["detail"] for r in response.json()["results"]]
    assert details == ["2 message(s) purged.", "0 message(s) purged."]
    assert not Message.objects.filter(queue=three[0]).exists()


@pytest.mark.parametrize(
    ("body", "field", "text"),
    [
        ({"action": "halt", "ids": [1]}, "action", "Unknown action 'halt'"),
        ({"ids": [1]}, "action", "No action given; one of: start, stop,"),
        ({"action": "stop", "ids": []}, "ids", "Select at least one queue."),
        ({"action": "stop"}, "ids", "Select at least one queue."),
        ({"action": "stop", "ids": "all"}, "ids", "'all' is not an id."),
        ({"action": "stop", "ids": [1.5]}, "ids", "'1.5' is not an id."),
        ({"action": "stop", "ids": [True]}, "ids", "'True' is not an id."),
        ({"action": "stop", "ids": [2**70]}, "ids", "is not an id."),
        ({"action": "stop", "ids": {"a": 1}}, "ids", "Give the ids as a list of integers."),
        ({"action": "stop", "ids": list(range(1, 502))}, "ids", "At most 500 ids"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_changes_nothing(
    operator_api, three, snapshot, body, field, text
):
    before = snapshot()

    response = operator_api.post(URL, body, format="json")

    assert response.status_code == 400, response.content
    assert list(response.json()) == [field]
    assert text in response.json()[field][0]
    before.assert_unchanged()


def test_an_id_that_names_no_queue_is_a_400_and_nothing_is_done(operator_api, three, snapshot):
    before = snapshot()

    response = operator_api.post(URL, {"action": "stop", "ids": [three[0].pk, 999_999]})

    assert response.status_code == 400, response.content
    assert response.json() == {"ids": ["No queue with id 999999."]}
    before.assert_unchanged()


def test_a_body_that_is_not_an_object_is_a_400(operator_api, three):
    response = operator_api.post(URL, [1, 2], format="json")

    assert response.status_code == 400, response.content
    assert "Send a JSON object" in response.json()["detail"]


def test_a_form_body_with_repeated_ids_works_like_json(operator_api, three):
    response = operator_api.post(
        URL, {"action": "stop", "ids": [str(three[0].pk), str(three[1].pk)]}, format="multipart"
    )

    assert response.status_code == 200, response.content
    assert response.json()["done"] == 2


@pytest.mark.parametrize("action", ["stop", "purge", "drop"])
def test_monitor_is_refused_every_verb(monitor_api, three, snapshot, action):
    before = snapshot()

    response = monitor_api.post(URL, {"action": action, "ids": [q.pk for q in three]})

    assert response.status_code == 403, response.content
    before.assert_unchanged()


def test_operator_may_stop_but_not_drop(operator_api, three, snapshot):
    before = snapshot()

    response = operator_api.post(URL, {"action": "drop", "ids": [q.pk for q in three]})

    assert response.status_code == 403, response.content
    before.assert_unchanged()


def test_a_user_without_a_role_is_refused(token_client, roleless_user, three):
    response = token_client(roleless_user).post(URL, {"action": "stop", "ids": [three[0].pk]})

    assert response.status_code == 403, response.content


def test_replay_moves_an_exception_queues_messages_back_and_refuses_a_normal_queue(
    operator_api, expired_message
):
    source, exq, mid = expired_message

    response = operator_api.post(URL, {"action": "replay", "ids": [exq.pk, source.pk]})

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["done"], body["refused"]) == (1, 1)
    done, refused = body["results"]
    assert (done["id"], done["outcome"]) == (exq.pk, "done")
    assert "1 message(s) replayed" in done["detail"]
    assert refused["id"] == source.pk and "not an exception queue" in refused["detail"]
    # The message is back in its own queue, ready, and gone from the exception queue.
    assert Message.objects.get(pk=mid).queue_id == source.pk
    assert not Message.objects.filter(queue=exq).exists()
