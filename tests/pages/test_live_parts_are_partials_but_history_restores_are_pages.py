"""The polled parts of the dashboard, the lists, the queue page and the status views answer
an HTMX poll with the part alone; a history restore (htmx 2 sends one as an HTMX request when a
page is missing from its cache) gets the whole page, or the user would see a bare table."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

POLL = {"HTTP_HX_REQUEST": "true"}
RESTORE = {"HTTP_HX_REQUEST": "true", "HTTP_HX_HISTORY_RESTORE_REQUEST": "true"}
NAVBAR = 'class="navbar-brand"'


@pytest.mark.parametrize(
    ("path", "part"),
    [
        ("/?fragment=live", 'id="dashboard-live"'),
        ("/?fragment=instances", 'id="dashboard-instances-live"'),
        ("/queues/?q=ORD", 'hx-trigger="every 3s"'),
        ("/queues/{pk}/?fragment=summary", 'id="queue-depth"'),
        ("/status/?view=dba_queues", 'id="status-table"'),
        ("/propagations/", 'id="propagation-table"'),
        ("/propagations/workers/", 'id="worker-table"'),
        ("/spark/", 'id="spark-table"'),
        ("/gateway/agents/", 'id="gateway-table"'),
    ],
)
def test_a_poll_gets_the_part_and_a_history_restore_the_page(admin_client, queue, path, part):
    url = path.format(pk=queue.pk)
    polled = admin_client.get(url, **POLL).content.decode()
    assert part in polled
    assert NAVBAR not in polled
    restored = admin_client.get(url, **RESTORE).content.decode()
    assert NAVBAR in restored
    assert part in restored
