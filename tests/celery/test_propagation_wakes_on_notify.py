"""An idle run waits on LISTEN, not on a timer: a new message crosses at once though the
schedule's latency and the run's heartbeat are long."""

from __future__ import annotations

import time

import pytest

from jobs import services
from jobs.models import PropagationRun
from queues.models import Message
from tests.celery.helpers import wait_for
from tests.jobs.helpers import enqueue

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]

LATENCY_S = 20.0
WOKEN_S = LATENCY_S / 2


def test_an_idle_run_wakes_on_notify_well_within_the_latency(
    celery_procs, admin_user, mc_table, sc_table, make_queue
):
    # The idle loop sleeps min(heartbeat, latency): 20 s here, so only a NOTIFY can wake it.
    celery_procs.configure(AQ_PROPAGATION_SLICE_S=60, AQ_PROPAGATION_HEARTBEAT_S=LATENCY_S)
    src, dst = make_queue("SRC", mc_table), make_queue("DST", sc_table)
    prop = services.propagation_create(
        user=admin_user,
        name="MOVE",
        source_queue=src,
        destination_queue=dst,
        latency=LATENCY_S,
    )
    celery_procs.worker("lat1").wait_registered()  # its instance up: the owner to send to
    services.propagation_dispatch()
    assert wait_for(
        lambda: PropagationRun.objects.filter(
            propagation=prop, state="RUNNING", waiting=True
        ).exists(),
        30,
    )
    for n in range(3):
        time.sleep(0.3)  # the run is back in its wait, which a timer ends only after LATENCY_S
        t0 = time.monotonic()
        enqueue(src, [{"n": n}])
        # Half the latency: many times a NOTIFY's usual delay on a loaded machine, and too
        # soon for the timer, so only the NOTIFY can have woken the run.
        crossed = wait_for(
            lambda n=n: Message.objects.filter(queue=dst).count() > n, WOKEN_S, interval=0.01
        )
        assert crossed and time.monotonic() - t0 < WOKEN_S, f"message {n} waited for the timer"
    # One run did it all: nobody restarted the window.
    run = PropagationRun.objects.get(propagation=prop)
    assert (run.state, run.propagated) == ("RUNNING", 3)
