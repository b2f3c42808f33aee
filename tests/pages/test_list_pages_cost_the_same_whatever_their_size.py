"""List pages issue the same number of SQL queries for 5 rows or 45 (no N+1)."""

from __future__ import annotations

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


# (page, a marker each row of it shows)
PAGES = [
    ("/queues/", 'href="/queues/tables/'),
    ("/queues/tables/", 'href="/queues/tables/'),
    ("/queues/agents/", "AGENT_"),
    ("/queues/privileges/", "Q_"),
    ("/changelog/", 'href="/changelog/'),
    ("/queues/status/?view=dba_queues", "QT_"),
    ("/queues/status/?view=dba_queue_tables", "QT_"),
    ("/queues/status/?view=dba_aq_agent_privs", "AGENT_"),
]


def _sized(path: str, size: int) -> str:
    return f"{path}{'&' if '?' in path else '?'}per_page={size}"


def test_every_list_page_costs_the_same_number_of_queries_for_more_rows(
    admin_client, admin_user, operator_user
):
    # One topology for every page (building 45 of each took 20 s a page): each page is read at
    # 5 rows, then at 45 once the rest is built; a failure names every page that differs.
    _grow(admin_user, operator_user, 0, 5)
    small = {path: _count(admin_client, _sized(path, 5)) for path, _ in PAGES}
    _grow(admin_user, operator_user, 5, 45)
    large = {path: _count(admin_client, _sized(path, 45)) for path, _ in PAGES}

    # The larger page really shows more rows.
    shown = {
        path: admin_client.get(_sized(path, 45)).content.decode().count(marker)
        for path, marker in PAGES
    }
    assert {p: n for p, n in shown.items() if n < 45} == {}, "pages showing fewer than 45 rows"
    queries = {path: (small[path], large[path]) for path, _ in PAGES}
    assert {p: q for p, q in queries.items() if q[0] != q[1]} == {}, "queries at 5 and 45 rows"


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
