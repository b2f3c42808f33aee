"""Propagation buttons and forms by role: a monitor changes nothing (403), an operator runs
propagations but cannot change the topology, an administrator can do everything."""

from __future__ import annotations

import pytest

from jobs.models import Maintenance, Propagation, PropagationSchedule

OPERATE_POSTS = [
    "/propagations/{pk}/stop/",
    "/propagations/{pk}/start/",
    "/propagations/{pk}/schedule/disable/",
    "/propagations/{pk}/schedule/enable/",
    "/propagations/{pk}/schedule/reset/",
    "/propagations/maintenance/",
]

CONFIGURE_POSTS = [
    "/propagations/add/",
    "/propagations/{pk}/edit/",
    "/propagations/{pk}/schedule/",
    "/propagations/{pk}/schedule/edit/",
    "/propagations/{pk}/unschedule/",
    "/propagations/{pk}/delete/",
]


@pytest.mark.parametrize("path", OPERATE_POSTS + CONFIGURE_POSTS)
def test_a_monitor_may_not_post_anything(monitor_client, propagation, propagation_snapshot, path):
    before = propagation_snapshot()

    response = monitor_client.post(path.format(pk=propagation.pk), {"restricted": "on"})

    assert response.status_code == 403
    before.assert_unchanged()


@pytest.mark.parametrize("path", CONFIGURE_POSTS)
def test_an_operator_may_not_change_the_topology(
    operator_client, propagation, propagation_snapshot, path
):
    before = propagation_snapshot()

    response = operator_client.post(path.format(pk=propagation.pk), {"name": "X"})

    assert response.status_code == 403
    before.assert_unchanged()


def _schedule(propagation: Propagation) -> PropagationSchedule:
    return PropagationSchedule.objects.get(propagation=propagation)


def test_an_operator_stops_and_starts_a_propagation(operator_client, propagation):
    response = operator_client.post(f"/propagations/{propagation.pk}/stop/", follow=True)

    assert "Propagation P_SRC_DST stopped." in response.content.decode()
    assert not Propagation.objects.get(pk=propagation.pk).enabled
    assert 'data-state="stopped"' in response.content.decode()

    operator_client.post(f"/propagations/{propagation.pk}/start/")
    assert Propagation.objects.get(pk=propagation.pk).enabled


def test_an_operator_disables_and_enables_the_schedule(operator_client, propagation):
    response = operator_client.post(
        f"/propagations/{propagation.pk}/schedule/disable/", follow=True
    )

    assert "Schedule of P_SRC_DST disabled." in response.content.decode()
    assert not _schedule(propagation).enabled

    operator_client.post(f"/propagations/{propagation.pk}/schedule/enable/")
    assert _schedule(propagation).enabled


def test_an_operator_resets_a_failed_schedule(operator_client, propagation):
    # The state a run leaves behind after max_failures consecutive failures.
    PropagationSchedule.objects.filter(propagation=propagation).update(
        failures=16, enabled=False, last_error_msg="connection refused"
    )
    html = operator_client.get(f"/propagations/{propagation.pk}/").content.decode()
    assert 'data-state="failed"' in html
    assert f'action="/propagations/{propagation.pk}/schedule/reset/"' in html

    response = operator_client.post(f"/propagations/{propagation.pk}/schedule/reset/", follow=True)

    assert "Failures of P_SRC_DST cleared" in response.content.decode()
    s = _schedule(propagation)
    assert (s.failures, s.enabled) == (0, True)


def test_an_operator_turns_maintenance_mode_on_and_everyone_sees_the_banner(
    operator_client, monitor_client, propagation
):
    response = operator_client.post(
        "/propagations/maintenance/",
        {"restricted": "on", "reason": "database upgrade", "next": "/"},
    )

    assert response.status_code == 302 and response["Location"] == "/"
    m = Maintenance.objects.get(pk=1)
    assert m.restricted and m.reason == "database upgrade" and m.by == "oscar"
    for path in ("/", "/propagations/", f"/propagations/{propagation.pk}/"):
        html = monitor_client.get(path).content.decode()
        assert 'id="maintenance-banner"' in html and "database upgrade" in html, path
        assert 'id="maintenance-off"' not in html  # a monitor gets no switch
    assert 'data-state="restricted"' in monitor_client.get("/propagations/").content.decode()

    operator_client.post("/propagations/maintenance/", {"next": "/propagations/"})
    assert not Maintenance.objects.get(pk=1).restricted
    assert 'id="maintenance-banner"' not in monitor_client.get("/").content.decode()


