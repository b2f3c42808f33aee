"""The API's list endpoints issue the same number of SQL queries for 5 rows or 45."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from queues import engine, services
from queues.models import Queue


def _grow(admin_user, operator_user, start: int, stop: int) -> None:
    """Add queue tables, queues (with messages and subscribers), agents with users, grants."""
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


def _count(client, path: str) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path)
    assert response.status_code == 200, response.content
    return len(ctx.captured_queries), len(response.json()["results"])


PATHS = [
    "/api/queues/",
    "/api/queue-tables/",
    "/api/messages/",
    "/api/subscribers/",
    "/api/agents/",
    "/api/privileges/",
    "/api/changelog/",
    "/api/status/dba_queue_tables/",
    "/api/status/dba_queues/",
    "/api/status/dba_aq_agent_privs/",
]


def test_every_list_costs_the_same_number_of_queries_for_more_rows(
    monitor_api, admin_user, operator_user
):
    # One topology for every list (building 45 of each took 20 s a list): each list is read at
    # 5 rows, then at 45 once the rest is built; a failure names every list that differs.
    _grow(admin_user, operator_user, 0, 5)
    small = {path: _count(monitor_api, f"{path}?limit=5") for path in PATHS}

    _grow(admin_user, operator_user, 5, 45)
    large = {path: _count(monitor_api, f"{path}?limit=45") for path in PATHS}

    rows = {path: (small[path][1], large[path][1]) for path in PATHS}
    assert rows == dict.fromkeys(PATHS, (5, 45))
    queries = {path: (small[path][0], large[path][0]) for path in PATHS}
    assert {p: q for p, q in queries.items() if q[0] != q[1]} == {}, "queries at 5 and 45 rows"


def test_the_queue_list_reads_depths_and_counters_without_extra_queries(
    monitor_api, admin_user, operator_user
):
    _grow(admin_user, operator_user, 0, 3)

    with CaptureQueriesContext(connection) as ctx:
        rows = monitor_api.get("/api/queues/?kind=NORMAL_QUEUE").json()["results"]

    assert {(r["depth_ready"], r["depth_waiting"], r["enqueued"]) for r in rows} == {(1, 1, 2)}
    # token + user, groups for the role, count, page, and the page's depths and counters (two
    # grouped queries over the page's queues): nothing per queue.
    assert len(ctx.captured_queries) <= 7
    assert Queue.objects.count() == 6
