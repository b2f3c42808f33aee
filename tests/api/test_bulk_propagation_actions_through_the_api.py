"""POST /api/propagations/bulk/: enable, disable, reset failures and delete many propagations,
each through its own service; one the state refuses keeps its state, the others are done."""

from __future__ import annotations

import pytest

from jobs import services as js
from jobs.models import Propagation, PropagationSchedule

pytestmark = pytest.mark.django_db

URL = "/api/propagations/bulk/"


@pytest.fixture
def props(admin_user, mc_table, sc_table, make_queue) -> list[Propagation]:
    source = make_queue("SRC", mc_table)
    made = []
    for name in ("P1", "P2", "P3"):
        dest = make_queue(f"DST_{name}", sc_table)
        made.append(
            js.propagation_create(
                user=admin_user, name=name, source_queue=source, destination_queue=dest
            )
        )
    return made


def _enabled(*props: Propagation) -> list[bool]:
    return [
        PropagationSchedule.objects.get(propagation=p).enabled
        for p in sorted(props, key=lambda p: p.name)
    ]


def test_operator_disables_and_enables_many_schedules(operator_api, props):
    ids = [p.pk for p in props]

    disabled = operator_api.post(URL, {"action": "disable", "ids": ids})

    assert disabled.status_code == 200, disabled.content
    assert (disabled.json()["done"], disabled.json()["refused"]) == (3, 0)
    assert _enabled(*props) == [False, False, False]

    enabled = operator_api.post(URL, {"action": "enable", "ids": ids})

    assert enabled.status_code == 200, enabled.content
    assert _enabled(*props) == [True, True, True]


def test_an_already_enabled_schedule_is_refused_and_the_others_are_enabled(operator_api, props):
    js.schedule_disable(user=None, propagation=props[0])
    js.schedule_disable(user=None, propagation=props[2])

    response = operator_api.post(URL, {"action": "enable", "ids": [p.pk for p in props]})

    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert [r["outcome"] for r in results] == ["done", "refused", "done"]
    assert results[1] == {
        "id": props[1].pk,
        "name": "P2",
        "outcome": "refused",
        "detail": "The schedule of P2 is already enabled.",
        "code": "conflict",
    }
    assert _enabled(*props) == [True, True, True]


def test_reset_clears_failures_where_there_are_some(operator_api, props):
    # As the runner leaves a schedule that failed max_failures times: disabled, failures kept.
    PropagationSchedule.objects.filter(propagation=props[0]).update(failures=3, enabled=False)

    response = operator_api.post(URL, {"action": "reset", "ids": [props[0].pk, props[1].pk]})

    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert [r["outcome"] for r in results] == ["done", "refused"]
    assert "no failures to reset" in results[1]["detail"]
    schedule = PropagationSchedule.objects.get(propagation=props[0])
    assert (schedule.failures, schedule.enabled) == (0, True)


def test_administrator_deletes_many_propagations(admin_api, props):
    response = admin_api.post(URL, {"action": "delete", "ids": [props[0].pk, props[2].pk]})

    assert response.status_code == 200, response.content
    assert response.json()["done"] == 2
    assert list(Propagation.objects.values_list("name", flat=True)) == ["P2"]


def test_unknown_action_and_ids_are_400s_naming_the_field(operator_api, props):
    before = _enabled(*props)

    bad_action = operator_api.post(URL, {"action": "stop", "ids": [props[0].pk]})
    bad_ids = operator_api.post(URL, {"action": "disable", "ids": [props[0].pk, 424242]})
    no_ids = operator_api.post(URL, {"action": "disable", "ids": []})

    assert (bad_action.status_code, list(bad_action.json())) == (400, ["action"])
    assert "one of: enable, disable, reset, delete" in bad_action.json()["action"][0]
    assert bad_ids.status_code == 400
    assert bad_ids.json() == {"ids": ["No propagation with id 424242."]}
    assert no_ids.json() == {"ids": ["Select at least one propagation."]}
    assert _enabled(*props) == before


def test_roles_are_those_of_the_single_propagation_actions(monitor_api, operator_api, props):
    ids = [p.pk for p in props]

    assert monitor_api.post(URL, {"action": "disable", "ids": ids}).status_code == 403
    assert operator_api.post(URL, {"action": "delete", "ids": ids}).status_code == 403
    assert _enabled(*props) == [True, True, True]
    assert Propagation.objects.count() == 3