def test_maintenance_mode_never_redirects_off_the_site(operator_client):
    response = operator_client.post(
        "/propagations/maintenance/", {"restricted": "on", "next": "https://evil.example/"}
    )

    assert response["Location"] == "/propagations/"


def test_an_administrator_creates_a_scheduled_propagation_with_the_form(
    admin_client, propagation_queues
):
    q = propagation_queues
    response = admin_client.post(
        "/propagations/add/",
        {
            "name": "P_NEW",
            "source_queue": q["src"].pk,
            "destination_queue": q["other"].pk,
            "positive_rule_set": q["rule_set"].pk,
            "queue_to_queue": "on",
            "comment": "made in the console",
            "schedule_now": "on",
            "duration": "30",
            "next_time": "*/5 * * * *",
            "latency": "2",
            "max_failures": "4",
        },
    )

    p = Propagation.objects.get(name="P_NEW")
    assert response.status_code == 302 and response["Location"] == f"/propagations/{p.pk}/"
    assert (p.source_queue, p.destination_queue, p.positive_rule_set) == (
        q["src"],
        q["other"],
        q["rule_set"],
    )
    s = _schedule(p)
    assert (s.duration, s.next_time, s.latency, s.max_failures) == (30, "*/5 * * * *", 2, 4)


def test_an_administrator_creates_an_unscheduled_propagation_and_schedules_it_later(
    admin_client, propagation_queues
):
    q = propagation_queues
    admin_client.post(
        "/propagations/add/",
        {
            "name": "P_LATER",
            "source_queue": q["src"].pk,
            "destination_queue": q["other"].pk,
            "latency": "3",
            "next_time": "this is ignored: no schedule is made",
        },
    )
    p = Propagation.objects.get(name="P_LATER")
    assert not PropagationSchedule.objects.filter(propagation=p).exists()

    response = admin_client.post(
        f"/propagations/{p.pk}/schedule/", {"latency": "0.5", "duration": "", "next_time": ""}
    )

    assert response.status_code == 302
    assert _schedule(p).latency == 0.5


def test_an_administrator_edits_rule_sets_and_alters_and_drops_the_schedule(
    admin_client, propagation, propagation_queues
):
    pk = propagation.pk
    admin_client.post(
        f"/propagations/{pk}/edit/",
        {"negative_rule_set": propagation_queues["rule_set"].pk, "comment": "not EU"},
    )
    p = Propagation.objects.get(pk=pk)
    assert (p.negative_rule_set, p.positive_rule_set, p.comment) == (
        propagation_queues["rule_set"],
        None,
        "not EU",
    )

    response = admin_client.post(
        f"/propagations/{pk}/schedule/edit/",
        {"duration": "120", "next_time": "PT1H", "latency": "7", "max_failures": "3"},
    )
    assert response.status_code == 302
    s = _schedule(propagation)
    assert (s.duration, s.next_time, s.latency, s.max_failures) == (120, "PT1H", 7, 3)

    admin_client.post(f"/propagations/{pk}/unschedule/")
    assert not PropagationSchedule.objects.filter(propagation_id=pk).exists()


def test_an_administrator_drops_a_propagation_after_confirming(admin_client, propagation):
    pk = propagation.pk
    confirm = admin_client.get(f"/propagations/{pk}/delete/")
    assert confirm.status_code == 200 and "Drop propagation P_SRC_DST?" in confirm.content.decode()
    assert Propagation.objects.filter(pk=pk).exists()  # a GET drops nothing

    response = admin_client.post(f"/propagations/{pk}/delete/", follow=True)

    assert not Propagation.objects.filter(pk=pk).exists()
    assert "Propagation P_SRC_DST dropped." in response.content.decode()
    assert response.redirect_chain[-1][0] == "/propagations/"


def test_posting_the_alter_form_unchanged_keeps_the_schedule(admin_client, propagation):
    before = _schedule(propagation)
    form = admin_client.get(f"/propagations/{propagation.pk}/schedule/edit/").context["form"]
    data = {
        name: form[name].value() if form[name].value() is not None else "" for name in form.fields
    }
    data["start_time"] = form["start_time"].field.widget.format_value(form["start_time"].value())

    response = admin_client.post(f"/propagations/{propagation.pk}/schedule/edit/", data)

    assert response.status_code == 302
    after = _schedule(propagation)
    assert after.start_time == before.start_time.replace(microsecond=0)
    assert (after.latency, after.duration, after.next_time, after.max_failures) == (
        before.latency,
        before.duration,
        before.next_time,
        before.max_failures,
    )
