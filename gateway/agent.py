"""The Messaging Gateway agent process (spec §1.2, §1.6): a long Celery task on the agent's own
queue ``mgw.<NAME>``, holding its worker slot for the whole agent session as MGW's agent holds
its Scheduler job process.

Start: the task claims its start token (START_SCHEDULED → STARTING), takes the agent's session
advisory lock (held: another agent process lives → BROKEN), then INITIALIZING (FAILED jobs reset,
counters zeroed, log records of removed jobs cleaned), then RUNNING. The polling loop beats the
agent row, re-reads the configuration, and hands due jobs to ``max_threads`` worker threads. A
shutdown request ends the loop (NORMAL lets running job cycles finish, IMMEDIATE stops them after
the batch in hand). The lock is what the reaper (``agents_reap``) reads: PostgreSQL drops it
the moment the process dies, however it died.

Each job cycle moves batches of ``MsgBatchSize`` messages, each batch in one PostgreSQL
transaction with its log record (exactly-once design: docs/GATEWAY.md). A failure counts toward
the job's FAILURES with MGW's back-off; a message that cannot be converted goes to the job's
exception queue and the job goes on.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import psycopg
from django import db as django_db
from django.conf import settings
from django.db import close_old_connections, transaction
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from core import crypto
from gateway import conversion, lifecycle
from gateway.choices import AgentStatus, Direction, JobStatus, LogLevel, Recovery, ShutdownMode
from gateway.config import LOCK_NS, config
from gateway.drivers import link_driver
from gateway.drivers.base import (
    BatchConversionError,
    ConversionError,
    Destination,
    Driver,
    GatewayMessage,
    Received,
)
from gateway.models import Link
from gateway.options import AGENT_OPTIONS, JOB_OPTIONS, bool_option, coerce
from jobs.runner import SHUTTING_DOWN
from queues import engine
from queues.services import conninfo as console_conninfo
from rules.lang.transform import resolve

log = logging.getLogger(__name__)


def agent_conninfo(username: str, password: str) -> str:
    """The agent's PostgreSQL connection: the console's, as the agent user (MGW's agent user,
    §1.3; STARTUP refuses an agent without one)."""
    base = console_conninfo()
    if not username:
        return base
    params = conninfo_to_dict(base)
    params.update(user=username, password=password)
    return make_conninfo(**params)


# --- the agent's log (MGW's log file, one row a line) --------------------------------------------


class AgentLog:
    """Buffers log lines from every thread; the polling loop writes them. ``level`` is the
    line's detail (0 basic … 4 trace): only lines at or below the agent's log level are kept."""

    def __init__(self, agent_id: int, session: Any):
        self.agent_id = agent_id
        self.session = session
        self.level = 0
        self._lines: list[tuple] = []
        self._lock = threading.Lock()

    def write(
        self,
        text: str,
        *,
        level: int = 0,
        severity: str = "INFO",
        component: str = "agent",
        code: str = "",
    ) -> None:
        if level > self.level:
            return
        with self._lock:
            self._lines.append((level, severity, component[:64], code, text[:10_000]))

    def flush(self, conn: psycopg.Connection) -> None:
        with self._lock:
            lines, self._lines = self._lines, []
        if not lines:
            return
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO gateway_agentlogline (agent_id, session, at, level, severity, "
                "component, code, text) VALUES (%s, %s, clock_timestamp(), %s, %s, %s, %s, %s)",
                [(self.agent_id, self.session, *line) for line in lines],
            )
        # Keep the newest lines only; the log is for reading, not an archive.
        conn.execute(
            "DELETE FROM gateway_agentlogline WHERE agent_id = %s AND id < (SELECT min(id) FROM "
            "(SELECT id FROM gateway_agentlogline WHERE agent_id = %s ORDER BY id DESC LIMIT %s) x)",
            (self.agent_id, self.agent_id, config()["LOG_KEEP_LINES"]),
        )


# --- one job -------------------------------------------------------------------------------------


class JobFailure(Exception):
    """A batch could not be propagated; counts as one of the job's FAILURES."""

    def __init__(self, message: str, *, code: str = "", unrecoverable: bool = False):
        super().__init__(message)
        self.code = code
        self.unrecoverable = unrecoverable


@dataclass
class JobSpec:
    """A job as the agent reads it each poll (one query for all the agent's jobs)."""

    id: int
    name: str
    uid: str
    direction: str
    status: str
    enabled: bool
    failures: int
    next_attempt_at: Any
    recovery: str
    recovery_batch: Any
    link_id: int
    link_name: str
    link_updated: Any
    source_queue_id: int | None
    subscriber: str | None
    foreign: Destination | None  # the foreign end (destination or source)
    exception_queue_id: int | None
    exception_foreign: Destination | None
    transformation: str
    poll_interval: float | None
    options: dict[str, Any]
    destination_queue_id: int | None
    has_log: bool

    @property
    def key(self) -> str:
        return f"mgw-{self.uid}"


