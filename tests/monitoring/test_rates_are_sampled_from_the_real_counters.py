"""The rate sampler over the engine's, the runner's and the gateway's real counters: messages
enqueued and dequeued through the services between two samples at controlled times give exact
rates and depths."""

from __future__ import annotations

import pytest

from gateway.models import Job
from jobs.models import Propagation
from monitoring.models import RateSample
from monitoring.selectors import rates_get
from monitoring.services import rates_sample
from tests.monitoring.helpers import at, dequeue, enqueue

pytestmark = pytest.mark.django_db


def test_two_samples_give_the_rates_and_depths_between_them(admin_user, topology):
    enqueue(admin_user, topology.plain, 4)
    assert rates_sample(at=at(0)).points == 3 + 2 + 1 + 1 + 1  # queues, propagation, job, global
    enqueue(admin_user, topology.plain, 6)
    assert dequeue(admin_user, topology.plain, 2) == 2
    enqueue(admin_user, topology.source, 3)
    rates_sample(at=at(5))

    queue = rates_get(kind="queue", object_id=topology.plain.pk, range_="10m", now=at(5))
    assert queue == {
        "resolution": 5,
        "timestamps": [at(5).timestamp()],
        "series": {"enqueue_rate": [6 / 5], "dequeue_rate": [2 / 5], "depth": [8]},
    }
    total = rates_get(kind="global", object_id=0, range_="10m", now=at(5))["series"]
    assert total == {
        "enqueue_rate": [(6 + 3) / 5],
        "dequeue_rate": [2 / 5],
        "propagate_rate": [0.0],
        "gateway_in_rate": [0.0],
        "gateway_out_rate": [0.0],
    }
    prop = Propagation.objects.get(name="P_OUT")
    assert rates_get(kind="propagation", object_id=prop.pk, range_="10m", now=at(5))["series"] == {
        "propagate_rate": [0.0],
        "backlog": [3],
    }
    job = Job.objects.get(name="OUT_JOB")
    # The outbound job's subscriber on SOURCE got the 3 copies too; no agent ran it.
    assert rates_get(kind="gateway_job", object_id=job.pk, range_="10m", now=at(5))["series"] == {
        "in_rate": [0.0],
        "out_rate": [0.0],
        "backlog": [3],
    }


def test_a_later_sample_in_the_same_bucket_replaces_the_earlier(admin_user, topology):
    rates_sample(at=at(0))
    enqueue(admin_user, topology.plain, 2)
    rates_sample(at=at(5))
    enqueue(admin_user, topology.plain, 3)
    rates_sample(at=at(9))  # the 10:00:05 bucket again

    points = RateSample.objects.filter(kind="queue", object_id=topology.plain.pk, resolution=5)
    assert sorted(points.values_list("sampled_at", "enqueued")) == [(at(0), 0), (at(9), 5)]
    got = rates_get(kind="queue", object_id=topology.plain.pk, range_="10m", now=at(9))
    assert got["series"]["enqueue_rate"] == [5 / 9]


def test_a_counter_that_went_down_was_reset(admin_user, topology):
    enqueue(admin_user, topology.plain, 5)
    rates_sample(at=at(0))
    # As a dropped and re-created object would look: the counter starts again from 0.
    RateSample.objects.filter(kind="queue", object_id=topology.plain.pk).update(enqueued=50)
    enqueue(admin_user, topology.plain, 5)
    rates_sample(at=at(10))

    got = rates_get(kind="queue", object_id=topology.plain.pk, range_="10m", now=at(10))

    assert got["series"]["enqueue_rate"] == [10 / 10]  # the new value is the change


def test_the_beat_task_takes_a_sample_now(admin_user, topology):
    from monitoring.tasks import rates_sample as task

    enqueue(admin_user, topology.plain, 2)

    report = task.apply().get()

    assert report["points"] == 8 and not report["skipped"]
    assert RateSample.objects.get(kind="queue", object_id=topology.plain.pk).enqueued == 2
