"""A worker's heartbeat records its instance: the Workers API answers it and the Workers page
shows it, linked to the instance list."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import services

pytestmark = pytest.mark.django_db


def test_the_workers_api_and_page_show_each_workers_instance(monitor_api, monitor_client):
    for hostname, instance in (("celery@a", "node7"), ("celery@b", "")):
        services.worker_heartbeat(
            hostname=hostname,
            pid=1,
            queues=["propagation", "aq.inst.node7.propagation"],
            pool="threads",
            concurrency=1,
            active=[],
            processed=0,
            started_at=timezone.now() - timedelta(minutes=1),
            instance=instance,
        )

    rows = monitor_api.get("/api/workers/").json()["results"]
    assert {r["hostname"]: r["instance"] for r in rows} == {"celery@a": "node7", "celery@b": ""}

    page = monitor_client.get("/propagations/workers/").content.decode()
    assert '<a href="/instances/?q=node7">node7</a>' in page
