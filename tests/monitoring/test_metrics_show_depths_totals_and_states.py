"""/metrics in Prometheus's text format: the depths, counters and states the console shows, over
a real topology with real messages, read back with the client library's own parser."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.monitoring.helpers import dequeue, enqueue

pytestmark = pytest.mark.django_db


def _scrape(client, **extra) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:  # type: ignore[no-untyped-def]
    response = client.get("/metrics", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def _q(queue: str, table: str, **more: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted({"queue": queue, "queue_table": table, **more}.items()))


def test_depths_and_totals_per_queue_are_the_engines(client, admin_user, topology):
    enqueue(admin_user, topology.plain, 4)
    enqueue(admin_user, topology.plain, 2, delay=3600)
    assert dequeue(admin_user, topology.plain, 1) == 1
    enqueue(admin_user, topology.source, 3)

    m = _scrape(client)

    plain = _q("PLAIN", "QT_PLAIN")
    assert m[("aq_queue_depth", plain)] == 5  # 3 ready + 2 waiting
    assert m[("aq_queue_messages", _q("PLAIN", "QT_PLAIN", state="READY"))] == 3
    assert m[("aq_queue_messages", _q("PLAIN", "QT_PLAIN", state="WAITING"))] == 2
    assert m[("aq_queue_messages", _q("PLAIN", "QT_PLAIN", state="EXPIRED"))] == 0
    assert m[("aq_queue_enqueued_total", plain)] == 6
    assert m[("aq_queue_dequeued_total", plain)] == 1
    source = _q("SOURCE", "QT_MULTI")
    assert m[("aq_queue_depth", source)] == 3
    assert m[("aq_queue_enqueued_total", source)] == 3
    assert m[("aq_queue_dequeued_total", source)] == 0
    assert m[("aq_queue_depth", _q("DESTINATION", "QT_MULTI"))] == 0
    assert m[("aq_queues", ())] == 5  # and each queue table's default exception queue


def test_propagation_backlog_state_and_failures(client, admin_user, topology):
    enqueue(admin_user, topology.source, 3)

    m = _scrape(client)

    key = (("destination", "DESTINATION"), ("propagation", "P_OUT"), ("source", "SOURCE"))
    assert m[("aq_propagation_backlog", key)] == 3
    assert m[("aq_propagation_backlog_oldest_age_seconds", key)] >= 0
    assert m[("aq_propagation_propagated_total", key)] == 0
    assert m[("aq_propagation_failures", key)] == 0
    assert m[("aq_propagation_state", tuple(sorted((*key, ("state", "unscheduled")))))] == 1


def test_gateway_jobs_agents_workers_and_spark(client, topology):
    m = _scrape(client)

    job = {"job": "OUT_JOB", "direction": "OUTBOUND", "link": "AMQP_LINK", "agent": "DEFAULT_AGENT"}
    key = tuple(sorted(job.items()))
    assert m[("aq_mgw_job_propagated_total", key)] == 0
    assert m[("aq_mgw_job_failures", key)] == 0
    status = tuple(sorted({**job, "status": "READY", "enabled": "true"}.items()))
    assert m[("aq_mgw_job_status", status)] == 1
    agent = (("agent", "DEFAULT_AGENT"), ("status", "NOT_STARTED"))
    assert m[("aq_mgw_agent_status", agent)] == 1
    assert m[("aq_mgw_agent_up", (("agent", "DEFAULT_AGENT"),))] == 0
    for state in ("SUBMITTED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"):
        assert m[("aq_spark_jobs", (("state", state),))] == 0
    assert not [k for k in m if k[0] == "aq_worker_up"]  # no worker has beaten in this database


def test_the_all_queues_read_agrees_with_the_queue_list(admin_user, topology):
    from queues.selectors import queue_counters_all, queue_list

    enqueue(admin_user, topology.plain, 3)
    enqueue(admin_user, topology.plain, 1, delay=3600)
    dequeue(admin_user, topology.plain, 2)
    enqueue(admin_user, topology.source, 2)
    fields = ["pk", "name", "queue_table__name", "enqueued", "dequeued"]
    fields += [f"depth_{s}" for s in ("waiting", "ready", "processed", "expired")]

    listed = list(queue_list().order_by("pk").values(*fields))

    assert queue_counters_all() == listed
    assert any(row["depth_waiting"] for row in listed) and any(row["dequeued"] for row in listed)
