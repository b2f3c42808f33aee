"""A Spark bulk job copies a source queue's READY backlog to destination queues: every selected
message once at every destination, the source untouched, the job SUCCEEDED with its counters."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from queues.models import Message

from .helpers import enqueue
from .spark_helpers import (
    eager_tasks,
    job_totals,
    phases_went_through,
    small_parts,
    source_ids_at,
    submit,
)

__all__ = ["eager_tasks", "small_parts"]
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spark]


def test_every_ready_message_is_copied_once_to_every_destination(
    eager_tasks, small_parts, sc_table, make_queue
):
    src, d1, d2 = (make_queue(n, sc_table) for n in ("SRC", "D1", "D2"))
    ids = enqueue(src, [{"n": i} for i in range(1_800)], correlation="ORD")
    job = submit(source_queue=src, destinations=[d1, d2], mode="COPY")

    assert job.state == "SUCCEEDED", job.error
    assert job.app_id.startswith("local-")
    assert source_ids_at(d1) == source_ids_at(d2) == sorted(ids)
    assert Message.objects.filter(queue=src, state="READY").count() == 1_800
    # Parts run in parallel, so ids at the destination follow the parts' commits: pick by source.
    copy = Message.objects.get(queue=d1, bulk_source_id=ids[0])
    assert copy.headers["aq$_source_msgid"] == copy.bulk_source_id
    assert copy.payload == {"n": 0} and copy.correlation == "ORD" and copy.state == "READY"
    totals = job_totals(job)
    assert totals["parts"] == 4  # 1,800 messages in parts of 500
    assert totals["read"] == 1_800 and totals["propagated"] == {"D1": 1_800, "D2": 1_800}
    assert job.tasks_total > 0 and job.tasks_done == job.tasks_total
    assert "spark" in job.driver_log_tail.lower()
    # Queued, Spark starting, its stage reading, parts committed, then the finished state.
    assert phases_went_through(job) == ["QUEUED", "STARTING", "READING", "WRITING"]
    assert job.phase == "SUCCEEDED"


def test_a_selection_takes_only_its_messages(eager_tasks, sc_table, make_queue):
    src, dst = make_queue("SRC", sc_table), make_queue("DST", sc_table)
    enqueue(src, [{"n": i, "region": "EUROPE" if i % 3 else "ASIA"} for i in range(60)])
    asia_ord = enqueue(src, [{"n": 100, "region": "ASIA"}], correlation="ORD-7")
    enqueue(src, [{"n": 101}], correlation="INV-7")

    by_corr = submit(
        source_queue=src, destinations=[dst], selection="CORRELATION", correlation="ORD%"
    )
    assert by_corr.state == "SUCCEEDED", by_corr.error
    assert source_ids_at(dst) == asia_ord

    Message.objects.filter(queue=dst).delete()
    by_rule = submit(
        source_queue=src,
        destinations=[dst],
        selection="CONDITION",
        condition=":msg.region = 'ASIA' AND :msg.n < 100",
    )
    assert by_rule.state == "SUCCEEDED", by_rule.error
    got = sorted(m.payload["n"] for m in Message.objects.filter(queue=dst))
    assert got == [i for i in range(60) if i % 3 == 0]


def test_an_enqueue_time_range_is_half_open(eager_tasks, sc_table, make_queue):
    src, dst = make_queue("SRC", sc_table), make_queue("DST", sc_table)
    old = enqueue(src, [{"n": 1}, {"n": 2}])
    Message.objects.filter(id__in=old).update(enq_time=timezone.now() - timedelta(hours=2))
    enqueue(src, [{"n": 3}])
    job = submit(
        source_queue=src,
        destinations=[dst],
        selection="ENQ_TIME_RANGE",
        enq_time_to=timezone.now() - timedelta(hours=1),
    )
    assert job.state == "SUCCEEDED", job.error
    assert source_ids_at(dst) == sorted(old)
