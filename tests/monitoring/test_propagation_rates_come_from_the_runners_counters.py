"""A propagation window run for real (the runner, in this process as a worker runs it) between
two samples: the propagation's rate and backlog, the destination's depth and the global
propagated rate follow the runner's counters exactly."""

from __future__ import annotations

import pytest

from jobs import services as job_services
from monitoring.selectors import rates_get
from monitoring.services import rates_sample
from queues import services as qs
from tests.jobs.helpers import run_now
from tests.monitoring.helpers import T0, at, enqueue

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_window_that_moves_four_messages_in_ten_seconds_is_point_four_a_second(
    admin_user, fast_windows
):
    qt = qs.queue_table_create(
        user=admin_user, name="QT_RATES", sort_order="enq_time", multiple_consumers=True
    )
    src = qs.queue_create(user=admin_user, name="SRC", queue_table=qt)
    single = qs.queue_table_create(user=admin_user, name="QT_DST", sort_order="enq_time")
    dst = qs.queue_create(user=admin_user, name="DST", queue_table=single)
    prop = job_services.propagation_create(
        user=admin_user, name="P_RATES", source_queue=src, destination_queue=dst
    )
    enqueue(admin_user, src, 4)
    rates_sample(at=T0)

    assert run_now(prop) == ["SUCCEEDED: slice"]
    rates_sample(at=at(10))

    now = at(10)
    assert rates_get(kind="propagation", object_id=prop.pk, range_="10m", now=now)["series"] == {
        "propagate_rate": [4 / 10],
        "backlog": [0],
    }
    assert rates_get(kind="queue", object_id=dst.pk, range_="10m", now=now)["series"] == {
        "enqueue_rate": [4 / 10],
        "dequeue_rate": [0.0],
        "depth": [4],
    }
    total = rates_get(kind="global", object_id=0, range_="10m", now=now)["series"]
    assert total["propagate_rate"] == [4 / 10]
    assert total["enqueue_rate"] == [4 / 10]  # the copies enqueued at the destination
