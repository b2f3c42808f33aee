"""After a window runs, the API shows it: the propagation's schedule totals and runs, the Oracle
status views (column names and rows), and a failed schedule that the failing filter and the
attention list point at, until an operator resets it."""

from __future__ import annotations

import pytest

from jobs.models import Propagation
from tests.jobs.helpers import enqueue, payloads_at, run_now

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fast_windows")]


@pytest.fixture
def moved(admin_api, mc_table, sc_table, make_queue, rule_set) -> Propagation:
    """P moved the two messages its rule set takes from SRC to DST, in one window."""
    src, dst = make_queue("SRC", mc_table), make_queue("DST", sc_table)
    rule_set("RS", ":msg.n < 2")
    response = admin_api.post(
        "/api/propagations/",
        {
            "name": "P",
            "source_queue": "SRC",
            "destination_queue": "DST",
            "positive_rule_set": "RS",
            "duration": 3600,
            "next_time": "*/5 * * * *",
        },
    )
    assert response.status_code == 201, response.content
    enqueue(src, [{"n": i} for i in range(4)])
    p = Propagation.objects.get(name="P")
    assert run_now(p) == ["SUCCEEDED: slice"]
    assert payloads_at(dst) == [{"n": 0}, {"n": 1}]
    return p


@pytest.fixture
def failed(admin_api, mc_table, make_queue) -> Propagation:
    """BROKEN propagates into a multi-consumer queue nobody subscribes to: its one allowed
    failure disabled the schedule."""
    src = make_queue("B_SRC", mc_table)
    make_queue("NOBODY", mc_table)
    response = admin_api.post(
        "/api/propagations/",
        {"name": "BROKEN", "source_queue": "B_SRC", "destination_queue": "NOBODY", "max_failures": 1},
    )  # fmt: skip
    assert response.status_code == 201, response.content
    enqueue(src, [{"n": 1}])
    p = Propagation.objects.get(name="BROKEN")
    [outcome] = run_now(p)
    assert outcome.startswith("FAILED"), outcome
    return p


def test_the_propagation_shows_its_window_totals_and_runs(monitor_api, moved):
    body = monitor_api.get("/api/propagations/P/").json()
    runs = monitor_api.get("/api/propagations/P/runs/").json()["results"]

    sched = body["schedule"]
    assert (sched["total_runs"], sched["total_number"], sched["total_discarded"]) == (1, 2, 2)
    assert sched["failures"] == 0 and sched["last_run_at"] is not None
    assert body["backlog"] == 0
    done = [r for r in runs if r["state"] == "SUCCEEDED"]
    assert [(r["messages"], r["propagated"], r["discarded"]) for r in done] == [(4, 2, 2)]
    assert done[0]["worker"] == "test" and done[0]["elapsed"] > 0
    assert done[0]["end_reason"] == "slice"


def test_the_status_views_list_oracle_columns_and_rows(monitor_api, moved):
    def rows(view: str) -> list[dict]:
        response = monitor_api.get(f"/api/status/{view}/")
        assert response.status_code == 200, response.content
        return response.json()["results"]

    [prop] = rows("dba_propagation")
    [sched] = rows("dba_queue_schedules")
    [sender] = rows("v_propagation_sender")
    [receiver] = rows("v_propagation_receiver")

    assert {
        "propagation_name", "source_queue_owner", "source_queue_name", "destination_queue_owner",
        "destination_queue_name", "destination_dblink", "rule_set_owner", "rule_set_name",
        "negative_rule_set_owner", "negative_rule_set_name", "queue_to_queue", "status",
        "error_message", "error_date",
    } == set(prop)  # fmt: skip
    assert (prop["propagation_name"], prop["source_queue_name"], prop["status"]) == (
        "P",
        "SRC",
        "ENABLED",
    )
    assert (prop["destination_queue_name"], prop["rule_set_name"]) == ("DST", "RS")
    assert {"qname", "destination", "propagation_window", "next_time", "latency",
            "schedule_disabled", "total_number", "total_bytes", "failures",
            "last_error_msg"} <= set(sched)  # fmt: skip
    assert "schedule_id" not in sched and "propagation_id" not in prop
    assert (sched["qname"], sched["destination"], sched["total_number"]) == (
        "SRC",
        '"alice"."DST"@LOCAL',
        2,
    )
    assert (sched["propagation_window"], sched["next_time"], sched["schedule_disabled"]) == (
        3600.0,
        "*/5 * * * *",
        "N",
    )
    assert {"queue_name", "dst_queue_name", "total_msgs", "unacknowledged"} <= set(sender)
    assert (sender["queue_name"], sender["total_msgs"], sender["unacknowledged"]) == ("SRC", 2, 0)
    assert {"src_queue_name", "dst_queue_name", "total_msgs", "last_received"} <= set(receiver)
    assert (receiver["src_queue_name"], receiver["total_msgs"]) == ("SRC", 2)


def test_a_failed_schedule_is_found_by_the_failing_filter_and_the_attention_list(
    monitor_api, moved, failed
):
    body = monitor_api.get("/api/propagations/BROKEN/").json()
    failing = monitor_api.get("/api/propagations/?failing=true").json()["results"]
    by_state = monitor_api.get("/api/propagations/?state=failed").json()["results"]
    attention = monitor_api.get("/api/attention/").json()
    [run] = monitor_api.get("/api/propagation-runs/?failed=true").json()["results"]

    assert (body["state"], body["schedule"]["failures"], body["schedule"]["enabled"]) == (
        "failed",
        1,
        False,
    )
    assert body["schedule"]["last_error_msg"] and body["schedule"]["last_error_at"]
    assert [p["name"] for p in failing] == [p["name"] for p in by_state] == ["BROKEN"]
    assert [p["name"] for p in attention["failing"]] == ["BROKEN"]
    assert attention["failing"][0]["failures"] == 1 and attention["failing"][0]["last_error_msg"]
    assert attention["total"] == 2 and attention["maintenance"]["restricted"] is False
    assert (run["propagation"], run["state"]) == ("BROKEN", "FAILED") and run["error"]


def test_an_operator_resets_a_failed_schedule_once(operator_api, failed):
    reset = operator_api.post("/api/propagations/BROKEN/reset/")

    assert reset.status_code == 200, reset.content
    sched = reset.json()["schedule"]
    assert (sched["failures"], sched["enabled"]) == (0, True)
    assert reset.json()["state"] != "failed"
    again = operator_api.post("/api/propagations/BROKEN/reset/")
    assert again.status_code == 409 and "no failures to reset" in again.json()["detail"]
