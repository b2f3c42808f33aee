"""The agent's and the jobs' state machines (spec §1.6.6, §1.9.5, §1.11, §1.12): the only module
that writes ``gateway_agent.status`` and ``gateway_job.status`` with the columns that move with
them (start token, shutdown mode, restart time, instance and heartbeat; failures, back-off,
recovery).

Both sides call it: the agent process (gateway/agent.py) on its own psycopg connections, and the
services (gateway/services.py) inside their Django transaction (``conn=None``). Every transition
is one conditional UPDATE whose WHERE names the state it leaves, so of two writers racing only one
wins (it gets a row or a rowcount of 1, the other nothing).

Agent: NOT_STARTED → START_SCHEDULED (STARTUP) → STARTING (a worker claims the start token) →
INITIALIZING → RUNNING → SHUTTING_DOWN (SHUTDOWN) → NOT_STARTED; BROKEN when a second process
is found; START_SCHEDULED again after a restartable death (the reaper) or a worker's shutdown;
NOT_STARTED again by CLEANUP_GATEWAY(CLEAN_STARTUP_STATE).
Job: READY ⇄ RETRY → FAILED (failures and back-off); FAILED → READY (RESET_JOB, agent start,
CLEANUP_GATEWAY's RESET_SUB_*); any → DELETE_PENDING (REMOVE_JOB) → deleted.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

import psycopg
from django.db import connection

from core.services import change_log_deletion, object_snapshot
from gateway.choices import AGENT_LIVE_STATES, AgentStatus, JobStatus
from gateway.config import config
from gateway.models import Job
from gateway.selectors import PLACE_SQL, place_params
from queues import services as queue_services

# psycopg connection of the agent process, or None: Django's, in the caller's transaction.
Conn = psycopg.Connection | None

_LIVE = [str(s) for s in AGENT_LIVE_STATES]


def _run(conn: Conn, sql: str, params: dict[str, Any]) -> tuple[list[tuple], int]:
    """Rows (when the statement returns some) and rowcount."""
    if conn is None:
        with connection.cursor() as cur:
            cur.execute(sql, params)
            return (cur.fetchall() if cur.description else []), cur.rowcount
    cur = conn.execute(sql, params)
    return (cur.fetchall() if cur.description else []), cur.rowcount


# --- agent: requests (services) ------------------------------------------------------------------


def agent_schedule_start(agent_id: int, conn: Conn = None) -> uuid.UUID | None:
    """STARTUP: NOT_STARTED → START_SCHEDULED with a new start token (returned; None when the
    agent was not NOT_STARTED). The start task carries the token; ``restart_at`` is when the
    reaper sends a new one if no worker has claimed it by then (``agent_restart_due``)."""
    token = uuid.uuid4()
    _, n = _run(
        conn,
        """
        UPDATE gateway_agent SET status = %(to)s, start_token = %(token)s, shutdown_mode = '',
               shutdown_requested = false, last_error_msg = '', last_error_at = NULL,
               restart_at = now() + make_interval(secs => %(resend)s), updated = now()
        WHERE id = %(id)s AND status = %(from)s
        """,
        {
            "to": AgentStatus.START_SCHEDULED,
            "from": AgentStatus.NOT_STARTED,
            "token": token,
            "resend": config()["START_RESEND_S"],
            "id": agent_id,
        },
    )
    return token if n else None


def agent_request_shutdown(agent_id: int, mode: str, conn: Conn = None) -> str | None:
    """SHUTDOWN: a scheduled start is withdrawn at once (NOT_STARTED; the start task, when a
    worker takes it, finds its token gone); a live agent goes SHUTTING_DOWN and ends itself at
    its next poll. An IMMEDIATE request is never weakened to NORMAL. Returns the new status,
    None when the agent was neither scheduled nor live."""
    rows, _ = _run(
        conn,
        """
        UPDATE gateway_agent SET shutdown_requested = true, updated = now(),
               status = CASE WHEN status = %(scheduled)s THEN %(stopped)s ELSE %(closing)s END,
               start_token = CASE WHEN status = %(scheduled)s THEN NULL ELSE start_token END,
               restart_at = CASE WHEN status = %(scheduled)s THEN NULL ELSE restart_at END,
               shutdown_mode = CASE WHEN status = %(scheduled)s THEN shutdown_mode
                                    WHEN shutdown_mode = 'IMMEDIATE' THEN shutdown_mode
                                    ELSE %(mode)s END
        WHERE id = %(id)s AND (status = %(scheduled)s OR status = ANY(%(live)s))
        RETURNING status
        """,
        {
            "scheduled": AgentStatus.START_SCHEDULED,
            "stopped": AgentStatus.NOT_STARTED,
            "closing": AgentStatus.SHUTTING_DOWN,
            "mode": mode,
            "live": _LIVE,
            "id": agent_id,
        },
    )
    return rows[0][0] if rows else None


def agent_clean_startup_state(agent_id: int, conn: Conn = None) -> bool:
    """CLEANUP_GATEWAY(CLEAN_STARTUP_STATE): a dead or BROKEN agent's run-time state is
    forgotten (NOT_STARTED). The service checks the preconditions first."""
    _, n = _run(
        conn,
        """
        UPDATE gateway_agent SET status = %(to)s, start_token = NULL, instance = '',
               instance_name = '', pid = NULL, restart_at = NULL, shutdown_mode = '', heartbeat_at = NULL, updated = now()
        WHERE id = %(id)s AND status <> ALL(%(keep)s)
        """,
        {
            "to": AgentStatus.NOT_STARTED,
            "keep": [AgentStatus.NOT_STARTED, AgentStatus.START_SCHEDULED],
            "id": agent_id,
        },
    )
    return bool(n)


# --- agent: the reaper (beat) --------------------------------------------------------------------


def agent_declare_dead(
    agent_id: int, token: uuid.UUID | None, now: datetime, conn: Conn = None
) -> tuple[str, str] | None:
    """An agent whose process died (no lock, no beat): one dying while SHUTTING_DOWN is stopped
    (NOT_STARTED); any other live state goes START_SCHEDULED and is started again after
    RESTART_DELAY_S, as MGW's Scheduler job after a restartable error. Only while the start
    ``token`` is still the one the reaper saw. Returns (new status, log text) or None."""
    rows, _ = _run(
        conn,
        """
        UPDATE gateway_agent a SET
               status = CASE WHEN a.status = %(closing)s THEN %(stopped)s ELSE %(scheduled)s END,
               start_token = CASE WHEN a.status = %(closing)s THEN NULL ELSE a.start_token END,
               restart_at = CASE WHEN a.status = %(closing)s THEN NULL
                                 ELSE %(now)s + make_interval(secs => %(delay)s) END,
               last_error_msg = CASE WHEN a.status = %(closing)s THEN a.last_error_msg
                   ELSE 'the agent process'
                        || CASE WHEN a.instance <> '' THEN ' on ' || a.instance ELSE '' END
                        || ' (pid ' || coalesce(a.pid::text, 'None')
                        || ') ended unexpectedly; the start is scheduled again' END,
               last_error_at = CASE WHEN a.status = %(closing)s THEN a.last_error_at
                                    ELSE %(now)s END,
               instance = '', instance_name = '', pid = NULL, heartbeat_at = NULL,
               updated = now()
        FROM (SELECT id, status, instance FROM gateway_agent WHERE id = %(id)s) old
        WHERE a.id = old.id AND a.status = ANY(%(live)s)
          AND a.start_token IS NOT DISTINCT FROM %(token)s::uuid
          -- The reaper read the beat a moment ago; a beat since then means it lives.
          AND (a.heartbeat_at IS NULL
               OR a.heartbeat_at <= %(now)s - make_interval(secs => %(stale)s))
        RETURNING a.status, old.instance, a.last_error_msg
        """,
        {
            "closing": AgentStatus.SHUTTING_DOWN,
            "stopped": AgentStatus.NOT_STARTED,
            "scheduled": AgentStatus.START_SCHEDULED,
            "now": now,
            "delay": config()["RESTART_DELAY_S"],
            "stale": config()["STALE_S"],
            "live": _LIVE,
            "token": token,
            "id": agent_id,
        },
    )
    if not rows:
        return None
    status, instance, error = rows[0]
    if status == AgentStatus.NOT_STARTED:
        where = f" on {instance}" if instance else ""
        return status, f"agent process{where} gone during shutdown; agent stopped"
    return status, error


def agent_restart_due(agent_id: int, now: datetime, conn: Conn = None) -> uuid.UUID | None:
    """A START_SCHEDULED agent whose restart time came: a new start token (returned) for the
    start task about to be sent. Still unclaimed START_RESEND_S later, the start is sent again:
    a broker that restarts without persistence loses the task, and the agent would stay
    START_SCHEDULED for good (a late old task finds its token superseded)."""
    token = uuid.uuid4()
    _, n = _run(
        conn,
        """
        UPDATE gateway_agent SET start_token = %(token)s,
               restart_at = %(now)s + make_interval(secs => %(resend)s)
        WHERE id = %(id)s AND status = %(scheduled)s AND restart_at <= %(now)s
        """,
        {
            "token": token,
            "id": agent_id,
            "scheduled": AgentStatus.START_SCHEDULED,
            "now": now,
            "resend": config()["START_RESEND_S"],
        },
    )
    return token if n else None


# --- agent: the process (gateway/agent.py) -------------------------------------------------------


# Whether instance %(aq_instance)s may run agent ``gateway_agent`` now: its place (the owner of
# the queue table it follows, gateway.selectors.PLACE_SQL) is that instance, or any instance
# (no place, or no instance given: the caller runs the agent in place).
_PLACED_HERE = f"""(%(aq_instance)s::text IS NULL OR (SELECT coalesce({PLACE_SQL}
    = lower(%(aq_instance)s::text), true) FROM gateway_agent ag WHERE ag.id = gateway_agent.id))"""


def agent_claim(
    conn: psycopg.Connection,
    agent_id: int,
    token: str,
    *,
    instance: str,
    pid: int,
    aq_instance: str | None = None,
) -> tuple | None:
    """START_SCHEDULED → STARTING for the start named by ``token``: the task that wins owns this
    agent session. With ``aq_instance`` (the worker's AQ_INSTANCE_NAME) only where the agent
    must run: a start delivered late to an instance that no longer owns the agent's queue table
    does nothing. Returns (name, username, password_encrypted, max_threads, max_memory,
    log_level, start_time) or None (shut down before a worker took it, superseded, or placed
    on another instance)."""
    rows, _ = _run(
        conn,
        f"""
        UPDATE gateway_agent SET status = %(to)s, instance = %(instance)s, pid = %(pid)s,
               instance_name = coalesce(%(aq_instance)s::text, ''),
               start_time = now(), heartbeat_at = now(), restart_at = NULL
        WHERE id = %(id)s AND start_token = %(token)s AND status = %(from)s
          AND {_PLACED_HERE}
        RETURNING name, username, password_encrypted, max_threads, max_memory, log_level,
                  start_time
        """,
        {
            "to": AgentStatus.STARTING,
            "from": AgentStatus.START_SCHEDULED,
            "instance": instance,
            "pid": pid,
            "id": agent_id,
            "token": token,
            "aq_instance": aq_instance,
            **place_params(),
        },
    )
    return rows[0] if rows else None


def agent_start_misplaced(conn: psycopg.Connection, agent_id: int, token: str) -> bool:
    """A start task reached an instance that must not run the agent (its owner moved since it
    was sent): the start is due again at once, so the reaper sends it to the owner now rather
    than after START_RESEND_S. Only the start of ``token``, still unclaimed."""
    _, n = _run(
        conn,
        "UPDATE gateway_agent SET restart_at = now() WHERE id = %(id)s "
        "AND start_token = %(token)s AND status = %(scheduled)s",
        {"id": agent_id, "token": token, "scheduled": AgentStatus.START_SCHEDULED},
    )
    return bool(n)


def agent_broken(conn: psycopg.Connection, agent_id: int, token: str, message: str) -> None:
    """STARTING → BROKEN: another process holds the agent's lock; only CLEAN_STARTUP_STATE
    leaves this. Only the start of ``token`` (a SHUTDOWN or a newer start since is kept)."""
    _run(
        conn,
        "UPDATE gateway_agent SET status = %(to)s, last_error_msg = %(msg)s, "
        "last_error_at = now() WHERE id = %(id)s AND status = %(from)s "
        "AND start_token = %(token)s",
        {
            "to": AgentStatus.BROKEN,
            "from": AgentStatus.STARTING,
            "msg": message,
            "id": agent_id,
            "token": token,
        },
    )


def agent_initializing(conn: psycopg.Connection, agent_id: int, token: str) -> bool:
    """STARTING → INITIALIZING; False when a SHUTDOWN came while starting."""
    _, n = _run(
        conn,
        "UPDATE gateway_agent SET status = %(to)s WHERE id = %(id)s AND status = %(from)s "
        "AND start_token = %(token)s",
        {
            "to": AgentStatus.INITIALIZING,
            "from": AgentStatus.STARTING,
            "id": agent_id,
            "token": token,
        },
    )
    return bool(n)


def agent_running(conn: psycopg.Connection, agent_id: int, token: str) -> None:
    """INITIALIZING → RUNNING for the start of ``token``: what waited for a restart applies."""
    _run(
        conn,
        "UPDATE gateway_agent SET status = %(to)s, restart_required = '[]'::jsonb, "
        "heartbeat_at = now() WHERE id = %(id)s AND status = %(from)s "
        "AND start_token = %(token)s",
        {
            "to": AgentStatus.RUNNING,
            "from": AgentStatus.INITIALIZING,
            "id": agent_id,
            "token": token,
        },
    )


def agent_heartbeat(
    conn: psycopg.Connection,
    agent_id: int,
    memory_mb: float | None,
    aq_instance: str | None = None,
) -> tuple | None:
    """The agent's beat; returns (status, shutdown_mode, log_level, start_token, now, placed)
    for the process to act on, None when the row is gone. ``placed`` is False once its instance
    ``aq_instance`` may no longer run it (the queue table it follows moved): it then ends."""
    rows, _ = _run(
        conn,
        f"UPDATE gateway_agent SET heartbeat_at = now(), memory_mb = %(rss)s WHERE id = %(id)s "
        f"RETURNING status, shutdown_mode, log_level, start_token::text, now(), {_PLACED_HERE}",
        {"rss": memory_mb, "id": agent_id, "aq_instance": aq_instance, **place_params()},
    )
    return rows[0] if rows else None


def agent_end(
    conn: psycopg.Connection,
    agent_id: int,
    *,
    error: str = "",
    restart: bool = False,
    token: str,
) -> None:
    """The process ends: NOT_STARTED, or START_SCHEDULED after RESTART_DELAY_S when
    ``restart`` (the worker itself is shutting down, or the agent's owner instance moved). Only
    the session of ``token`` ends: a SHUTDOWN and STARTUP meanwhile gave the agent a new token,
    whose start must not be lost. A SHUTDOWN that came after the process decided to restart
    wins: NOT_STARTED."""
    _run(
        conn,
        """
        UPDATE gateway_agent SET
               status = CASE WHEN %(restart)s AND status <> %(closing)s THEN %(scheduled)s
                             ELSE %(stopped)s END,
               instance = '', instance_name = '', pid = NULL,
               heartbeat_at = NULL, shutdown_mode = '',
               start_token = CASE WHEN %(restart)s AND status <> %(closing)s THEN start_token
                             END,
               restart_at = CASE WHEN %(restart)s AND status <> %(closing)s
                                 THEN now() + make_interval(secs => %(delay)s) END,
               last_error_msg = CASE WHEN %(error)s <> '' THEN %(error)s ELSE last_error_msg END,
               last_error_at = CASE WHEN %(error)s <> '' THEN now() ELSE last_error_at END
        WHERE id = %(id)s AND start_token = %(token)s::uuid
        """,
        {
            "scheduled": AgentStatus.START_SCHEDULED,
            "stopped": AgentStatus.NOT_STARTED,
            "closing": AgentStatus.SHUTTING_DOWN,
            "restart": restart,
            "delay": config()["RESTART_DELAY_S"],
            "error": error,
            "id": agent_id,
            "token": token,
        },
    )


# --- jobs ----------------------------------------------------------------------------------------


def jobs_initialize(conn: psycopg.Connection, agent_id: int) -> int:
    """The agent's INITIALIZING: counters restart at 0, FAILED jobs without a recovery problem
    are reset (§1.9.3), DELETE_PENDING ones are due at once. Returns the number of jobs."""
    rows, _ = _run(
        conn,
        """
        UPDATE gateway_job j SET propagated_msgs = 0, exceptionq_msgs = 0,
               status = CASE WHEN j.status = %(failed)s AND j.recovery = '' THEN %(ready)s
                             ELSE j.status END,
               failures = CASE WHEN j.status = %(failed)s AND j.recovery = '' THEN 0
                               ELSE j.failures END,
               next_attempt_at = CASE WHEN j.status = %(pending)s THEN NULL
                                      ELSE j.next_attempt_at END
        FROM gateway_link l WHERE l.id = j.link_id AND l.agent_id = %(agent)s
        RETURNING j.id
        """,
        {
            "failed": JobStatus.FAILED,
            "ready": JobStatus.READY,
            "pending": JobStatus.DELETE_PENDING,
            "agent": agent_id,
        },
    )
    return len(rows)


def job_succeeded(conn: Conn, job_id: int) -> bool:
    """A cycle went through: RETRY → READY, failures forgotten."""
    _, n = _run(
        conn,
        "UPDATE gateway_job SET status = %(ready)s, failures = 0, next_attempt_at = NULL "
        "WHERE id = %(id)s AND status = ANY(%(from)s)",
        {"ready": JobStatus.READY, "from": [JobStatus.READY, JobStatus.RETRY], "id": job_id},
    )
    return bool(n)


def job_failed(
    conn: Conn, job_id: int, message: str, *, unrecoverable: bool = False
) -> tuple[int, str] | None:
    """One more failure: RETRY with MGW's exponential back-off, FAILED at MAX_FAILURES or at
    once when ``unrecoverable``. Returns (failures, status), None when the job was not READY or
    RETRY (removed, reset to something else meanwhile)."""
    cfg = config()
    rows, _ = _run(
        conn,
        """
        UPDATE gateway_job SET
            failures = failures + 1,
            status = CASE WHEN %(unrec)s OR failures + 1 >= %(max)s THEN %(failed)s
                          ELSE %(retry)s END,
            last_error_msg = %(msg)s, last_error_at = now(),
            next_attempt_at = now() + make_interval(
                secs => least(%(low)s * power(2, least(failures, 60)), %(high)s))
        WHERE id = %(id)s AND status = ANY(%(from)s)
        RETURNING failures, status
        """,
        {
            "unrec": unrecoverable,
            "max": cfg["MAX_FAILURES"],
            "failed": JobStatus.FAILED,
            "retry": JobStatus.RETRY,
            "msg": message[:4000],
            "low": cfg["BACKOFF_MIN_S"],
            "high": cfg["BACKOFF_MAX_S"],
            "from": [JobStatus.READY, JobStatus.RETRY],
            "id": job_id,
        },
    )
    return rows[0] if rows else None


def job_recovery_problem(conn: Conn, job_id: int, problem: str, record: Any, message: str) -> bool:
    """Recovery found a problem only an administrator can clear (§1.11): FAILED with the
    problem and, for a missing message, the foreign record of the batch in doubt."""
    _, n = _run(
        conn,
        """
        UPDATE gateway_job SET recovery = %(problem)s, recovery_batch = %(record)s,
               status = %(failed)s, last_error_msg = %(msg)s, last_error_at = now()
        WHERE id = %(id)s AND status <> %(pending)s
        """,
        {
            "problem": problem,
            "record": json.dumps(record) if record is not None else None,
            "failed": JobStatus.FAILED,
            "msg": message,
            "pending": JobStatus.DELETE_PENDING,
            "id": job_id,
        },
    )
    return bool(n)


def job_recovery_reset(job_id: int, problem: str, conn: Conn = None) -> bool:
    """CLEANUP_GATEWAY(RESET_SUB_MISSING_*): READY with ``RESET_<problem>``, which the agent
    carries out at its next cycle (job_recovery_done)."""
    _, n = _run(
        conn,
        """
        UPDATE gateway_job SET recovery = %(reset)s, status = %(ready)s, failures = 0,
               next_attempt_at = NULL, updated = now()
        WHERE id = %(id)s AND recovery = %(problem)s AND status <> %(pending)s
        """,
        {
            "reset": f"RESET_{problem}",
            "ready": JobStatus.READY,
            "problem": problem,
            "pending": JobStatus.DELETE_PENDING,
            "id": job_id,
        },
    )
    return bool(n)


def job_recovery_done(conn: Conn, job_id: int) -> None:
    """The agent carried out a RESET_<problem>: no recovery problem any more."""
    _run(
        conn,
        "UPDATE gateway_job SET recovery = '', recovery_batch = NULL WHERE id = %(id)s",
        {"id": job_id},
    )


def job_reset(job_id: int, conn: Conn = None) -> bool:
    """RESET_JOB: READY, failures 0, retried at once; a recovery problem is forgotten too (the
    agent runs its recovery again, which finds the job in step or reports the problem again)."""
    _, n = _run(
        conn,
        """
        UPDATE gateway_job SET status = %(ready)s, failures = 0, next_attempt_at = NULL,
               recovery = '', recovery_batch = NULL, updated = now()
        WHERE id = %(id)s AND status <> %(pending)s
        """,
        {"ready": JobStatus.READY, "pending": JobStatus.DELETE_PENDING, "id": job_id},
    )
    return bool(n)


def job_mark_delete_pending(job_id: int, conn: Conn = None) -> bool:
    """REMOVE_JOB: DELETE_PENDING, due at once; the agent cleans the foreign side up and then
    deletes the job (job_delete)."""
    _, n = _run(
        conn,
        "UPDATE gateway_job SET status = %(pending)s, next_attempt_at = NULL, updated = now() "
        "WHERE id = %(id)s",
        {"pending": JobStatus.DELETE_PENDING, "id": job_id},
    )
    return bool(n)


def job_cleanup_retry(conn: Conn, job_id: int, message: str, delay_s: float) -> None:
    """REMOVE_JOB's foreign cleanup failed: the job stays DELETE_PENDING and is tried again."""
    _run(
        conn,
        "UPDATE gateway_job SET last_error_msg = %(msg)s, last_error_at = now(), "
        "next_attempt_at = now() + make_interval(secs => %(delay)s) "
        "WHERE id = %(id)s AND status = %(pending)s",
        {"msg": message, "delay": delay_s, "pending": JobStatus.DELETE_PENDING, "id": job_id},
    )


def job_delete(job: Job, *, user: Any = None, verb: str = "remove_job") -> None:
    """The end of a job: the row goes with what it owns here, its AQ subscriber (and so its
    pending copies) and its log records. The foreign side is the agent's to clean (or left, on
    REMOVE_JOB with force). Runs inside the caller's Django transaction."""
    before = object_snapshot(job)
    sub = job.subscriber
    agent_id = job.link.agent_id
    job.delete()
    if sub is not None:
        queue_services.subscriber_remove(user=None, subscriber=sub)
    change_log_deletion(user=user, verb=verb, object_type="gateway.job", before=before)
    notify_agent(agent_id)


def notify_agent(agent_id: int) -> None:
    """Wake the agent (at commit): it re-reads its configuration and jobs at once (MGW's
    configuration notifications, §1.2)."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_notify(%s, '')", [f"mgw_agent_{agent_id}"])


def job_pending_removal(job_id: int) -> Job | None:
    """The DELETE_PENDING job, locked, for the agent to delete after its cleanup."""
    return (
        Job.objects.select_for_update(of=("self",))
        .select_related("link", "subscriber")
        .filter(pk=job_id, status=JobStatus.DELETE_PENDING)
        .first()
    )
