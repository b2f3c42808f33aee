"""Every propagation page opens for every role, and shows each role only the buttons it may use."""

from __future__ import annotations

import pytest

# Each page and a text it must show.
PAGES = [
    ("/", 'id="attention"'),
    ("/propagations/", "P_SRC_DST"),
    ("/propagations/?state=idle&q=SRC", "P_SRC_DST"),
    ("/propagations/{pk}/", "P_SRC_DST"),
    ("/propagations/{pk}/status/", 'id="propagation-status"'),
    ("/propagations/runs/", "Propagation runs"),
    ("/propagations/runs/?propagation={pk}&state=FAILED", "No runs."),
    ("/propagations/workers/", 'id="worker-table"'),
]

CONFIGURE_FORMS = [
    "/propagations/add/",
    "/propagations/{pk}/edit/",
    "/propagations/{pk}/schedule/edit/",
    "/propagations/{pk}/schedule/",
    "/propagations/{pk}/delete/",
]


@pytest.mark.parametrize("role", ["admin", "operator", "monitor"])
@pytest.mark.parametrize(("path", "marker"), PAGES)
def test_every_propagation_page_opens_for_every_role(request, propagation, role, path, marker):
    client = request.getfixturevalue(f"{role}_client")

    response = client.get(path.format(pk=propagation.pk))

    assert response.status_code == 200
    assert marker in response.content.decode()


@pytest.mark.parametrize("path", CONFIGURE_FORMS)
def test_configuration_forms_open_for_an_administrator_only(
    admin_client, operator_client, monitor_client, propagation, path
):
    path = path.format(pk=propagation.pk)
    assert admin_client.get(path).status_code == 200
    assert operator_client.get(path).status_code == 403
    assert monitor_client.get(path).status_code == 403


def test_the_propagations_link_in_the_bar_leads_to_the_list(admin_client, propagation):
    html = admin_client.get("/").content.decode()

    assert 'href="/propagations/"' in html
    assert 'href="/propagations/workers/"' in html


def _buttons(client, propagation) -> str:  # type: ignore[no-untyped-def]
    return client.get(f"/propagations/{propagation.pk}/").content.decode()


def test_a_monitor_sees_no_action_buttons(monitor_client, propagation):
    html = _buttons(monitor_client, propagation)

    for action in ("stop/", "schedule/disable/", "edit/", "delete/", "unschedule/", "maintenance/"):
        assert f"/propagations/{propagation.pk}/{action}" not in html
    assert "/propagations/maintenance/" not in html


def test_an_operator_sees_run_buttons_but_no_configuration_buttons(operator_client, propagation):
    html = _buttons(operator_client, propagation)

    assert f'action="/propagations/{propagation.pk}/stop/"' in html
    assert f'action="/propagations/{propagation.pk}/schedule/disable/"' in html
    assert 'action="/propagations/maintenance/"' in html
    for action in ("edit/", "delete/", "unschedule/", "schedule/edit/"):
        assert f"/propagations/{propagation.pk}/{action}" not in html


def test_an_administrator_sees_every_button_the_state_allows(admin_client, propagation):
    html = _buttons(admin_client, propagation)

    for action in ("stop/", "schedule/disable/", "edit/", "delete/", "unschedule/"):
        assert f"/propagations/{propagation.pk}/{action}" in html
    assert f"/propagations/{propagation.pk}/start/" not in html  # already started
    assert f"/propagations/{propagation.pk}/schedule/reset/" not in html  # no failures


def test_an_unscheduled_propagation_offers_schedule_instead_of_unschedule(
    admin_client, admin_user, propagation
):
    from jobs import services

    services.schedule_delete(user=admin_user, propagation=propagation)

    html = _buttons(admin_client, propagation)

    assert f'href="/propagations/{propagation.pk}/schedule/"' in html
    assert f"/propagations/{propagation.pk}/unschedule/" not in html
    assert "Not scheduled" in html


def test_the_detail_page_shows_the_fields_and_the_schedule_parameters(
    admin_client, admin_user, propagation, propagation_queues
):
    from jobs import services

    services.propagation_update(
        user=admin_user,
        propagation=propagation,
        positive_rule_set=propagation_queues["rule_set"],
        comment="EU orders only",
    )
    services.schedule_update(
        user=admin_user, propagation=propagation, duration=60, next_time="10m", latency=1.5
    )

    html = _buttons(admin_client, propagation)

    for text in ("SRC", "DST", "RS_EU", "EU orders only", "60 s", "10m", "1.5 s", "of 16"):
        assert text in html, text
    assert "every 0:10:00 after a window ends" in html
