"""Role rules on the propagation API: a monitor reads everything and changes nothing; an operator
starts, stops, enables, disables, resets and sets maintenance mode; only an administrator
creates, alters, schedules, unschedules and drops."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from core.models import ChangeLogEntry
from jobs.models import Maintenance, Propagation, PropagationSchedule

pytestmark = pytest.mark.django_db

READS = [
    "/api/propagations/",
    "/api/propagations/P/",
    "/api/propagations/P/runs/",
    "/api/propagation-runs/",
    "/api/workers/",
    "/api/maintenance/",
    "/api/topology/",
    "/api/attention/",
    "/api/status/dba_propagation/",
    "/api/status/dba_queue_schedules/",
    "/api/status/v_propagation_sender/",
    "/api/status/v_propagation_receiver/",
]

CONFIGURE = [
    ("post", "/api/propagations/", {"name": "P2", "source_queue": "SRC", "destination_queue": "D2"}),
    ("patch", "/api/propagations/P/", {"comment": "changed"}),
    ("put", "/api/propagations/P/", {"comment": "changed"}),
    ("delete", "/api/propagations/P/", None),
    ("post", "/api/propagations/P/schedule/", {"latency": 1}),
    ("post", "/api/propagations/P/alter-schedule/", {"latency": 1}),
    ("post", "/api/propagations/P/unschedule/", None),
]  # fmt: skip

OPERATE = [
    ("post", "/api/propagations/P/stop/", None),
    ("post", "/api/propagations/P/start/", None),
    ("post", "/api/propagations/P/disable/", None),
    ("post", "/api/propagations/P/enable/", None),
    ("post", "/api/propagations/P/reset/", None),
    ("put", "/api/maintenance/", {"restricted": True, "reason": "upgrade"}),
    ("patch", "/api/maintenance/", {"restricted": True}),
]


@pytest.fixture
def prop(admin_api, mc_table, sc_table, make_queue) -> None:
    make_queue("SRC", mc_table)
    make_queue("DST", sc_table)
    make_queue("D2", sc_table)
    response = admin_api.post(
        "/api/propagations/", {"name": "P", "source_queue": "SRC", "destination_queue": "DST"}
    )
    assert response.status_code == 201, response.content


def _rows() -> tuple:
    return (
        list(Propagation.objects.values()),
        list(PropagationSchedule.objects.values()),
        list(Maintenance.objects.values()),
        ChangeLogEntry.objects.count(),
    )


@pytest.mark.parametrize("path", READS)
def test_a_monitor_reads_every_propagation_endpoint(monitor_api, prop, path):
    response = monitor_api.get(path)

    assert response.status_code == 200, response.content


def test_a_monitor_may_trace_a_message(monitor_api, prop):
    response = monitor_api.post(
        "/api/trace/", {"queue": "SRC", "message": {"kind": "user", "payload": {}}}
    )

    assert response.status_code == 200, response.content


@pytest.mark.parametrize(
    ("method", "path", "body"), CONFIGURE + OPERATE, ids=[f"{m} {p}" for m, p, _ in CONFIGURE + OPERATE]
)  # fmt: skip
def test_a_monitor_changes_nothing(monitor_api, prop, method, path, body):
    before = _rows()

    response = getattr(monitor_api, method)(path, body)

    assert response.status_code == 403, response.content
    assert _rows() == before


@pytest.mark.parametrize(
    ("method", "path", "body"), CONFIGURE, ids=[f"{m} {p}" for m, p, _ in CONFIGURE]
)
def test_an_operator_may_not_change_the_topology(operator_api, prop, method, path, body):
    before = _rows()

    response = getattr(operator_api, method)(path, body)

    assert response.status_code == 403, response.content
    assert _rows() == before


def test_an_operator_runs_propagations_and_maintenance_mode(operator_api, prop):
    for path in ("stop", "start", "disable", "enable"):
        response = operator_api.post(f"/api/propagations/P/{path}/")
        assert response.status_code == 200, (path, response.content)

    on = operator_api.put("/api/maintenance/", {"restricted": True, "reason": "upgrade"})
    assert on.status_code == 200, on.content
    assert (on.json()["restricted"], on.json()["by"], on.json()["reason"]) == (
        True,
        "oscar",
        "upgrade",
    )
    assert operator_api.get("/api/propagations/P/").json()["state"] == "restricted"
    again = operator_api.patch("/api/maintenance/", {"restricted": True})
    assert again.status_code == 409 and "already on" in again.json()["detail"]
    off = operator_api.patch("/api/maintenance/", {"restricted": False})
    assert off.status_code == 200 and off.json()["restricted"] is False


def test_an_administrator_does_everything(admin_api, prop):
    for method, path, body in CONFIGURE[:2] + OPERATE[:4]:
        response = getattr(admin_api, method)(path, body)
        assert response.status_code in (200, 201), (path, response.content)


@pytest.mark.parametrize("path", ["/api/propagations/", "/api/workers/", "/api/maintenance/"])
def test_anonymous_and_roleless_users_are_refused(token_client, roleless_user, prop, path):
    assert APIClient().get(path).status_code == 401
    assert token_client(roleless_user).get(path).status_code == 403
    assert token_client(roleless_user).post("/api/trace/", {"queue": "SRC"}).status_code == 403