_JOBS_SQL = """
SELECT j.id, j.name, j.uid::text, j.direction, j.status, j.enabled, j.failures,
       j.next_attempt_at, j.recovery, j.recovery_batch, l.id, l.name, l.updated,
       j.source_queue_id, s.name, j.transformation, j.poll_interval, j.options,
       j.destination_queue_id, j.exception_queue_id, l.outbound_log_queue <> '',
       f.provider_queue, f.domain, f.options, x.provider_queue, x.domain, x.options
FROM gateway_job j
JOIN gateway_link l ON l.id = j.link_id
LEFT JOIN queues_subscriber s ON s.id = j.subscriber_id
LEFT JOIN gateway_foreignqueue f ON f.id = coalesce(j.destination_foreign_id, j.source_foreign_id)
LEFT JOIN gateway_foreignqueue x ON x.id = j.exception_foreign_id
WHERE l.agent_id = %s
ORDER BY j.id
"""


def load_jobs(conn: psycopg.Connection, agent_id: int) -> list[JobSpec]:
    rows = conn.execute(_JOBS_SQL, (agent_id,)).fetchall()
    specs = []
    for r in rows:
        specs.append(
            JobSpec(
                id=r[0],
                name=r[1],
                uid=r[2],
                direction=r[3],
                status=r[4],
                enabled=r[5],
                failures=r[6],
                next_attempt_at=r[7],
                recovery=r[8],
                recovery_batch=r[9],
                link_id=r[10],
                link_name=r[11],
                link_updated=r[12],
                source_queue_id=r[13],
                subscriber=r[14],
                transformation=r[15],
                poll_interval=r[16],
                options=r[17] or {},
                destination_queue_id=r[18],
                exception_queue_id=r[19],
                has_log=bool(r[20]),
                foreign=Destination(r[21], r[22], r[23] or {}) if r[21] is not None else None,
                exception_foreign=(
                    Destination(r[24], r[25], r[26] or {}) if r[24] is not None else None
                ),
            )
        )
    return specs


def _transformer(name: str) -> Any:
    if not name:
        return None
    return resolve(name, getattr(settings, "MGW_TRANSFORMATIONS", {}))


