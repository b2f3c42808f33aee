"""A run whose database session dies (PostgreSQL restarted or ended the session) records why
from a new session: FAILED, "the database connection was lost", the batch rolled back. It does
not wait for the reaper, which would blame a dead worker."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections

from jobs import runner, services
from jobs.choices import RunState
from jobs.models import PropagationRun
from queues import services as qs

from .helpers import enqueue

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def prop(admin_user, mc_table, sc_table, make_queue, settings):
    # A long slice: the run must still be in its window when its session is ended.
    settings.AQ_PROPAGATION = {**settings.AQ_PROPAGATION, "SLICE_S": 30, "HEARTBEAT_S": 0.1}
    return services.propagation_create(
        user=admin_user,
        name="P",
        source_queue=make_queue("SRC", mc_table),
        destination_queue=make_queue("DST", sc_table),
    )


def test_a_run_whose_session_is_terminated_fails_saying_the_connection_was_lost(prop):
    enqueue(prop.source_queue, [{"n": i} for i in range(10)])
    (run_id,) = services.propagation_dispatch(send=False)
    result: dict[str, str] = {}

    def work() -> None:
        try:
            result["end"] = runner.execute(run_id, conninfo=qs.conninfo(), worker="test", pid=0)
        finally:
            connections.close_all()  # this thread's Django connection, as a worker's task end

    worker = threading.Thread(target=work)
    worker.start()
    try:
        deadline = time.monotonic() + 20
        run = PropagationRun.objects.get(pk=run_id)
        while not (run.state == RunState.RUNNING and run.waiting) and time.monotonic() < deadline:
            time.sleep(0.05)
            run.refresh_from_db()
        assert run.state == RunState.RUNNING and run.session_id, run.state
        with connection.cursor() as cur:
            cur.execute("SELECT pg_terminate_backend(%s)", [run.session_id])
    finally:
        worker.join(timeout=30)
    assert not worker.is_alive()
    assert result["end"].startswith("FAILED")
    run.refresh_from_db()
    assert run.state == RunState.FAILED
    assert run.error.startswith("The database connection was lost"), run.error
    assert run.propagated == 10  # what it moved before committed with its counters
