"""Every propagation verb through the API calls its service; a verb the state does not allow is
a 409 with the reason, and changes nothing."""

from __future__ import annotations

import pytest

from core.models import ChangeLogEntry
from jobs.models import Propagation, PropagationSchedule

pytestmark = pytest.mark.django_db


@pytest.fixture
def prop(admin_api, mc_table, sc_table, make_queue) -> str:
    make_queue("SRC", mc_table)
    make_queue("DST", sc_table)
    response = admin_api.post(
        "/api/propagations/", {"name": "P", "source_queue": "SRC", "destination_queue": "DST"}
    )
    assert response.status_code == 201, response.content
    return "/api/propagations/P"


def _rows() -> tuple[list, list, int]:
    return (
        list(Propagation.objects.values()),
        list(PropagationSchedule.objects.values()),
        ChangeLogEntry.objects.count(),
    )


def _refused(client, path: str, body: dict | None = None) -> dict:  # type: ignore[no-untyped-def]
    before = _rows()
    response = client.post(path, body or {})
    assert response.status_code == 409, response.content
    assert _rows() == before
    return response.json()


def test_stop_and_start_switch_the_propagation(operator_api, prop):
    stopped = operator_api.post(f"{prop}/stop/")
    assert stopped.status_code == 200, stopped.content
    assert (stopped.json()["enabled"], stopped.json()["state"]) == (False, "stopped")

    assert "already stopped" in _refused(operator_api, f"{prop}/stop/")["detail"]

    started = operator_api.post(f"{prop}/start/")
    assert started.status_code == 200, started.content
    assert (started.json()["enabled"], started.json()["state"]) == (True, "idle")


def test_starting_a_started_propagation_is_a_409(operator_api, prop):
    body = _refused(operator_api, f"{prop}/start/")

    assert body == {"detail": "Propagation P is already started.", "code": "conflict"}


def test_disable_and_enable_switch_the_schedule(operator_api, prop):
    disabled = operator_api.post(f"{prop}/disable/")
    assert disabled.status_code == 200, disabled.content
    assert (disabled.json()["schedule"]["enabled"], disabled.json()["state"]) == (
        False,
        "disabled",
    )
    assert "already disabled" in _refused(operator_api, f"{prop}/disable/")["detail"]

    enabled = operator_api.post(f"{prop}/enable/")
    assert enabled.status_code == 200, enabled.content
    assert enabled.json()["schedule"]["enabled"] is True
    assert "already enabled" in _refused(operator_api, f"{prop}/enable/")["detail"]


def test_resetting_an_enabled_healthy_schedule_is_a_409(operator_api, prop):
    body = _refused(operator_api, f"{prop}/reset/")

    assert "no failures to reset" in body["detail"]


def test_unschedule_then_schedule_with_parameters(admin_api, prop):
    gone = admin_api.post(f"{prop}/unschedule/")
    assert gone.status_code == 200, gone.content
    assert (gone.json()["schedule"], gone.json()["state"]) == (None, "unscheduled")
    assert not PropagationSchedule.objects.exists()

    made = admin_api.post(
        f"{prop}/schedule/",
        {"duration": 30, "next_time": "*/5 * * * *", "latency": 0.5, "max_failures": 2},
    )

    assert made.status_code == 201, made.content
    sched = made.json()["schedule"]
    assert (sched["duration"], sched["next_time"], sched["latency"], sched["max_failures"]) == (
        30.0,
        "*/5 * * * *",
        0.5,
        2,
    )


def test_scheduling_a_scheduled_propagation_is_a_409(admin_api, prop):
    body = _refused(admin_api, f"{prop}/schedule/", {"latency": 9})

    assert "already scheduled" in body["detail"]


@pytest.mark.parametrize(
    ("path", "client"),
    [
        ("enable", "operator_api"),
        ("disable", "operator_api"),
        ("reset", "operator_api"),
        ("unschedule", "admin_api"),
        ("alter-schedule", "admin_api"),
    ],
)
def test_schedule_verbs_on_an_unscheduled_propagation_are_a_409(
    request, admin_api, prop, path, client
):
    admin_api.post(f"{prop}/unschedule/")

    body = _refused(request.getfixturevalue(client), f"{prop}/{path}/", {"latency": 1})

    assert "has no schedule" in body["detail"]


def test_alter_schedule_changes_only_the_parameters_given(admin_api, prop):
    admin_api.post(f"{prop}/alter-schedule/", {"duration": 120, "next_time": "PT10M"})

    response = admin_api.post(f"{prop}/alter-schedule/", {"latency": 7})

    assert response.status_code == 200, response.content
    sched = response.json()["schedule"]
    assert (sched["duration"], sched["next_time"], sched["latency"]) == (120.0, "PT10M", 7.0)
    assert ChangeLogEntry.objects.filter(verb="alter_propagation_schedule").count() == 2


def test_a_verb_on_a_propagation_that_does_not_exist_is_a_404(operator_api, prop):
    assert operator_api.post("/api/propagations/NOPE/stop/").status_code == 404
    assert operator_api.post("/api/propagations/999999/start/").status_code == 404
