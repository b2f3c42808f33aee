"""gateway/lifecycle.py's transitions are conditional UPDATEs: of two agent processes claiming
the same start only one gets it; a SHUTDOWN that arrives while the agent is STARTING is kept
(INITIALIZING is refused) and the session ends NOT_STARTED; failures counted from two
connections at once both count; a DELETE_PENDING job is not turned back by a failure or a reset.
Real PostgreSQL connections, as the agent process uses them."""

from __future__ import annotations

import threading

import psycopg
import pytest

from gateway import lifecycle
from gateway import services as gw
from gateway.models import Agent, Job
from queues.services import conninfo

pytestmark = pytest.mark.django_db(transaction=True)


def _connections(n: int) -> list[psycopg.Connection]:
    return [psycopg.connect(conninfo(), autocommit=True) for _ in range(n)]


def test_one_of_two_claims_of_a_start_wins_and_a_shutdown_while_starting_is_kept(
    default_agent,
):
    token = lifecycle.agent_schedule_start(default_agent.pk)
    assert token is not None
    assert lifecycle.agent_schedule_start(default_agent.pk) is None  # not NOT_STARTED any more
    conns = _connections(2)
    rows: list[tuple | None] = []
    start = threading.Barrier(2)

    def claim(conn: psycopg.Connection, pid: int) -> None:
        start.wait()
        rows.append(
            lifecycle.agent_claim(conn, default_agent.pk, str(token), instance="w", pid=pid)
        )

    threads = [threading.Thread(target=claim, args=(c, i)) for i, c in enumerate(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r is None for r in rows) == [False, True]
    assert Agent.objects.get(pk=default_agent.pk).status == "STARTING"

    assert lifecycle.agent_request_shutdown(default_agent.pk, "NORMAL") == "SHUTTING_DOWN"
    assert lifecycle.agent_initializing(conns[0], default_agent.pk, str(token)) is False
    lifecycle.agent_end(conns[0], default_agent.pk, token=str(token))
    agent = Agent.objects.get(pk=default_agent.pk)
    assert (agent.status, agent.start_token, agent.shutdown_mode) == ("NOT_STARTED", None, "")
    for c in conns:
        c.close()


def test_a_shutdown_after_the_agent_decided_to_move_or_restart_stops_it(default_agent):
    """The process ends with ``restart`` (its owner instance moved, or its worker is stopping)
    just after a SHUTDOWN landed: the SHUTDOWN wins, nothing is scheduled again."""
    token = lifecycle.agent_schedule_start(default_agent.pk)
    (conn,) = _connections(1)
    assert lifecycle.agent_claim(conn, default_agent.pk, str(token), instance="w", pid=1)
    assert lifecycle.agent_initializing(conn, default_agent.pk, str(token))
    lifecycle.agent_running(conn, default_agent.pk, str(token))
    assert lifecycle.agent_request_shutdown(default_agent.pk, "NORMAL") == "SHUTTING_DOWN"
    lifecycle.agent_end(conn, default_agent.pk, restart=True, token=str(token))
    agent = Agent.objects.get(pk=default_agent.pk)
    assert (agent.status, agent.start_token, agent.restart_at) == ("NOT_STARTED", None, None)
    # Without a SHUTDOWN, the same end schedules the start again (same token, a restart time).
    token = lifecycle.agent_schedule_start(default_agent.pk)
    assert lifecycle.agent_claim(conn, default_agent.pk, str(token), instance="w", pid=1)
    lifecycle.agent_end(conn, default_agent.pk, restart=True, token=str(token))
    agent = Agent.objects.get(pk=default_agent.pk)
    assert (agent.status, agent.start_token) == ("START_SCHEDULED", token)
    assert agent.restart_at is not None
    conn.close()


def test_failures_from_two_connections_both_count_and_delete_pending_stays(outbound_job):
    conns = _connections(2)
    start = threading.Barrier(2)

    def fail(conn: psycopg.Connection) -> None:
        start.wait()
        lifecycle.job_failed(conn, outbound_job.pk, "broker down")

    threads = [threading.Thread(target=fail, args=(c,)) for c in conns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    job = Job.objects.get(pk=outbound_job.pk)
    assert (job.status, job.failures, job.last_error_msg) == ("RETRY", 2, "broker down")

    assert lifecycle.job_succeeded(conns[0], job.pk)
    assert Job.objects.get(pk=job.pk).failures == 0

    gw.job_remove(user=None, job=job)
    assert lifecycle.job_failed(conns[1], job.pk, "late failure") is None
    assert lifecycle.job_reset(job.pk) is False
    assert lifecycle.job_recovery_problem(conns[0], job.pk, "MISSING_MESSAGE", None, "x") is False
    job = Job.objects.get(pk=job.pk)
    assert (job.status, job.failures, job.recovery) == ("DELETE_PENDING", 0, "")
    for c in conns:
        c.close()