class JobRunner:
    """One job inside the agent: its driver (its own connection to the foreign system, kept for
    the agent session), its PostgreSQL connection, and its schedule. One thread at a time runs
    it (the agent never submits a busy runner)."""

    def __init__(self, agent: AgentProcess, spec: JobSpec):
        self.agent = agent
        self.spec = spec
        self.driver: Driver | None = None
        self.driver_stamp: Any = None
        self.conn: psycopg.Connection | None = None
        self.next_poll = 0.0
        self.busy = False
        self.subscribed = False
        self.recovered = False
        self.future: Future | None = None
        self._infos: dict[int, engine.QueueInfo] = {}
        self.ended_at = 0.0  # monotonic time its last cycle ended

    # -- resources --

    def _conn(self) -> psycopg.Connection:
        if self.conn is None or self.conn.closed:
            self.conn = psycopg.connect(self.agent.conninfo)
        return self.conn

    def _driver(self) -> Driver:
        if self.driver is not None and self.driver_stamp != self.spec.link_updated:
            self.close_driver()  # the link was altered: reconnect with its new properties
        if self.driver is None:
            close_old_connections()
            link = Link.objects.get(pk=self.spec.link_id)
            self.driver = link_driver(
                link,
                client_id=f"mgw-{self.agent.name.lower()}-{self.spec.uid[:8]}",
                timeout=config()["FOREIGN_TIMEOUT_S"],
            )
            self.driver_stamp = self.spec.link_updated
            self.subscribed = False
            self.recovered = False
        return self.driver

    def idle(self) -> None:
        """Between cycles (the loop's thread; no cycle is running). A job that runs again
        when due keeps its link's connection alive; a disabled, failed or blocked one lets it
        go (an inbound consumer would otherwise hold its prefetched messages from the broker
        until the job runs again); its next cycle connects again."""
        if self.driver is None:
            return
        s = self.spec
        if (
            not s.enabled
            or s.status == JobStatus.FAILED
            or s.recovery in (Recovery.MISSING_MESSAGE, Recovery.MISSING_LOG_RECORD)
        ):
            self.close_driver()
            return
        try:
            self.driver.keep_alive()
        except Exception as exc:  # the next cycle reconnects and reports it
            log.debug("keeping the link of %s alive: %s", s.name, exc)

    def close_driver(self) -> None:
        if self.driver is not None:
            try:
                self.driver.close()
            except Exception as exc:  # a broken connection may fail to close; it is dropped
                log.debug("closing driver of %s: %s", self.spec.name, exc)
        self.driver = None

    def close(self) -> None:
        self.close_driver()
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    # -- scheduling --

    def poll_interval(self) -> float:
        if self.spec.poll_interval:
            return float(self.spec.poll_interval)
        return self.agent.polling_interval_s

    def batch_size(self) -> int:
        value = self.spec.options.get("MsgBatchSize")
        if value is None:
            return self.agent.batch_size
        return int(coerce("MsgBatchSize", JOB_OPTIONS["MsgBatchSize"], value, field="options"))

    def due(self, now_mono: float, now_db: Any) -> bool:
        s = self.spec
        if self.busy:
            return False
        if s.status == JobStatus.DELETE_PENDING:
            return (s.next_attempt_at is None or s.next_attempt_at <= now_db) and (
                now_mono >= self.next_poll
            )
        if not s.enabled or s.status == JobStatus.FAILED:
            return False
        if s.recovery in (Recovery.MISSING_MESSAGE, Recovery.MISSING_LOG_RECORD):
            return False
        if s.next_attempt_at is not None and s.next_attempt_at > now_db:
            return False
        return now_mono >= self.next_poll

    # -- a cycle: batches until the source is drained or the slice is used --

    def cycle(self) -> None:
        s = self.spec
        try:
            if s.status == JobStatus.DELETE_PENDING:
                self._remove()
                return
            moved = 0
            t_end = time.monotonic() + config()["SLICE_S"]
            self._prepare()
            while not self.agent.stopping_now():
                n = self._batch()
                moved += n
                # A NORMAL shutdown lets the cycle finish (up to its slice); IMMEDIATE stops it
                # after the batch in hand (the loop's condition).
                if n < self.batch_size() or time.monotonic() >= t_end:
                    break
            if s.status == JobStatus.RETRY or s.failures:
                self._succeeded()
            self.next_poll = time.monotonic() + (
                0 if moved >= self.batch_size() else self.poll_interval()
            )
        except Exception as exc:
            self._failed(exc)
        finally:
            self.ended_at = time.monotonic()
            self.busy = False

    def _info(self, conn: psycopg.Connection, queue_id: int) -> engine.QueueInfo:
        """A queue's engine view, read once per cycle (a stopped or altered queue is seen at
        the next cycle)."""
        info = self._infos.get(queue_id)
        if info is None:
            info = self._infos[queue_id] = engine.queue_info(conn, queue_id)
        return info

    def _prepare(self) -> None:
        self._infos = {}
        driver = self._driver()
        s = self.spec
        if s.direction == Direction.INBOUND and not self.subscribed:
            assert s.foreign is not None
            driver.subscribe(s.foreign, s.key)
            self.subscribed = True
            self.agent.log.write(
                f"subscribed to {s.foreign.provider_name}", component=f"job {s.name}"
            )
        if s.direction == Direction.OUTBOUND and s.recovery.startswith("RESET_"):
            self._reset_recovery()
        if s.direction == Direction.OUTBOUND and s.has_log and not self.recovered:
            self._recover_outbound()
        self.recovered = True

    def _batch(self) -> int:
        if self.spec.direction == Direction.OUTBOUND:
            return self._outbound()
        return self._inbound()

    # -- outbound: our queue → foreign queue --

    def _outbound(self) -> int:
        s, conn = self.spec, self._conn()
        driver = self._driver()
        assert s.foreign is not None and s.source_queue_id is not None
        preserve = bool_option(s.options, "PreserveMessageID")
        transform = _transformer(s.transformation)
        with conn.transaction():
            src = self._info(conn, s.source_queue_id)
            msgs = engine.dequeue(
                conn, src, mode=engine.REMOVE, consumer=s.subscriber, batch=self.batch_size()
            )
            if not msgs:
                return 0
            good: list[tuple[engine.DequeuedMessage, GatewayMessage]] = []
            bad: list[_Bad] = []
            for m in msgs:
                try:
                    payload = transform(m.payload) if transform else m.payload
                except Exception as exc:  # a transformation's own error is a conversion failure
                    bad.append((m, _reason(exc), conversion.TRANSFORMATION_FAILED))
                    continue
                try:
                    good.append((m, conversion.outbound(m, payload, preserve_id=preserve)))
                except Exception as exc:
                    code = (
                        conversion.TRANSFORMATION_TYPE
                        if transform
                        else conversion.PAYLOAD_NOT_SUPPORTED
                    )
                    bad.append((m, _reason(exc), code))
            batch = uuid.uuid4()
            # Every write of ours goes before the publish, so that only the COMMIT follows it:
            # a refused exception-queue enqueue must not roll back a batch already sent.
            if bad:
                self._refuse_without_exception_queue(bad[0])
                self._outbound_exceptions(conn, bad)
            while good:
                try:
                    driver.publish(
                        s.foreign,
                        [g for _, g in good],
                        dedupe_ids=[f"{s.uid}:{m.id}" for m, _ in good],
                        log_record={
                            "job": s.key,
                            "batch": str(batch),
                            "ids": [m.id for m, _ in good],
                        },
                    )
                    break
                except BatchConversionError as exc:
                    # Nothing of the batch was sent: move the one message aside, send the rest.
                    m, _ = good.pop(exc.index)
                    bad.append((m, exc.reason, conversion.PAYLOAD_NOT_SUPPORTED))
                    self._refuse_without_exception_queue(bad[-1])
                    self._outbound_exceptions(conn, [bad[-1]])
            if good:
                # Our log record of the batch, beside the foreign one written with it; a batch
                # that sent nothing wrote no foreign record and gets none here either.
                conn.execute(
                    "INSERT INTO gateway_sendlog (job_id, batch, message_ids, created) "
                    "VALUES (%s, %s, %s, now())",
                    (s.id, batch, json.dumps([m.id for m, _ in good])),
                )
                conn.execute(
                    "DELETE FROM gateway_sendlog WHERE job_id = %s AND id < (SELECT max(id) - 4 "
                    "FROM gateway_sendlog WHERE job_id = %s)",
                    (s.id, s.id),
                )
            self._count(conn, propagated=len(good), exceptions=len(bad))
        self.agent.log.write(
            f"propagated {len(good)} message(s) to {s.foreign.provider_name}"
            + (f", {len(bad)} to the exception queue" if bad else ""),
            level=3,
            component=f"job {s.name}",
        )
        return len(msgs)

    def _refuse_without_exception_queue(self, bad: _Bad) -> None:
        """Without an exception queue a conversion failure fails the batch (spec §1.10)."""
        if self.spec.exception_queue_id is None:
            m, reason, code = bad
            raise JobFailure(
                f"[{code}] message {m.id} cannot be converted ({reason}) and the job has no "
                "exception queue",
                code=code,
            )

    def _outbound_exceptions(self, conn: psycopg.Connection, bad: list[_Bad]) -> None:
        s = self.spec
        exq = engine.queue_info(conn, s.exception_queue_id)
        engine.enqueue(
            conn,
            exq,
            [
                engine.NewMessage(
                    payload=m.payload,
                    priority=m.priority,
                    correlation=m.correlation,
                    sender=m.sender,
                    type_name=m.type_name,
                    headers={
                        **(m.headers or {}),
                        "mgw_job": s.name,
                        "mgw_original_msgid": m.id,
                        "mgw_exception_reason": reason[:2000],
                        "mgw_exception_code": code,
                    },
                )
                for m, reason, code in bad
            ],
            validate=False,
        )
        for m, reason, code in bad:
            self.agent.log.write(
                f"[{code}] message {m.id} moved to the exception queue: {reason}",
                severity="WARN",
                component=f"job {s.name}",
                code=code,
            )

    def _recover_outbound(self) -> None:
        """After a crash between the foreign commit and ours, the foreign log record names a
        batch our log lacks: those messages were sent, so consume them now instead of again."""
        s, conn = self.spec, self._conn()
        driver = self._driver()
        record = driver.read_outbound_log(s.key)
        if record is None:
            # Another job of the link may hold the log's records inside its own transaction
            # for a moment (AMQP): look again before calling the record missing.
            time.sleep(0.2)
            record = driver.read_outbound_log(s.key)
        rows = conn.execute(
            "SELECT batch::text FROM gateway_sendlog WHERE job_id = %s ORDER BY id DESC", (s.id,)
        ).fetchall()
        conn.commit()
        ours = [r[0] for r in rows]
        if record is None:
            if ours:
                self._set_recovery(
                    Recovery.MISSING_LOG_RECORD,
                    None,
                    "[417] the job's record in the outbound log queue is missing "
                    "(purged or re-created?)",
                )
            return
        if ours and record.get("batch") == ours[0]:
            return  # in step
        if record.get("batch") in ours:
            self._set_recovery(
                Recovery.MISSING_LOG_RECORD,
                None,
                "[417] the outbound log queue holds an older record than ours",
            )
            return
        ids = [int(i) for i in record.get("ids", [])]
        try:
            missing = self._consume_sent(ids, record)
        except _Rollback as rb:
            missing = rb.missing
        if missing:
            self._set_recovery(
                Recovery.MISSING_MESSAGE,
                record,
                f"[415] {len(missing)} message(s) of an interrupted batch are no longer in the "
                f"source queue (ids {missing[:10]}): dequeued by someone else or purged",
            )
        else:
            self.agent.log.write(
                f"recovered an interrupted batch of {len(ids)} message(s) already delivered",
                component=f"job {s.name}",
            )

    def _consume_sent(
        self, ids: list[int], record: dict[str, Any], *, partial: bool = False
    ) -> list[int]:
        """Consume the messages of a batch the foreign log says went out; returns ids not found
        (nothing is consumed then, unless ``partial``)."""
        s, conn = self.spec, self._conn()
        assert s.source_queue_id is not None
        with conn.transaction():
            src = engine.queue_info(conn, s.source_queue_id)
            found = []
            for mid in ids:
                got = engine.dequeue(
                    conn, src, mode=engine.REMOVE, consumer=s.subscriber, msgid=mid
                )
                if got:
                    found.append(mid)
            missing = [i for i in ids if i not in found]
            if missing and not partial:
                raise _Rollback(missing)  # leaves the transaction: nothing consumed
            conn.execute(
                "INSERT INTO gateway_sendlog (job_id, batch, message_ids, created) "
                "VALUES (%s, %s, %s, now()) ON CONFLICT DO NOTHING",
                (s.id, record.get("batch") or str(uuid.uuid4()), json.dumps(found)),
            )
            self._count(conn, propagated=len(found), exceptions=0)
        return missing if not partial else []

    def _reset_recovery(self) -> None:
        """CLEANUP_GATEWAY's RESET_SUB_MISSING_* (services set RESET_<problem>)."""
        s, conn = self.spec, self._conn()
        if s.recovery == f"RESET_{Recovery.MISSING_MESSAGE}" and s.recovery_batch:
            record = s.recovery_batch
            self._consume_sent([int(i) for i in record.get("ids", [])], record, partial=True)
            note = "the missing messages are treated as gone; the job goes on"
        else:
            # Start both logs afresh (the foreign record too, or the next recovery would take
            # its old batch for one in doubt); the next batch writes both.
            self._driver().clear_outbound_log(s.key)
            conn.execute("DELETE FROM gateway_sendlog WHERE job_id = %s", (s.id,))
            note = "the log records are reset; a message already delivered may be sent again"
        lifecycle.job_recovery_done(conn, s.id)
        conn.commit()
        s.recovery = ""
        self.recovered = True
        self.agent.log.write(note, component=f"job {s.name}", severity="WARN")

    def _set_recovery(self, problem: str, record: Any, message: str) -> None:
        conn = self._conn()
        lifecycle.job_recovery_problem(conn, self.spec.id, problem, record, message)
        conn.commit()
        self.spec.recovery = problem
        self.agent.log.write(
            message, severity="ERROR", component=f"job {self.spec.name}", code=message[1:4]
        )
        raise _Stop()

    # -- inbound: foreign queue → our queue --

    def _inbound(self) -> int:
        s, conn = self.spec, self._conn()
        driver = self._driver()
        assert s.foreign is not None and s.destination_queue_id is not None
        received = driver.fetch(
            s.foreign, s.key, max_messages=self.batch_size(), timeout=config()["FETCH_WAIT_S"]
        )
        if not received:
            return 0
        preserve = bool_option(s.options, "PreserveMessageID")
        transform = _transformer(s.transformation)
        with conn.transaction():
            dst = self._info(conn, s.destination_queue_id)
            keys = [r.key for r in received if r.key]
            seen: set[str] = set()
            if keys:
                # Record the keys and learn which were already there, in one statement: a
                # redelivery of what we enqueued (or moved to the exception queue) is skipped.
                fresh = {
                    row[0]
                    for row in conn.execute(
                        "INSERT INTO gateway_receivelog (job_id, key, created) "
                        "SELECT %s, k, now() FROM unnest(%s::text[]) AS k "
                        "ON CONFLICT DO NOTHING RETURNING key",
                        (s.id, keys),
                    )
                }
                seen = set(keys) - fresh
            new: list[engine.NewMessage] = []
            taken: set[str] = set()
            bad: list[tuple[Received, str, str]] = []
            for r in received:
                if r.key and (r.key in seen or r.key in taken):
                    # A redelivery of what we already took: acknowledge only. Keys are the
                    # system's ids, so publisher-set ids must be unique (docs/GATEWAY.md).
                    self.agent.log.write(
                        f"skipped {r.key}: already received", level=1, component=f"job {s.name}"
                    )
                    continue
                if r.key:
                    taken.add(r.key)
                # A transformation's error is [722]; a result of it that cannot be enqueued
                # [721]; a foreign message that does not fit our queue otherwise [724].
                code = conversion.CONVERSION_NOT_SUPPORTED
                try:
                    if r.conversion_error or r.message is None:
                        raise ConversionError(r.conversion_error or "unreadable message")
                    payload = conversion.payload_of(r.message)
                    if transform:
                        code = conversion.TRANSFORMATION_FAILED
                        payload = transform(payload)
                        code = conversion.TRANSFORMATION_TYPE
                    msg = conversion.inbound(
                        r.message, payload, preserve_id=preserve, link=s.link_name
                    )
                    engine.validate_message(dst, msg)
                except Exception as exc:
                    bad.append((r, _reason(exc), code))
                    continue
                new.append(msg)
            # Ours first: a refused enqueue must not leave copies in the exception queue.
            if new:
                engine.enqueue(conn, dst, new, user=f"MGW_{s.name}"[:128], validate=False)
            if bad:
                if s.exception_foreign is None:
                    _, reason, code = bad[0]
                    raise JobFailure(
                        f"[{code}] a message of {s.foreign.provider_name} cannot be converted "
                        f"({reason}) and the job has no exception queue",
                        code=code,
                    )
                for r, reason, code in bad:
                    driver.publish_raw(s.exception_foreign, r.raw, reason=f"[{code}] {reason}")
                    self.agent.log.write(
                        f"[{code}] message {r.key or '?'} moved to the exception queue: {reason}",
                        severity="WARN",
                        component=f"job {s.name}",
                        code=code,
                    )
            self._count(conn, propagated=len(new), exceptions=len(bad))
        # Acknowledge only after our commit: a crash before this redelivers, and the log above
        # recognises what was already enqueued.
        driver.ack(s.foreign, s.key, received)
        self.agent.log.write(
            f"enqueued {len(new)} message(s) from {s.foreign.provider_name}",
            level=3,
            component=f"job {s.name}",
        )
        return len(received)

    # -- counters and failures --

    def _count(self, conn: psycopg.Connection, *, propagated: int, exceptions: int) -> None:
        conn.execute(
            "UPDATE gateway_job SET propagated_msgs = propagated_msgs + %s, "
            "exceptionq_msgs = exceptionq_msgs + %s, last_propagated_at = now() WHERE id = %s",
            (propagated, exceptions, self.spec.id),
        )

    def _succeeded(self) -> None:
        conn = self._conn()
        lifecycle.job_succeeded(conn, self.spec.id)
        conn.commit()
        self.agent.log.write("propagation resumed", component=f"job {self.spec.name}")

    def _failed(self, exc: BaseException) -> None:
        if isinstance(exc, _Stop):
            return
        s = self.spec
        self.close_driver()  # reconnect next time; unacknowledged messages come back
        message = _reason(exc)
        code = getattr(exc, "code", "") or ""
        unrecoverable = bool(getattr(exc, "unrecoverable", False))
        try:
            conn = self._conn()
            if not conn.closed:
                conn.rollback()
            row = lifecycle.job_failed(conn, s.id, message, unrecoverable=unrecoverable)
            conn.commit()
        except psycopg.Error as db_exc:
            # Our own database is unreachable: nothing to record; the agent's beat will notice.
            log.warning("job %s: cannot record failure: %s", s.name, db_exc)
            if self.conn is not None:
                self.conn.close()
            self.conn = None
            row = None
        if row is not None:
            # The agent's copy of what lifecycle.job_failed wrote, until the next poll rereads it.
            s = self.spec = replace(s, failures=row[0], status=row[1])
        self.agent.log.write(
            f"propagation failed ({s.failures} failure(s), {s.status}): {message}",
            severity="ERROR",
            component=f"job {s.name}",
            code=code,
        )

    # -- REMOVE_JOB's cleanup --

    def _remove(self) -> None:
        s = self.spec
        try:
            driver = self._driver()
            if s.direction == Direction.INBOUND and s.foreign is not None:
                driver.unsubscribe(s.foreign, s.key)
            if s.direction == Direction.OUTBOUND and s.has_log:
                driver.clear_outbound_log(s.key)
        except Exception as exc:
            self.close_driver()
            conn = self._conn()
            lifecycle.job_cleanup_retry(
                conn,
                s.id,
                f"REMOVE_JOB cleanup failed, retrying: {_reason(exc)}",
                config()["REMOVE_RETRY_S"],
            )
            conn.commit()
            self.next_poll = time.monotonic() + config()["REMOVE_RETRY_S"]
            self.agent.log.write(
                f"cleanup failed: {_reason(exc)}", severity="WARN", component=f"job {s.name}"
            )
            return
        close_old_connections()
        with transaction.atomic():
            job = lifecycle.job_pending_removal(s.id)
            if job is not None:
                lifecycle.job_delete(job, verb="remove_job_cleanup")
        self.agent.log.write("removed", component=f"job {s.name}")
        self.close()


