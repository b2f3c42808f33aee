"""A dry run counts what would move where and writes nothing: no copy, no marker, the source
as it was."""

from __future__ import annotations

import pytest

from jobs import services
from queues.models import Message, MessageConsumer

from .helpers import enqueue
from .spark_helpers import eager_tasks, phases_went_through, submit

__all__ = ["eager_tasks"]
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spark]


def test_a_dry_run_counts_per_destination(
    eager_tasks, admin_user, mc_table, sc_table, make_queue, rule_set
):
    src, d1, d2 = (
        make_queue("SRC", mc_table),
        make_queue("D1", sc_table),
        make_queue("D2", sc_table),
    )
    props = [
        services.propagation_create(
            user=admin_user,
            name=f"P{i}",
            source_queue=src,
            destination_queue=d,
            positive_rule_set=rule_set(f"RS{i}", cond),
            schedule=False,
        )
        for i, (d, cond) in enumerate(((d1, ":msg.n < 30"), (d2, ":msg.n >= 20")), start=1)
    ]
    enqueue(src, [{"n": i} for i in range(50)])
    consumers = MessageConsumer.objects.count()

    job = submit(source_queue=src, propagations=props, mode="MOVE", dry_run=True)

    assert job.state == "SUCCEEDED", job.error
    assert job.dry_run_result == {
        "read": 50,
        "discarded": 0,
        "per_destination": {"D1": 30, "D2": 30},
    }
    assert not job.parts.exists()
    assert not Message.objects.filter(queue__in=[d1, d2]).exists()
    assert MessageConsumer.objects.count() == consumers
    assert phases_went_through(job) == ["QUEUED", "STARTING", "READING"]  # it writes nothing
    assert job.phase == "SUCCEEDED"
