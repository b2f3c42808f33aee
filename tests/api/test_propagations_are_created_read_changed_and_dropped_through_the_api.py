"""An administrator creates, reads, changes and drops propagations through the API, addressing
queues, rule sets and propagations by name or by id."""

from __future__ import annotations

import pytest

from core.models import ChangeLogEntry
from jobs.models import Propagation, PropagationSchedule
from queues.models import Subscriber

pytestmark = pytest.mark.django_db


@pytest.fixture
def topo(mc_table, sc_table, make_queue, rule_set) -> dict:
    """SRC (multi-consumer) and two single-consumer destinations, with two rule sets."""
    return {
        "src": make_queue("SRC", mc_table),
        "eu": make_queue("EU", sc_table),
        "us": make_queue("US", sc_table),
        "eu_rs": rule_set("EU_RS", ":msg.region = 'EU'"),
        "big_rs": rule_set("BIG_RS", ":msg.amount > 100"),
    }


def test_it_creates_a_propagation_by_names_with_its_schedule(admin_api, topo):
    response = admin_api.post(
        "/api/propagations/",
        {
            "name": "TO_EU",
            "source_queue": "src",
            "destination_queue": "EU",
            "positive_rule_set": "EU_RS",
            "comment": "European orders",
            "duration": 600,
            "next_time": "10m",
            "latency": 1.5,
            "max_failures": 4,
        },
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["name"], body["source_queue"], body["destination_queue"]) == (
        "TO_EU",
        "SRC",
        "EU",
    )
    assert (body["positive_rule_set"], body["negative_rule_set"]) == ("EU_RS", None)
    assert (body["enabled"], body["comment"], body["state"]) == (True, "European orders", "idle")
    assert (body["backlog"], body["oldest_backlog"], body["rate"], body["run"]) == (
        0,
        None,
        0.0,
        None,
    )
    sched = body["schedule"]
    assert (sched["duration"], sched["next_time"], sched["latency"], sched["max_failures"]) == (
        600.0,
        "10m",
        1.5,
        4,
    )
    assert sched["enabled"] is True and sched["failures"] == 0
    assert sched["window_start"] and sched["window_end"] and sched["next_run_at"]
    # The propagation subscribes to its source under its own name.
    assert Subscriber.objects.filter(queue=topo["src"], name="TO_EU").exists()
    verbs = set(ChangeLogEntry.objects.values_list("verb", flat=True))
    assert {"propagation_create", "schedule_propagation"} <= verbs


def test_it_creates_an_unscheduled_propagation_by_ids(admin_api, topo):
    response = admin_api.post(
        "/api/propagations/",
        {
            "name": "TO_US",
            "source_queue": topo["src"].pk,
            "destination_queue": str(topo["us"].pk),
            "negative_rule_set": topo["big_rs"].pk,
            "schedule": False,
        },
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["destination_queue"], body["negative_rule_set"]) == ("US", "BIG_RS")
    assert (body["schedule"], body["state"]) == (None, "unscheduled")
    assert not PropagationSchedule.objects.exists()


def test_it_reads_a_propagation_by_id_or_by_name_in_any_case(admin_api, monitor_api, topo):
    pk = admin_api.post(
        "/api/propagations/", {"name": "TO_EU", "source_queue": "SRC", "destination_queue": "EU"}
    ).json()["id"]

    by_id = monitor_api.get(f"/api/propagations/{pk}/")
    by_name = monitor_api.get("/api/propagations/to_eu/")
    listed = monitor_api.get("/api/propagations/").json()

    assert by_id.status_code == by_name.status_code == 200
    assert by_id.json() == by_name.json()
    assert listed["count"] == 1 and listed["results"][0]["id"] == pk
    assert monitor_api.get("/api/propagations/NO_SUCH/").status_code == 404


def test_it_changes_the_rule_sets_and_the_comment(admin_api, topo):
    admin_api.post(
        "/api/propagations/",
        {
            "name": "TO_EU",
            "source_queue": "SRC",
            "destination_queue": "EU",
            "positive_rule_set": "EU_RS",
        },
    )

    response = admin_api.patch(
        "/api/propagations/TO_EU/",
        {"positive_rule_set": None, "negative_rule_set": "BIG_RS", "comment": "no big ones"},
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["positive_rule_set"], body["negative_rule_set"], body["comment"]) == (
        None,
        "BIG_RS",
        "no big ones",
    )
    p = Propagation.objects.get(name="TO_EU")
    assert (p.positive_rule_set_id, p.negative_rule_set_id) == (None, topo["big_rs"].pk)


def test_sending_back_what_was_read_changes_only_what_differs(admin_api, topo):
    read = admin_api.post(
        "/api/propagations/", {"name": "TO_EU", "source_queue": "SRC", "destination_queue": "EU"}
    ).json()
    body = {
        k: read[k]
        for k in ("name", "source_queue", "destination_queue", "queue_to_queue", "comment")
    }

    response = admin_api.put("/api/propagations/TO_EU/", {**body, "comment": "edited"})

    assert response.status_code == 200, response.content
    assert response.json()["comment"] == "edited"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"destination_queue": "US"}, "destination_queue"),
        ({"source_queue": "EU"}, "source_queue"),
        ({"name": "RENAMED"}, "name"),
        ({"queue_to_queue": False}, "queue_to_queue"),
        ({"positive_rule_set": "BIG_RS", "negative_rule_set": "BIG_RS"}, "negative_rule_set"),
        ({"negative_rule_set": "NO_SUCH_RS"}, "negative_rule_set"),
    ],
)
def test_a_change_that_cannot_be_made_is_refused_naming_the_field(admin_api, topo, change, field):
    admin_api.post(
        "/api/propagations/", {"name": "TO_EU", "source_queue": "SRC", "destination_queue": "EU"}
    )
    before = list(Propagation.objects.values())

    response = admin_api.patch("/api/propagations/TO_EU/", change)

    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert list(Propagation.objects.values()) == before


def test_dropping_a_propagation_removes_its_schedule_and_subscriber(admin_api, topo):
    admin_api.post(
        "/api/propagations/", {"name": "TO_EU", "source_queue": "SRC", "destination_queue": "EU"}
    )

    response = admin_api.delete("/api/propagations/TO_EU/")

    assert response.status_code == 204, response.content
    assert not Propagation.objects.exists()
    assert not PropagationSchedule.objects.exists()
    assert not Subscriber.objects.filter(name="TO_EU").exists()
    assert admin_api.get("/api/propagations/TO_EU/").status_code == 404
    assert ChangeLogEntry.objects.filter(verb="propagation_delete").count() == 1