# A message that could not be converted: the message, why, and its MGW code ([720]-[729]).
_Bad = tuple[engine.DequeuedMessage, str, str]


class _Stop(Exception):
    """The job cannot go on until an administrator acts (recovery problem recorded)."""


class _Rollback(Exception):
    def __init__(self, missing: list[int]):
        super().__init__(missing)
        self.missing = missing


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) < 2000 else text[:2000] + "…"


# --- the agent -----------------------------------------------------------------------------------


@dataclass
class AgentProcess:
    id: int
    name: str
    conninfo: str
    max_threads: int
    max_memory: int
    options: dict[str, str]
    session: Any
    log: AgentLog
    stop_mode: str | None = None
    runners: dict[int, JobRunner] = field(default_factory=dict)

    @property
    def batch_size(self) -> int:
        value = self.options.get("oracle.mgw.batch_size")
        if value is None:
            return 30
        return int(
            coerce(
                "oracle.mgw.batch_size",
                AGENT_OPTIONS["oracle.mgw.batch_size"],
                value,
                field="value",
                secret=True,  # agent options may be encrypted ones
            )
        )

    @property
    def polling_interval_s(self) -> float:
        value = self.options.get("oracle.mgw.polling_interval")
        if value is None:
            return 5.0
        opt = AGENT_OPTIONS["oracle.mgw.polling_interval"]
        seconds = coerce("oracle.mgw.polling_interval", opt, value, field="value", secret=True)
        return int(seconds) / 1000.0

    def stopping(self) -> bool:
        return self.stop_mode is not None

    def stopping_now(self) -> bool:
        return self.stop_mode == ShutdownMode.IMMEDIATE


