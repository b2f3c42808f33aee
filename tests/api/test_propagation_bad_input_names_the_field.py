"""Bad propagation and schedule input through the API is a 4xx naming the field, never a 500, and
writes nothing."""

from __future__ import annotations

import pytest

from core.models import ChangeLogEntry
from jobs.models import Propagation, PropagationSchedule
from queues.models import Subscriber

pytestmark = pytest.mark.django_db


@pytest.fixture
def topo(admin_api, mc_table, sc_table, make_queue, rule_set, typed_queue) -> None:
    """SRC (multi-consumer, any payload), DST and SC_SRC (single-consumer), TYPED_ORDERS (ORDER
    payloads only), rule set RS, and propagation P from SRC to DST."""
    make_queue("SRC", mc_table)
    make_queue("DST", sc_table)
    make_queue("SC_SRC", sc_table)
    rule_set("RS", ":msg.n > 1")
    response = admin_api.post(
        "/api/propagations/", {"name": "P", "source_queue": "SRC", "destination_queue": "DST"}
    )
    assert response.status_code == 201, response.content


def _rows() -> tuple:
    return (
        list(Propagation.objects.values()),
        list(PropagationSchedule.objects.values()),
        sorted(Subscriber.objects.values_list("queue_id", "name")),
        ChangeLogEntry.objects.count(),
    )


GOOD = {"name": "NEW_P", "source_queue": "SRC", "destination_queue": "TYPED_ORDERS"}


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({**GOOD, "destination_queue": "SRC"}, 400, "destination_queue"),
        ({**GOOD, "destination_queue": "TYPED_ORDERS"}, 400, "destination_queue"),
        ({**GOOD, "destination_queue": "DST"}, 409, "destination_queue"),
        ({**GOOD, "destination_queue": "AQ$_QT_SC_E"}, 400, "destination_queue"),
        ({**GOOD, "source_queue": "SC_SRC", "destination_queue": "DST"}, 400, "source_queue"),
        ({**GOOD, "source_queue": "NO_SUCH_QUEUE"}, 400, "source_queue"),
        ({**GOOD, "source_queue": 999999}, 400, "source_queue"),
        ({**GOOD, "source_queue": ["SRC"]}, 400, "source_queue"),
        ({**GOOD, "source_queue": None}, 400, "source_queue"),
        ({"name": "NEW_P", "source_queue": "SRC"}, 400, "destination_queue"),
        ({**GOOD, "name": "P", "destination_queue": "SC_SRC"}, 409, "name"),
        ({**GOOD, "name": "1BAD"}, 400, "name"),
        ({**GOOD, "name": "X" * 129}, 400, "name"),
        ({**GOOD, "positive_rule_set": "NO_SUCH_RS"}, 400, "positive_rule_set"),
        (
            {**GOOD, "destination_queue": "SC_SRC", "positive_rule_set": "RS", "negative_rule_set": "RS"},
            400,
            "negative_rule_set",
        ),
        ({**GOOD, "destination_queue": "SC_SRC", "next_time": "every tuesday", "duration": 60}, 400, "next_time"),
        ({**GOOD, "destination_queue": "SC_SRC", "next_time": "10m"}, 400, "next_time"),
        ({**GOOD, "destination_queue": "SC_SRC", "latency": -1}, 400, "latency"),
        ({**GOOD, "destination_queue": "SC_SRC", "latency": "soon"}, 400, "latency"),
        ({**GOOD, "destination_queue": "SC_SRC", "duration": 0}, 400, "duration"),
        ({**GOOD, "destination_queue": "SC_SRC", "duration": 1e300}, 400, "duration"),
        ({**GOOD, "destination_queue": "SC_SRC", "max_failures": 0}, 400, "max_failures"),
        ({**GOOD, "destination_queue": "SC_SRC", "max_failures": 2**40}, 400, "max_failures"),
        ({**GOOD, "destination_queue": "SC_SRC", "start_time": "tomorrow"}, 400, "start_time"),
        ({**GOOD, "destination_queue": "SC_SRC", "schedule": False, "latency": 1}, 400, "latency"),
    ],
)  # fmt: skip
def test_a_bad_propagation_is_refused_naming_the_field(admin_api, topo, body, status, field):
    before = _rows()

    response = admin_api.post("/api/propagations/", body)

    assert response.status_code == status, response.content
    assert field in response.json(), response.json()
    assert _rows() == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"next_time": "61 * * * *", "duration": 60}, "next_time"),
        ({"next_time": "0 0 31 2 *", "duration": 60}, "next_time"),
        ({"next_time": "SYSDATE + 1/0", "duration": 60}, "next_time"),
        ({"next_time": "PT0S", "duration": 60}, "next_time"),
        ({"next_time": "10m"}, "next_time"),
        ({"latency": -0.5}, "latency"),
        ({"latency": None}, "latency"),
        ({"duration": -5}, "duration"),
        ({"max_failures": -1}, "max_failures"),
        ({"start_time": "2024-13-45T00:00:00Z"}, "start_time"),
        ({"start_time": "9999-12-31T23:59:59Z", "duration": 3600}, "start_time"),
    ],
)
def test_a_bad_schedule_change_is_refused_naming_the_field(admin_api, topo, body, field):
    before = _rows()

    response = admin_api.post("/api/propagations/P/alter-schedule/", body)

    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert _rows() == before


def test_a_body_that_is_not_an_object_is_a_400(admin_api, topo):
    before = _rows()

    for path in ("/api/propagations/", "/api/propagations/P/alter-schedule/"):
        response = admin_api.post(path, [1, 2], format="json")
        assert response.status_code == 400, response.content
    assert _rows() == before
