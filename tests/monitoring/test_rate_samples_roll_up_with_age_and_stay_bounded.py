"""The series keeps 5 s points for 10 minutes, 1 min points for an hour and 10 min points for a
day (settings.AQ_RATES): each closed bucket rolls up into the next tier as its last point, and
what is older than a tier keeps is deleted, so a series never grows past its tiers' sizes."""

from __future__ import annotations

from datetime import datetime

import pytest

from monitoring.models import RateSample
from monitoring.selectors import rates_get
from monitoring.services import rates_sample
from tests.monitoring.helpers import at, enqueue

pytestmark = pytest.mark.django_db


def _tier(resolution: int, queue) -> list[tuple[datetime, datetime]]:  # type: ignore[no-untyped-def]
    return list(
        RateSample.objects.filter(kind="queue", object_id=queue.pk, resolution=resolution)
        .order_by("bucket")
        .values_list("bucket", "sampled_at")
    )


def test_closed_buckets_roll_up_as_their_last_point_and_old_points_go(admin_user, queue):
    for seconds, n in ((0, 1), (30, 2), (55, 3), (65, 4)):
        enqueue(admin_user, queue, n)
        rates_sample(at=at(seconds))

    # The 10:00 minute closed at 10:01: its last point (10:00:55) is the 1-minute point.
    assert _tier(60, queue) == [(at(0), at(55))]
    assert rates_get(kind="queue", object_id=queue.pk, range_="1h", now=at(65)) == {
        "resolution": 60,
        "timestamps": [],
        "series": {"enqueue_rate": [], "dequeue_rate": [], "depth": []},
    }

    rates_sample(at=at(11 * 60))  # 10:11: the 5 s points before 10:01 are past 10 minutes
    assert _tier(5, queue) == [(at(65), at(65)), (at(660), at(660))]
    assert _tier(60, queue) == [(at(0), at(55)), (at(60), at(65))]
    # 1 min → 10 min: the 10:00 ten minutes closed at 10:10; its last point is 10:01:05.
    assert _tier(600, queue) == [(at(0), at(65))]
    # 1h reads the minute tier: 1+2+3 enqueued at 10:00:55, 1+2+3+4 at 10:01:05.
    got = rates_get(kind="queue", object_id=queue.pk, range_="1h", now=at(660))
    assert got["timestamps"] == [at(65).timestamp()]
    assert got["series"]["enqueue_rate"] == [4 / 10]
    assert got["series"]["depth"] == [10]

    rates_sample(at=at(3600 + 12 * 60))  # 11:12: minute points before 10:12 are past the hour
    assert _tier(60, queue) == []
    assert _tier(600, queue) == [(at(0), at(65)), (at(600), at(660))]
    assert _tier(5, queue) == [(at(4320), at(4320))]

    # The next day at 10:10:05: 10:00's and 10:10's points are past a day; the 11:12 point went
    # up through the minute tier (its 11:12 minute closed) into the 11:10 ten minutes.
    rates_sample(at=at(86400 + 605))
    assert _tier(600, queue) == [(at(4200), at(4320))]
    assert _tier(60, queue) == []  # 11:12 is past the hour too


def test_ten_minutes_of_samples_keep_each_tier_bounded(admin_user, queue):
    for i in range(0, 12 * 60 + 1, 5):  # twelve minutes, every 5 s
        rates_sample(at=at(i))

    fine = _tier(5, queue)
    assert len(fine) == 600 // 5 + 1  # ten minutes of 5 s points, both ends included
    assert fine[0][0] == at(2 * 60) and fine[-1][0] == at(12 * 60)
    assert [b for b, _ in _tier(60, queue)] == [at(60 * m) for m in range(12)]
    assert [s for _, s in _tier(60, queue)] == [at(60 * m + 55) for m in range(12)]
    assert _tier(600, queue) == [(at(0), at(595))]
    assert RateSample.objects.filter(kind="global").count() == len(fine) + 12 + 1