def _rss_mb() -> float | None:
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 1_048_576
    except (OSError, ValueError, IndexError):
        return None


def run(agent_id: int, token: str, *, hostname: str = "", aq_instance: str | None = None) -> str:
    """The agent process; returns how it ended (for the task's result and the tests).

    ``aq_instance``: the worker's AQ_INSTANCE_NAME. The claim then requires that the agent may
    run on that instance (it owns the queue table the agent follows, docs/INSTANCES.md), and the
    agent ends (``owner_moved``) at the first beat where it no longer may."""
    cfg = config()
    control = psycopg.connect(console_conninfo(), autocommit=True)
    instance = hostname or socket.gethostname()
    try:
        row = lifecycle.agent_claim(
            control, agent_id, token, instance=instance, pid=os.getpid(), aq_instance=aq_instance
        )
        if row is None:
            # Shut down before a worker took it, a newer start superseded it, or it must run on
            # another instance now: then the reaper sends the start there at once.
            if aq_instance is not None and lifecycle.agent_start_misplaced(
                control, agent_id, token
            ):
                return f"not placed on instance {aq_instance}"
            return "stale"
        name, username, password_enc, max_threads, max_memory, log_level, session = row
        # Our session lock marks the live agent process; another holder means a second process.
        locked = control.execute(
            "SELECT pg_try_advisory_lock(%s, %s)", (LOCK_NS, agent_id)
        ).fetchone()[0]
        if not locked:
            lifecycle.agent_broken(
                control,
                agent_id,
                token,
                "another agent process is already running for this agent; run CLEANUP_GATEWAY "
                "(CLEAN_STARTUP_STATE) once it is gone",
            )
            return "broken"
        agent_log = AgentLog(agent_id, session)
        agent_log.level = log_level
        try:
            conninfo = agent_conninfo(username, crypto.decrypt(password_enc))
            psycopg.connect(conninfo).close()  # the agent user must be able to log in
        except Exception as exc:
            lifecycle.agent_end(
                control,
                agent_id,
                error=f"the agent cannot connect as {username!r}: {exc}",
                token=token,
            )
            return "failed"
        if not lifecycle.agent_initializing(control, agent_id, token):
            # A SHUTDOWN came while we were starting: stop here, as asked.
            lifecycle.agent_end(control, agent_id, token=token)
            control.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_NS, agent_id))
            return "shutdown"
        options = _agent_options(control, agent_id)
        agent = AgentProcess(
            agent_id, name, conninfo, max_threads, max_memory, options, session, agent_log
        )
        agent_log.write(
            f"agent {name} starting on {instance}"
            + (f", instance {aq_instance}" if aq_instance else "")
            + f" (pid {os.getpid()}), max_threads {max_threads}, "
            f"log level {LogLevel(log_level).name}"
        )
        _initialize(control, agent)
        lifecycle.agent_running(control, agent_id, token)
        agent_log.write("agent running")
        agent_log.flush(control)
        return _loop(control, agent, token, cfg, aq_instance)
    except (psycopg.OperationalError, django_db.OperationalError, django_db.InterfaceError) as exc:
        # Our database went away (a restartable error): the reaper schedules the start again.
        log.warning("agent %s lost its database: %s", agent_id, exc)
        return "lost"
    finally:
        control.close()


