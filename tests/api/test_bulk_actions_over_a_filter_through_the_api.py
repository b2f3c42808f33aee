"""POST /api/<list>/bulk/ with ``filter`` instead of ``ids``: the action takes every object the
list's own FilterSet matches when it runs, never a count from the client. A bad filter
parameter is a 400 naming ``filter.<param>``; an ``expected_count`` the filter no longer matches
is a 409 with the actual count; more than AQ_BULK_MAX matches is a 400 naming ``filter``; in
each of these nothing is done. A monitor gets 403 whatever the filter."""

from __future__ import annotations

import pytest

from core.models import ChangeLogEntry
from jobs import services as js
from jobs.models import PropagationSchedule
from queues import services as qs
from queues.choices import QueueKind
from queues.models import Queue

pytestmark = pytest.mark.django_db

URL = "/api/queues/bulk/"


@pytest.fixture
def queues(admin_user, queue_table) -> dict[str, Queue]:
    """BATCH_1..BATCH_3 and OTHER (normal queues) beside the table's exception queue."""
    return {
        name: qs.queue_create(user=admin_user, name=name, queue_table=queue_table)
        for name in ("BATCH_1", "BATCH_2", "BATCH_3", "OTHER")
    }


def _stopped() -> set[str]:
    return set(
        Queue.objects.filter(enqueue_enabled=False, kind=QueueKind.NORMAL).values_list(
            "name", flat=True
        )
    )


def test_the_filter_takes_exactly_the_queues_it_matches(operator_api, queues):
    response = operator_api.post(
        URL, {"action": "stop", "filter": {"q": "batch", "kind": "NORMAL_QUEUE"}}, format="json"
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["done"], body["refused"]) == (3, 0)
    assert sorted(r["name"] for r in body["results"]) == ["BATCH_1", "BATCH_2", "BATCH_3"]
    assert _stopped() == {"BATCH_1", "BATCH_2", "BATCH_3"}
    assert ChangeLogEntry.objects.filter(verb="queue_stop").count() == 3


def test_the_filter_is_read_when_the_action_runs(operator_api, admin_user, queue_table, queues):
    """A queue made after the client looked is a match too (no expected_count given)."""
    qs.queue_create(user=admin_user, name="BATCH_LATE", queue_table=queue_table)

    response = operator_api.post(URL, {"action": "stop", "filter": {"q": "BATCH"}}, format="json")

    assert response.status_code == 200, response.content
    assert _stopped() == {"BATCH_1", "BATCH_2", "BATCH_3", "BATCH_LATE"}


def test_a_matching_expected_count_goes_through(operator_api, queues):
    # The list endpoint's query as the client used it: paging and sorting are not filters.
    listed = {"q": "BATCH", "limit": 2, "offset": 0, "ordering": "name"}
    response = operator_api.post(
        URL, {"action": "stop", "filter": listed, "expected_count": 3}, format="json"
    )

    assert response.status_code == 200, response.content
    assert response.json()["done"] == 3


def test_an_expected_count_the_filter_no_longer_matches_is_a_409_and_nothing_is_done(
    operator_api, admin_user, queue_table, queues
):
    qs.queue_create(user=admin_user, name="BATCH_LATE", queue_table=queue_table)

    response = operator_api.post(
        URL, {"action": "stop", "filter": {"q": "BATCH"}, "expected_count": 3}, format="json"
    )

    assert response.status_code == 409, response.content
    body = response.json()
    assert (body["code"], body["count"], body["expected_count"]) == ("count_changed", 4, 3)
    assert "4 queues match now, not 3" in body["detail"]
    assert _stopped() == set()
    assert not ChangeLogEntry.objects.filter(verb="queue_stop").exists()


@pytest.mark.parametrize(
    ("filter_", "field"),
    [
        ({"kind": "TELEPORT"}, "filter.kind"),
        ({"queue_table": "999999"}, "filter.queue_table"),
        ({"queue_table": "abc"}, "filter.queue_table"),
        # A mistyped parameter would match everything: it is refused, not ignored.
        ({"knd": "NORMAL"}, "filter.knd"),
        ({"q": {"nested": 1}}, "filter.q"),
        # Text PostgreSQL cannot compare with: named, not a 500.
        ({"q": "BATCH\u0000"}, "filter.q"),
        ("not an object", "filter"),
    ],
)
def test_a_bad_filter_is_a_400_naming_the_parameter_and_nothing_is_done(
    operator_api, queues, filter_, field
):
    response = operator_api.post(URL, {"action": "stop", "filter": filter_}, format="json")

    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert _stopped() == set()


def test_ids_and_a_filter_together_are_a_400(operator_api, queues):
    response = operator_api.post(
        URL,
        {"action": "stop", "ids": [queues["OTHER"].pk], "filter": {"q": "BATCH"}},
        format="json",
    )

    assert response.status_code == 400, response.content
    assert "filter" in response.json()
    assert _stopped() == set()


def test_more_matches_than_the_limit_is_a_400_naming_the_filter(operator_api, settings, queues):
    settings.AQ_BULK_MAX = 3

    over = operator_api.post(
        URL, {"action": "stop", "filter": {"kind": "NORMAL_QUEUE"}}, format="json"
    )

    assert over.status_code == 400, over.content
    assert "matches 4 queues" in over.json()["filter"][0]
    assert "at most 3" in over.json()["filter"][0]
    assert _stopped() == set()
    # At the limit it goes through.
    at = operator_api.post(URL, {"action": "stop", "filter": {"q": "BATCH"}}, format="json")
    assert at.status_code == 200 and at.json()["done"] == 3


def test_a_monitor_gets_403_whatever_the_filter(monitor_api, queues):
    for filter_ in ({"q": "BATCH"}, {"kind": "TELEPORT"}):
        response = monitor_api.post(URL, {"action": "stop", "filter": filter_}, format="json")
        assert response.status_code == 403, response.content
    assert _stopped() == set()


def test_an_operator_may_not_drop_through_a_filter(operator_api, queues):
    response = operator_api.post(URL, {"action": "drop", "filter": {"q": "BATCH"}}, format="json")

    assert response.status_code == 403
    assert Queue.objects.filter(name__startswith="BATCH_").count() == 3


def test_propagations_by_a_multiple_choice_filter(operator_api, admin_user, mc_table, make_queue):
    """The propagation list's filter, a multiple choice given as a list, on its own endpoint."""
    source = make_queue("SRC", mc_table)
    props = [
        js.propagation_create(
            user=admin_user,
            name=name,
            source_queue=source,
            destination_queue=make_queue(f"DST_{name}", mc_table),
        )
        for name in ("P1", "P2", "P3")
    ]
    for p in props[:2]:
        js.schedule_disable(user=admin_user, propagation=p)

    response = operator_api.post(
        "/api/propagations/bulk/",
        {"action": "enable", "filter": {"state": ["disabled", "failed"]}, "expected_count": 2},
        format="json",
    )

    assert response.status_code == 200, response.content
    assert sorted(r["name"] for r in response.json()["results"]) == ["P1", "P2"]
    assert PropagationSchedule.objects.filter(enabled=True).count() == 3
