"""An administrator may make every change from the console; each is logged."""

from __future__ import annotations

import pytest

from core.models import ChangeLogEntry
from tests.pages.role_pages import TOPOLOGY_POSTS, fill, ids, label


@pytest.mark.parametrize(("path", "data"), TOPOLOGY_POSTS, ids=map(label, TOPOLOGY_POSTS))
def test_administrator_topology_posts_succeed_and_are_logged(admin_client, topology, path, data):
    keys = ids(topology)
    log_rows = ChangeLogEntry.objects.count()

    response = admin_client.post(fill(path, keys), fill(data, keys))

    assert response.status_code == 302, response.content.decode()[:3000]
    assert ChangeLogEntry.objects.count() == log_rows + 1