def _agent_options(conn: psycopg.Connection, agent_id: int) -> dict[str, str]:
    rows = conn.execute(
        "SELECT name, value, encrypted FROM gateway_agentoption WHERE agent_id = %s", (agent_id,)
    ).fetchall()
    return {n: crypto.decrypt(v) if enc else v for n, v, enc in rows}


def _initialize(conn: psycopg.Connection, agent: AgentProcess) -> None:
    """INITIALIZING: counters restart at 0, FAILED jobs are reset (§1.9.3), and inbound log
    records older than their retention are dropped (CLEAN_LOG_QUEUES runs at every start)."""
    configured = lifecycle.jobs_initialize(conn, agent.id)
    conn.execute(
        "DELETE FROM gateway_receivelog r USING gateway_job j, gateway_link l WHERE "
        "r.job_id = j.id AND j.link_id = l.id AND l.agent_id = %s AND "
        "r.created < now() - make_interval(secs => %s)",
        (agent.id, config()["RECEIVE_LOG_RETENTION_S"]),
    )
    if configured:
        agent.log.write(f"{configured} job(s) configured", level=1)


def _loop(
    control: psycopg.Connection,
    agent: AgentProcess,
    token: str,
    cfg: dict[str, Any],
    aq_instance: str | None = None,
) -> str:
    listener = engine.Listener(connection=psycopg.connect(agent.conninfo, autocommit=True))
    channel = f"mgw_agent_{agent.id}"
    listener.listen(channel)
    woke: set[str] = set()
    pool = ThreadPoolExecutor(max_workers=agent.max_threads, thread_name_prefix=f"mgw-{agent.name}")
    link_busy: dict[int, int] = {}
    last_beat = 0.0
    warned_memory = False
    end = "shutdown"
    try:
        while True:
            now_mono = time.monotonic()
            if now_mono - last_beat >= cfg["HEARTBEAT_S"] or agent.stopping():
                rss = _rss_mb()
                row = lifecycle.agent_heartbeat(control, agent.id, rss, aq_instance)
                last_beat = now_mono
                if row is None or row[3] != token:
                    agent.stop_mode = ShutdownMode.IMMEDIATE
                    end = "superseded"
                else:
                    status, mode, level, _, now_db, placed = row
                    if level != agent.log.level:
                        agent.log.level = level
                        agent.log.write(f"log level {LogLevel(level).name}")
                    if status == AgentStatus.SHUTTING_DOWN and agent.stop_mode is None:
                        agent.stop_mode = mode or ShutdownMode.NORMAL
                        agent.log.write(f"shutdown requested ({agent.stop_mode})")
                    if not placed and agent.stop_mode is None:  # after a SHUTDOWN's check
                        # The queue table it follows moved to another instance (failover or
                        # failback): stop after the batches in hand; the start is scheduled
                        # again only once our lock is gone, and sent to the new owner.
                        agent.stop_mode = ShutdownMode.IMMEDIATE
                        end = "owner_moved"
                        agent.log.write(
                            f"the queue table it follows is no longer owned by {aq_instance}: "
                            "the agent moves to its owner instance"
                        )
                if SHUTTING_DOWN.is_set() and agent.stop_mode is None:
                    # The worker itself is stopping (warm shutdown): MGW's database-shutdown
                    # trigger: end this run, and let the start be scheduled again.
                    agent.stop_mode = ShutdownMode.NORMAL
                    end = "worker_shutdown"
                if rss and rss > agent.max_memory and not warned_memory:
                    warned_memory = True
                    agent.log.write(
                        f"the worker process uses {rss:.0f} MB, above max_memory "
                        f"{agent.max_memory} MB",
                        severity="WARN",
                        code="436",  # MGW's LOW MEMORY WARNING (§4.5)
                    )
            if agent.stopping():
                break
            loaded_at = time.monotonic()
            now_db = control.execute("SELECT now()").fetchone()[0]
            specs = load_jobs(control, agent.id)
            for spec in specs:
                if spec.direction == Direction.OUTBOUND and spec.source_queue_id is not None:
                    source_channel = engine.channel_name(spec.source_queue_id)
                    listener.listen(source_channel)
                    runner = agent.runners.get(spec.id)
                    if source_channel in woke and runner is not None and not runner.busy:
                        runner.next_poll = 0.0  # an enqueue committed: no need to wait the poll
            woke.clear()
            _schedule(agent, specs, pool, link_busy, loaded_at, now_db)
            agent.log.flush(control)
            # Woken by a configuration change (services NOTIFY) or an enqueue on a source.
            for note in listener.conn.notifies(timeout=cfg["LOOP_WAIT_S"], stop_after=1):
                woke.add(note.channel)
    finally:
        # IMMEDIATE runners stop after the batch in hand, NORMAL ones after their cycle.
        pool.shutdown(wait=True, cancel_futures=True)
        # Nothing runs any more (cycles queued but never started were cancelled, their busy
        # flag still set): close every runner's connections.
        for runner in agent.runners.values():
            runner.close()
        listener.close()
        agent.log.write(f"agent stopped ({end})")
        with contextlib.suppress(psycopg.Error):
            agent.log.flush(control)
    # Unlock first: a STARTUP right after our NOT_STARTED must not find the lock still held
    # (it would take this process for a second one and go BROKEN).
    control.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_NS, agent.id))
    if end in ("worker_shutdown", "owner_moved"):
        lifecycle.agent_end(control, agent.id, restart=True, token=token)
    elif end != "superseded":
        lifecycle.agent_end(control, agent.id, token=token)
    return end


