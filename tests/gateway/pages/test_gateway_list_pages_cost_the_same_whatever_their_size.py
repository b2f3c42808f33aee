"""The gateway lists and the dashboard issue the same number of SQL queries for 3 rows or 30."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from gateway import services as gw
from queues import services as qs


def _grow(admin_user, start: int, stop: int) -> None:  # type: ignore[no-untyped-def]
    sc = qs.queue_table_create(user=admin_user, name=f"QT_{start}", sort_order="enq_time")
    for i in range(start, stop):
        agent = gw.agent_create(user=admin_user, name=f"AG_{i}")
        gw.agent_option_set(user=admin_user, agent=agent, name="o", value="v", encrypted=i % 2 == 0)
        link = gw.link_create(
            user=admin_user,
            name=f"L_{i}",
            link_type="AMQP",
            agent=agent,
            properties={"host": "127.0.0.1", "port": 1},
        )
        fq = gw.foreign_queue_register(user=admin_user, name=f"FQ_{i}", link=link)
        q = qs.queue_create(user=admin_user, name=f"Q_{i}", queue_table=sc)
        exc = qs.queue_create(user=admin_user, name=f"X_{i}", queue_table=sc)
        gw.job_create(
            user=admin_user,
            job_name=f"J_{i}",
            propagation_type="OUTBOUND",
            source=q.name,
            destination=str(fq),
            exception_queue=exc.name,
        )


def _count(client, path: str, **headers: str) -> int:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path, **headers)
    assert response.status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.parametrize(
    "path",
    [
        "/gateway/agents/",
        "/gateway/links/",
        "/gateway/foreign-queues/",
        "/gateway/jobs/",
        "/gateway/",
    ],
)
def test_a_list_costs_the_same_for_more_rows(admin_client, admin_user, default_agent, path):
    _grow(admin_user, 0, 3)
    small = _count(admin_client, f"{path}?per_page=50")
    small_fragment = _count(admin_client, f"{path}?per_page=50", HTTP_HX_REQUEST="true")

    _grow(admin_user, 3, 30)
    html = admin_client.get(f"{path}?per_page=50").content.decode()
    assert "J_29" in html or "AG_29" in html or "L_29" in html or "FQ_29" in html
    assert _count(admin_client, f"{path}?per_page=50") == small
    assert _count(admin_client, f"{path}?per_page=50", HTTP_HX_REQUEST="true") == small_fragment
