"""List pages issue the same number of SQL queries for 5 rows or 45 (no N+1)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from queues import engine, services


def _grow(admin_user, operator_user, start: int, stop: int) -> None:
    for i in range(start, stop):
        qt = services.queue_table_create(
            user=admin_user, name=f"QT_{i}", sort_order="enq_time", multiple_consumers=True
        )
        q = services.queue_create(user=admin_user, name=f"Q_{i}", queue_table=qt)
        services.subscriber_add(user=admin_user, queue=q, name=f"SUB_{i}")
        services.message_enqueue(
            user=admin_user,
            queue=q,
            messages=[engine.NewMessage(payload={"i": i}), engine.NewMessage(payload=i, delay=60)],
        )
        agent = services.agent_create(user=admin_user, name=f"AGENT_{i}")
        services.agent_enable_db_access(user=admin_user, agent=agent, db_user=operator_user)
        services.queue_privilege_grant(
            user=admin_user, queue=q, grantee=operator_user, privilege="ALL"
        )


def _count(client, path: str) -> int:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path)
    assert response.status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.parametrize(
    ("path", "row_marker"),
    [
        ("/queues/", 'href="/queues/tables/'),
        ("/queues/tables/", 'href="/queues/tables/'),
        ("/queues/agents/", "AGENT_"),
        ("/queues/privileges/", "Q_"),
        ("/changelog/", 'href="/changelog/'),
        ("/queues/status/?view=dba_queues", "QT_"),
        ("/queues/status/?view=dba_queue_tables", "QT_"),
        ("/queues/status/?view=dba_aq_agent_privs", "AGENT_"),
    ],
)
def test_a_list_page_costs_the_same_number_of_queries_for_more_rows(
    admin_client, admin_user, operator_user, path, row_marker
):
    sep = "&" if "?" in path else "?"
    _grow(admin_user, operator_user, 0, 5)
    small = _count(admin_client, f"{path}{sep}per_page=5")

    _grow(admin_user, operator_user, 5, 45)
    large = _count(admin_client, f"{path}{sep}per_page=45")
    html = admin_client.get(f"{path}{sep}per_page=45").content.decode()

    assert html.count(row_marker) >= 45  # the larger page really shows more rows
    assert large == small


def test_the_queue_page_costs_the_same_for_more_messages(admin_client, admin_user, queue):
    services.message_enqueue(
        user=admin_user, queue=queue, messages=[engine.NewMessage(payload=i) for i in range(3)]
    )
    small = _count(admin_client, f"/queues/{queue.pk}/?per_page=3")

    services.message_enqueue(
        user=admin_user, queue=queue, messages=[engine.NewMessage(payload=i) for i in range(40)]
    )
    large = _count(admin_client, f"/queues/{queue.pk}/?per_page=40")

    assert large == small


def test_the_queue_table_page_costs_the_same_for_more_queues(admin_client, admin_user, queue):
    small = _count(admin_client, f"/queues/tables/{queue.queue_table_id}/")

    for i in range(20):
        services.queue_create(user=admin_user, name=f"MORE_{i}", queue_table=queue.queue_table)
    large = _count(admin_client, f"/queues/tables/{queue.queue_table_id}/")

    assert large == small
