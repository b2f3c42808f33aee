"""A warm shutdown (SIGTERM) of the worker ends its propagation runs at their next loop, instead
of holding the shutdown for the rest of their slice."""

from __future__ import annotations

import signal
import time

import pytest

from jobs import services
from jobs.models import PropagationRun
from tests.celery.helpers import wait_for

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


def test_sigterm_ends_a_running_window_promptly(
    celery_procs, admin_user, mc_table, sc_table, make_queue
):
    celery_procs.configure(AQ_PROPAGATION_SLICE_S=300, AQ_PROPAGATION_HEARTBEAT_S=0.5)
    prop = services.propagation_create(
        user=admin_user,
        name="MOVE",
        source_queue=make_queue("SRC", mc_table),
        destination_queue=make_queue("DST", sc_table),
    )
    worker = celery_procs.worker("stop1")
    worker.wait_registered()  # its instance up: the source queue table's owner to send to
    services.propagation_dispatch()
    assert wait_for(
        lambda: PropagationRun.objects.filter(propagation=prop, state="RUNNING").exists(), 30
    )
    t0 = time.monotonic()
    worker.kill(signal.SIGTERM)
    assert wait_for(lambda: not worker.alive(), 20), worker.log()
    assert time.monotonic() - t0 < 15  # far less than the 300 s slice
    run = PropagationRun.objects.get(propagation=prop)
    assert (run.state, run.end_reason) == ("SUCCEEDED", "worker_stop")
