"""POST /api/trace/ follows a pasted or queued message hop by hop through the propagations and
names the rule deciding each hop. A dry run: nothing is enqueued or changed."""

from __future__ import annotations

import pytest

from core.models import ChangeLogEntry
from jobs import services
from queues.models import Message
from tests.jobs.helpers import enqueue

pytestmark = pytest.mark.django_db


@pytest.fixture
def chain(admin_user, mc_table, sc_table, make_queue, rule_set) -> dict:
    """A →(region EU)→ B →(not small)→ C, and A →(region US)→ D."""
    a, b = make_queue("A", mc_table), make_queue("B", mc_table)
    c, d = make_queue("C", sc_table), make_queue("D", sc_table)
    services.propagation_create(
        user=admin_user,
        name="A_B",
        source_queue=a,
        destination_queue=b,
        positive_rule_set=rule_set("EU", ":msg.region = 'EU'"),
    )
    services.propagation_create(
        user=admin_user,
        name="B_C",
        source_queue=b,
        destination_queue=c,
        negative_rule_set=rule_set("NO_SMALL", ":msg.amount < 10"),
    )
    services.propagation_create(
        user=admin_user,
        name="A_D",
        source_queue=a,
        destination_queue=d,
        positive_rule_set=rule_set("US", ":msg.region = 'US'"),
    )
    return {"a": a}


def _trace(client, body: dict) -> dict:  # type: ignore[no-untyped-def]
    messages, changes = Message.objects.count(), ChangeLogEntry.objects.count()
    response = client.post("/api/trace/", body)
    assert response.status_code == 200, response.content
    assert (Message.objects.count(), ChangeLogEntry.objects.count()) == (messages, changes)
    return response.json()


def test_a_pasted_message_goes_two_hops_each_decided_by_a_rule(monitor_api, chain):
    out = _trace(
        monitor_api,
        {"queue": "A", "message": {"kind": "user", "payload": {"region": "EU", "amount": 50}}},
    )

    hops = {h["propagation"]: h for h in out["hops"]}
    assert (out["queue"], out["reaches"]) == ("A", ["B", "C"])
    assert (hops["A_B"]["decision"], hops["A_B"]["rule"], hops["A_B"]["depth"]) == (
        "PERFORM",
        "EU_R0",
        0,
    )
    assert (hops["B_C"]["decision"], hops["B_C"]["depth"]) == ("PERFORM", 1)
    assert (hops["A_D"]["decision"], hops["A_D"]["rule"]) == ("DISCARD", None)


def test_a_rule_of_the_second_hop_can_stop_the_message(monitor_api, chain):
    out = _trace(
        monitor_api,
        {"queue": "a", "message": {"kind": "user", "payload": {"region": "EU", "amount": 5}}},
    )

    hops = {h["propagation"]: h for h in out["hops"]}
    assert hops["A_B"]["decision"] == "PERFORM"
    assert (hops["B_C"]["decision"], hops["B_C"]["rule"], hops["B_C"]["rule_set"]) == (
        "DISCARD",
        "NO_SMALL_R0",
        "NO_SMALL",
    )
    assert out["reaches"] == ["B"]


def test_a_queued_message_is_traced_by_its_id_from_its_own_queue(monitor_api, chain):
    [mid] = enqueue(chain["a"], [{"region": "EU", "amount": 500}])

    by_id = _trace(monitor_api, {"msgid": mid})
    from_queue_by_id = _trace(monitor_api, {"msgid": mid, "queue": chain["a"].pk})

    assert by_id == from_queue_by_id
    assert (by_id["queue"], by_id["reaches"]) == ("A", ["B", "C"])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"queue": "A"}, "message"),
        ({"queue": "A", "message": {"kind": "user"}, "msgid": 1}, "message"),
        ({"message": {"kind": "user", "payload": {}}}, "queue"),
        ({"queue": "NOWHERE", "message": {"kind": "user", "payload": {}}}, "queue"),
        ({"queue": "A", "message": {"kind": "user"}}, "message.payload"),
        ({"queue": "A", "message": {"kind": "telegram", "payload": {}}}, "message.kind"),
        ({"queue": "A", "message": "not json"}, "message"),
        ({"msgid": 999999}, "msgid"),
        ({"msgid": "x"}, "msgid"),
        ({"msgid": 0}, "msgid"),
    ],
)
def test_bad_trace_input_names_the_field(monitor_api, chain, body, field):
    response = monitor_api.post("/api/trace/", body)

    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