def _schedule(
    agent: AgentProcess,
    specs: list[JobSpec],
    pool: ThreadPoolExecutor,
    link_busy: dict[int, int],
    now_mono: float,
    now_db: Any,
) -> None:
    """Refresh each runner's view of its job and hand the due ones to the pool, at most
    ``max_connections`` at a time per link."""
    seen = set()
    limits = dict(Link.objects.filter(agent_id=agent.id).values_list("id", "max_connections"))
    # Longest-waiting first: in job-id order, a job polled at least once per loop (poll interval
    # under LOOP_WAIT_S) took its link's only connection every round and starved the others.
    rested = {job_id: r.ended_at for job_id, r in agent.runners.items()}
    for spec in sorted(specs, key=lambda s: rested.get(s.id, 0.0)):
        seen.add(spec.id)
        runner = agent.runners.get(spec.id)
        if runner is None:
            runner = agent.runners[spec.id] = JobRunner(agent, spec)
        elif runner.busy or runner.ended_at >= now_mono:
            # Busy, or its cycle ended after these rows were read: they may predate what that
            # cycle wrote (a failure's back-off, a reset recovery). Next round.
            continue
        else:
            if (spec.status, spec.enabled) != (runner.spec.status, runner.spec.enabled):
                runner.next_poll = 0.0  # reset, enable or remove: act now
            runner.spec = spec
        if not runner.due(now_mono, now_db):
            runner.idle()
            continue
        if link_busy.get(spec.link_id, 0) >= limits.get(spec.link_id, 1):
            runner.idle()  # due, but its link's connections are all taken: wait alive
            continue
        runner.busy = True
        with _BUSY_LOCK:
            link_busy[spec.link_id] = link_busy.get(spec.link_id, 0) + 1

        def done(_: Future, link_id: int = spec.link_id) -> None:
            with _BUSY_LOCK:
                link_busy[link_id] -= 1

        runner.future = pool.submit(_run_cycle, runner)
        runner.future.add_done_callback(done)
    for job_id in list(agent.runners):
        if job_id not in seen and not agent.runners[job_id].busy:
            agent.runners.pop(job_id).close()


_BUSY_LOCK = threading.Lock()


def _run_cycle(runner: JobRunner) -> None:
    try:
        runner.cycle()
    finally:
        close_old_connections()
