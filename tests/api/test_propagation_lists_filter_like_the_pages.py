"""The propagation and run lists take the pages' filters (one FilterSet each); a bad filter value
is a 400 naming it."""

from __future__ import annotations

import pytest

from jobs import services
from tests.jobs.helpers import enqueue

pytestmark = pytest.mark.django_db


@pytest.fixture
def three(admin_user, operator_user, mc_table, sc_table, make_queue, rule_set) -> dict:
    """A→B (backlog of 2, rule set EU_RS), A→C stopped, B→C unscheduled."""
    a, b = make_queue("A", mc_table), make_queue("B", mc_table)
    c = make_queue("C", sc_table)
    ab = services.propagation_create(
        user=admin_user,
        name="A_B",
        source_queue=a,
        destination_queue=b,
        positive_rule_set=rule_set("EU_RS", ":msg.region = 'EU'"),
        comment="to the hub",
    )
    ac = services.propagation_create(
        user=admin_user, name="A_C", source_queue=a, destination_queue=c
    )
    services.propagation_stop(user=operator_user, propagation=ac)
    services.propagation_create(
        user=admin_user, name="B_C", source_queue=b, destination_queue=c, schedule=False
    )
    enqueue(a, [{"region": "EU"}, {"region": "US"}])
    return {"a": a, "b": b, "c": c, "ab": ab}


def _names(client, query: str) -> list[str]:  # type: ignore[no-untyped-def]
    response = client.get(f"/api/propagations/?{query}")
    assert response.status_code == 200, response.content
    return [r["name"] for r in response.json()["results"]]


def test_it_filters_by_state(monitor_api, three):
    assert _names(monitor_api, "state=stopped") == ["A_C"]
    assert _names(monitor_api, "state=stopped&state=unscheduled") == ["A_C", "B_C"]
    assert _names(monitor_api, "state=idle") == ["A_B"]


def test_it_filters_by_either_queue(monitor_api, three):
    assert _names(monitor_api, f"queue={three['b'].pk}") == ["A_B", "B_C"]
    assert _names(monitor_api, f"source_queue={three['a'].pk}") == ["A_B", "A_C"]
    assert _names(monitor_api, f"destination_queue={three['c'].pk}") == ["A_C", "B_C"]


def test_a_queue_filter_takes_the_queue_name_as_well_as_its_id(monitor_api, three):
    # The pages type a queue in a text box (a select would list every queue).
    assert _names(monitor_api, "queue=b") == ["A_B", "B_C"]
    assert _names(monitor_api, "source_queue=A") == ["A_B", "A_C"]


def test_it_filters_by_backlog_and_orders_by_it(monitor_api, three):
    assert _names(monitor_api, "has_backlog=true") == ["A_B", "A_C"]
    assert _names(monitor_api, "has_backlog=false") == ["B_C"]
    rows = monitor_api.get("/api/propagations/?ordering=-backlog").json()["results"]
    assert [r["backlog"] for r in rows] == [2, 2, 0]
    assert rows[0]["oldest_backlog"] is not None and rows[2]["oldest_backlog"] is None


def test_it_filters_by_search_rule_set_enabled_and_failing(monitor_api, three):
    assert _names(monitor_api, "q=hub") == ["A_B"]
    assert _names(monitor_api, "q=b_") == ["B_C"]
    assert _names(monitor_api, f"rule_set={three['ab'].positive_rule_set_id}") == ["A_B"]
    assert _names(monitor_api, "enabled=false") == ["A_C"]
    assert _names(monitor_api, "failing=true") == []
    assert _names(monitor_api, "failing=false") == ["A_B", "A_C", "B_C"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("state=exploded", "state"),
        ("queue=NO_SUCH_QUEUE", "queue"),
        ("source_queue=999999", "source_queue"),
        ("rule_set=x", "rule_set"),
    ],
)
def test_a_bad_filter_is_a_400_naming_it(monitor_api, three, query, field):
    response = monitor_api.get(f"/api/propagations/?{query}")

    assert response.status_code == 400, response.content
    assert field in response.json()


def test_the_run_lists_filter_by_propagation_and_state(monitor_api, three):
    services.propagation_dispatch(send=False)  # opens A_B's window: one QUEUED run

    everything = monitor_api.get("/api/propagation-runs/").json()
    queued = monitor_api.get("/api/propagation-runs/?state=QUEUED&state=RUNNING").json()
    failed = monitor_api.get("/api/propagation-runs/?failed=true").json()
    of_ab = monitor_api.get("/api/propagations/A_B/runs/?state=QUEUED").json()
    of_bc = monitor_api.get("/api/propagations/B_C/runs/").json()

    assert everything["count"] == queued["count"] == of_ab["count"] == 1
    assert (failed["count"], of_bc["count"]) == (0, 0)
    [run] = of_ab["results"]
    assert (run["propagation"], run["state"], run["stuck"]) == ("A_B", "QUEUED", False)
    assert monitor_api.get(f"/api/propagation-runs/{run['id']}/").json() == run
    detail = monitor_api.get("/api/propagations/A_B/").json()
    assert detail["run"]["id"] == run["id"]
    assert monitor_api.get("/api/propagation-runs/?state=nope").status_code == 400
    assert monitor_api.get("/api/propagations/A_B/runs/?state=nope").status_code == 400


@pytest.mark.parametrize(
    "path",
    [
        "/api/propagations/?ordering=no_such_field",
        "/api/propagations/?ordering=-state,name",
        "/api/propagations/?limit=abc&offset=-1",
        "/api/propagations/?has_backlog=maybe",
        "/api/propagation-runs/?ordering=-propagated&limit=100000",
        "/api/propagations/99999999999999999999999/",
        "/api/propagation-runs/99999999999999999999999/",
        "/api/propagations/99999999999999999999999/runs/",
        "/api/workers/?ordering=hostname&limit=1",
    ],
)
def test_odd_paging_ordering_and_ids_are_never_a_500(monitor_api, three, path):
    response = monitor_api.get(path)

    assert response.status_code in (200, 404), response.content
