"""DBA_PROPAGATION, DBA_QUEUE_SCHEDULES and the V$PROPAGATION_SENDER / _RECEIVER counters are
PostgreSQL views with Oracle's column names, and their figures follow the runs."""

from __future__ import annotations

import pytest
from django.db import connection

from jobs import services
from jobs.models import DbaPropagation, DbaQueueSchedule, VPropagationReceiver, VPropagationSender

from .helpers import enqueue, run_now

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE_SCHEDULES = [
    "schema", "qname", "destination", "start_date", "start_time", "propagation_window",
    "next_time", "latency", "schedule_disabled", "process_name", "session_id", "instance",
    "last_run_date", "last_run_time", "current_start_date", "current_start_time",
    "next_run_date", "next_run_time", "total_time", "total_number", "total_bytes", "max_number",
    "max_bytes", "avg_number", "avg_size", "avg_time", "failures", "last_error_date",
    "last_error_time", "last_error_msg",
]  # fmt: skip


def _columns(view: str) -> list[str]:
    with connection.cursor() as cur:
        cur.execute(f"SELECT * FROM {view} LIMIT 0")
        return [c.name for c in cur.description]


def test_dba_queue_schedules_has_every_column_the_issue_names():
    cols = _columns("dba_queue_schedules")
    assert [c for c in QUEUE_SCHEDULES if c not in cols] == []


def test_dba_propagation_has_oracle_columns():
    assert {
        "propagation_name", "source_queue_owner", "source_queue_name", "destination_queue_owner",
        "destination_queue_name", "destination_dblink", "rule_set_owner", "rule_set_name",
        "negative_rule_set_owner", "negative_rule_set_name", "queue_to_queue", "status",
        "error_message", "error_date",
    } <= set(_columns("dba_propagation"))  # fmt: skip


def test_the_views_follow_a_window(admin_user, mc_table, sc_table, make_queue, rule_set):
    src, dst = make_queue("SRC", mc_table), make_queue("DST", sc_table)
    p = services.propagation_create(
        user=admin_user,
        name="P",
        source_queue=src,
        destination_queue=dst,
        positive_rule_set=rule_set("RS", ":msg.n < 2"),
        duration=3600,
        next_time="*/5 * * * *",
    )
    enqueue(src, [{"n": i} for i in range(4)])
    dp = DbaPropagation.objects.get(propagation_name="P")
    assert (dp.status, dp.rule_set_name, dp.queue_to_queue) == ("ENABLED", "RS", "TRUE")
    sender = VPropagationSender.objects.get(propagation_id=p.pk)
    assert (sender.unacknowledged, sender.total_msgs) == (4, 0)

    run_now(p)
    qs = DbaQueueSchedule.objects.get(qname="SRC")
    assert qs.destination == '"alice"."DST"@LOCAL'  # the queue table's owner
    assert (qs.total_number, qs.failures, qs.schedule_disabled) == (2, 0, "N")
    assert qs.latency == 3 and qs.propagation_window == 3600 and qs.next_time == "*/5 * * * *"
    assert qs.total_bytes == sum(len(f'{{"n": {i}}}') for i in range(2))
    assert qs.avg_number == 2 and qs.last_run_date is not None
    sender = VPropagationSender.objects.get(propagation_id=p.pk)
    assert (sender.unacknowledged, sender.total_msgs) == (0, 2)
    assert VPropagationReceiver.objects.get(propagation_id=p.pk).total_msgs == 2

    services.schedule_disable(user=admin_user, propagation=p)
    assert DbaQueueSchedule.objects.get(qname="SRC").schedule_disabled == "Y"
    assert DbaPropagation.objects.get(propagation_name="P").status == "DISABLED"
