"""A monitor sees every page but every change it tries is a 403 and changes nothing."""

from __future__ import annotations

import pytest

from queues.models import Message
from tests.pages.role_pages import OPERATOR_POSTS, TOPOLOGY_POSTS, fill, ids, label

READ_PAGES = [
    "/",
    "/queues/",
    "/queues/{orders}/",
    "/queues/{events}/",
    "/queues/{exception_queue}/",
    "/queues/tables/",
    "/queues/tables/{qt_orders}/",
    "/queues/agents/",
    "/queues/privileges/",
    "/queues/status/",
    "/queues/status/?view=dba_queue_tables",
    "/queues/status/?view=dba_aq_agent_privs",
    "/changelog/",
]

FORM_PAGES = [
    "/queues/add/",
    "/queues/{orders}/edit/",
    "/queues/{orders}/delete/",
    "/queues/{orders}/purge/",
    "/queues/{exception_queue}/replay/",
    "/queues/{events}/subscribers/add/",
    "/queues/tables/add/",
    "/queues/tables/{qt_orders}/edit/",
    "/queues/tables/{qt_orders}/delete/",
    "/queues/agents/add/",
    "/queues/privileges/grant/",
]


@pytest.mark.parametrize("path", READ_PAGES)
def test_monitor_sees_every_page(monitor_client, topology, path):
    response = monitor_client.get(fill(path, ids(topology)))

    assert response.status_code == 200


@pytest.mark.parametrize("path", FORM_PAGES)
def test_monitor_is_not_shown_the_change_forms(monitor_client, topology, path):
    assert monitor_client.get(fill(path, ids(topology))).status_code == 403


@pytest.mark.parametrize(
    ("path", "data"),
    TOPOLOGY_POSTS + OPERATOR_POSTS,
    ids=map(label, TOPOLOGY_POSTS + OPERATOR_POSTS),
)
def test_monitor_posts_are_refused_and_nothing_changes(
    monitor_client, topology, snapshot, path, data
):
    keys = ids(topology)
    before = snapshot()

    response = monitor_client.post(fill(path, keys), fill(data, keys))

    assert response.status_code == 403
    before.assert_unchanged()


def test_monitor_can_browse_from_the_queue_page(monitor_client, topology):
    keys = ids(topology)
    before = list(Message.objects.values_list("id", "state", "attempts"))

    response = monitor_client.post(
        f"/queues/{keys['orders']}/dequeue/",
        {"mode": "BROWSE", "navigation": "FIRST_MESSAGE", "batch": 5, "wait": 0},
    )

    assert response.status_code == 200
    assert response.content.decode().count('class="aq-payload"') == 2
    assert list(Message.objects.values_list("id", "state", "attempts")) == before


def test_monitor_is_not_offered_buttons_it_cannot_use(monitor_client, admin_client, topology):
    page = f"/queues/{ids(topology)['orders']}/"

    monitor_html = monitor_client.get(page).content.decode()
    admin_html = admin_client.get(page).content.decode()

    assert "/purge/" in admin_html
    assert "/purge/" not in monitor_html
