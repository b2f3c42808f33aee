"""A run still QUEUED RESEND_S after its task was sent (a broker that restarted without
persistence lost the message) gets its task sent again by the reaper, once per RESEND_S; a
claimed run, or one dispatched without a task (``send=False``), is not sent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from instances.selectors import instance_queue
from instances.services import instance_heartbeat
from jobs import services
from jobs.models import PropagationRun

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def broker() -> Iterator[object]:
    url = django_settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://")):
        pytest.skip("reads the task messages from a Redis broker (the test script uses Redis)")
    import redis

    client = redis.Redis.from_url(url)
    yield client
    client.close()


# The instance that owns the source queue table: its Celery queue gets the run's task.
NODE = "resend-node"
QUEUE = instance_queue(NODE, "propagation")


def _sent(broker, run_id: int) -> list[bytes]:
    """The propagation_run task messages for ``run_id`` waiting in the owner's queue."""
    queue = QUEUE
    return [
        raw
        for raw in broker.lrange(queue, 0, -1)
        if json.loads(raw)["headers"].get("argsrepr") == f"({run_id},)"
    ]


@pytest.fixture
def prop(admin_user, mc_table, sc_table, make_queue):
    # An instance up (a worker's beat, as jobs.services.worker_heartbeat records it): the
    # source queue table's owner, which dispatch sends to.
    instance_heartbeat(name=NODE, host="localhost", worker=f"w@{NODE}")
    return services.propagation_create(
        user=admin_user,
        name="P",
        source_queue=make_queue("SRC", mc_table),
        destination_queue=make_queue("DST", sc_table),
    )


def test_a_queued_run_is_sent_again_once_per_resend_interval(prop, broker, settings):
    settings.AQ_PROPAGATION = {**settings.AQ_PROPAGATION, "RESEND_S": 30}
    (run_id,) = services.propagation_dispatch()
    before = _sent(broker, run_id)
    try:
        assert len(before) == 1  # dispatch sent it
        assert services.propagation_reap()["resent"] == 0  # sent just now
        # The broker lost it: wind the clock of its last send back past RESEND_S.
        for raw in before:
            broker.lrem(QUEUE, 0, raw)
        PropagationRun.objects.filter(pk=run_id).update(
            sent_at=timezone.now() - timedelta(seconds=31)
        )
        assert services.propagation_reap()["resent"] == 1
        assert len(_sent(broker, run_id)) == 1
        assert services.propagation_reap()["resent"] == 0  # not again before RESEND_S
        run = PropagationRun.objects.get(pk=run_id)
        assert run.state == "QUEUED" and run.sent_at > timezone.now() - timedelta(seconds=5)
    finally:
        for raw in _sent(broker, run_id):
            broker.lrem(QUEUE, 0, raw)


def test_claimed_runs_and_runs_without_a_task_are_not_sent(prop, broker, settings):
    settings.AQ_PROPAGATION = {**settings.AQ_PROPAGATION, "RESEND_S": 0}
    (run_id,) = services.propagation_dispatch(send=False)
    assert PropagationRun.objects.get(pk=run_id).sent_at is None
    assert services.propagation_reap()["resent"] == 0
    assert _sent(broker, run_id) == []
    PropagationRun.objects.filter(pk=run_id).update(
        state="RUNNING", sent_at=timezone.now() - timedelta(seconds=60)
    )
    assert services.propagation_reap()["resent"] == 0
    assert _sent(broker, run_id) == []
