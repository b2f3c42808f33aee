"""GET /api/rates/: a series by object and range, and bad input as a 400 naming the field."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from monitoring.services import rates_sample
from tests.monitoring.helpers import enqueue

pytestmark = pytest.mark.django_db


def test_a_queues_rates_by_name_or_id(monitor_api, admin_user, topology):
    now = timezone.now()
    rates_sample(at=now - timedelta(seconds=10))
    enqueue(admin_user, topology.plain, 5)
    rates_sample(at=now)

    for key in ("plain", str(topology.plain.pk)):
        response = monitor_api.get("/api/rates/", {"object": f"queue:{key}", "range": "10m"})
        assert response.status_code == 200, response.content
        body = response.json()
        assert body["object"] == f"queue:{topology.plain.pk}"
        assert body["name"] == "PLAIN"
        assert body["range"] == "10m"
        assert body["resolution"] == 5
        assert body["timestamps"] == [now.timestamp()]
        assert body["series"] == {"enqueue_rate": [0.5], "dequeue_rate": [0.0], "depth": [5]}


def test_a_propagations_and_a_gateway_jobs_series_by_name(monitor_api, admin_user, topology):
    now = timezone.now()
    rates_sample(at=now - timedelta(seconds=10))
    enqueue(admin_user, topology.source, 2)  # a copy for P_OUT's and OUT_JOB's subscribers
    rates_sample(at=now)

    prop = monitor_api.get("/api/rates/", {"object": "propagation:p_out"}).json()
    assert (prop["object"].split(":")[0], prop["name"], prop["timestamps"]) == (
        "propagation",
        "P_OUT",
        [now.timestamp()],
    )
    assert prop["series"] == {"propagate_rate": [0.0], "backlog": [2]}

    job = monitor_api.get("/api/rates/", {"object": "gateway_job:OUT_JOB", "range": "1h"})
    assert job.status_code == 200, job.content
    body = job.json()
    assert (body["name"], body["range"], body["resolution"]) == ("OUT_JOB", "1h", 60)
    assert body["series"] == {
        "in_rate": [],
        "out_rate": [],
        "backlog": [],
    }  # a point at most: no rate yet
    body = monitor_api.get("/api/rates/", {"object": "gateway_job:OUT_JOB"}).json()
    assert body["series"] == {"in_rate": [0.0], "out_rate": [0.0], "backlog": [2]}


def test_the_global_series_is_the_default(monitor_api, topology):
    rates_sample()

    body = monitor_api.get("/api/rates/").json()

    assert (body["object"], body["name"], body["range"]) == ("global", None, "10m")
    assert set(body["series"]) == {
        "enqueue_rate",
        "dequeue_rate",
        "propagate_rate",
        "gateway_in_rate",
        "gateway_out_rate",
    }
    assert body["timestamps"] == []  # one point is only the base of the next one's rates


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"range": "2h"}, "range"),
        ({"object": "queue:NOPE"}, "object"),
        ({"object": "queue:99999999"}, "object"),
        ({"object": "queue:"}, "object"),
        ({"object": "topic:1"}, "object"),
        ({"object": "PLAIN"}, "object"),
        ({"object": "queue:a\x00b"}, "object"),
        ({"object": "x" * 301}, "object"),
        ({"object": "propagation:PLAIN"}, "object"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(monitor_api, topology, params, field):
    response = monitor_api.get("/api/rates/", params)

    assert response.status_code == 400, response.content
    assert list(response.json()) == [field]


def test_the_answer_names_the_unknown_object(monitor_api, topology):
    response = monitor_api.get("/api/rates/", {"object": "gateway_job:NOPE"})

    assert response.json() == {"object": ["No gateway_job has the id or name 'NOPE'."]}


def test_anonymous_gets_a_401(token_client, topology):
    assert token_client(None).get("/api/rates/").status_code == 401
