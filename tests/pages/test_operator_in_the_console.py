"""An operator runs queues from the console but gets 403 on topology changes."""

from __future__ import annotations

import pytest

from core.models import ChangeLogEntry
from tests.pages.role_pages import OPERATOR_POSTS, TOPOLOGY_POSTS, fill, ids, label


@pytest.mark.parametrize(("path", "data"), TOPOLOGY_POSTS, ids=map(label, TOPOLOGY_POSTS))
def test_operator_topology_posts_are_refused_and_nothing_changes(
    operator_client, topology, snapshot, path, data
):
    keys = ids(topology)
    before = snapshot()

    response = operator_client.post(fill(path, keys), fill(data, keys))

    assert response.status_code == 403
    before.assert_unchanged()


@pytest.mark.parametrize(("path", "data"), OPERATOR_POSTS, ids=map(label, OPERATOR_POSTS))
def test_operator_actions_succeed(operator_client, topology, path, data):
    keys = ids(topology)

    response = operator_client.post(fill(path, keys), fill(data, keys))

    assert response.status_code in (200, 302), response.content.decode()[:2000]
    if response.status_code == 200:
        assert 'class="alert alert-danger' not in response.content.decode()


def test_operator_stop_and_purge_are_logged(operator_client, topology):
    keys = ids(topology)

    operator_client.post(f"/queues/{keys['orders']}/stop/", {"what": "enqueue"})
    operator_client.post(f"/queues/{keys['orders']}/purge/", {"confirm": "orders"})

    assert list(
        ChangeLogEntry.objects.filter(username="oscar")
        .order_by("id")
        .values_list("verb", flat=True)
    ) == ["queue_stop", "queue_purge"]
