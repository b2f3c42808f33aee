"""A button the propagation's state does not allow (start a started one, reset a schedule without
failures, enable an unscheduled one) shows the service's reason and changes nothing."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/propagations/{pk}/start/", "Propagation P_SRC_DST is already started."),
        ("/propagations/{pk}/schedule/enable/", "The schedule of P_SRC_DST is already enabled."),
        ("/propagations/{pk}/schedule/reset/", "has no failures to reset"),
    ],
)
def test_an_action_the_state_does_not_allow_shows_the_conflict_and_changes_nothing(
    operator_client, propagation, propagation_snapshot, path, message
):
    before = propagation_snapshot()

    response = operator_client.post(path.format(pk=propagation.pk), follow=True)

    assert response.status_code == 200
    html = response.content.decode()
    assert message in html
    assert "alert-danger" in html
    before.assert_unchanged()


def test_schedule_actions_on_an_unscheduled_propagation_say_it_has_no_schedule(
    admin_client, admin_user, propagation, propagation_snapshot
):
    from jobs import services

    services.schedule_delete(user=admin_user, propagation=propagation)
    before = propagation_snapshot()

    for verb in ("schedule/enable/", "schedule/disable/", "schedule/reset/", "unschedule/"):
        response = admin_client.post(f"/propagations/{propagation.pk}/{verb}", follow=True)
        assert "has no schedule" in response.content.decode(), verb

    response = admin_client.post(f"/propagations/{propagation.pk}/schedule/edit/", {"latency": "3"})
    assert response.status_code == 400 and "has no schedule" in response.content.decode()
    before.assert_unchanged()


def test_scheduling_a_scheduled_propagation_is_refused_on_the_form(
    admin_client, propagation, propagation_snapshot
):
    before = propagation_snapshot()

    response = admin_client.post(f"/propagations/{propagation.pk}/schedule/", {"latency": "3"})

    assert response.status_code == 400
    assert 'data-field="__all__"' in response.content.decode()
    assert "already scheduled" in response.content.decode()
    before.assert_unchanged()


def test_turning_maintenance_mode_off_when_it_is_off_says_so(operator_client, propagation_snapshot):
    before = propagation_snapshot()

    response = operator_client.post("/propagations/maintenance/", {}, follow=True)

    assert "Maintenance mode is already off." in response.content.decode()
    before.assert_unchanged()


def test_a_get_on_an_action_url_changes_nothing(operator_client, propagation, propagation_snapshot):
    before = propagation_snapshot()

    response = operator_client.get(f"/propagations/{propagation.pk}/stop/")

    assert response.status_code == 302
    before.assert_unchanged()
