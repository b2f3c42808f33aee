"""One propagation run: a Celery task's stay in a schedule's window.

The run dequeues a batch from the source as the propagation's subscriber, decides each message with
the rule sets (Table 5-1, negative set first), transforms it, and enqueues it into the destination,
all in one PostgreSQL transaction: a crash at any point leaves every message either still at the
source or exactly once at the destination. A remote destination (QUEUE@LINK) cannot share the
transaction: the batch commits at the remote first, with receipts that make a re-send a no-op,
then here (``Run._batch_remote``, docs/SITES.md "Exactly once"). Idle, it LISTENs on the source
queue's channel and looks again at worst after the schedule's latency.

Exclusivity: the run holds a session advisory lock on its propagation for its whole life. The lock
also tells the reaper whether a RUNNING run's worker is alive: PostgreSQL drops it the moment the
worker's session ends, however the worker died.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import threading
import time
from dataclasses import astuple, dataclass, field, replace
from typing import Any, NoReturn

import psycopg
from django.conf import settings
from psycopg import errors as pg_errors

from jobs.choices import RunEnd, RunState
from queues import engine

log = logging.getLogger(__name__)

# Advisory-lock namespace (the two-int key form, a keyspace apart from the engine's bigint locks).
LOCK_NS = 0x4150  # "AP"
# A queue-to-dblink job's lock: keyed by (source queue, link), not by a propagation, so the job
# stays one run at a time when its first propagation is dropped and the next one takes it over.
LOCK_NS_JOB = 0x4151

_LOCK_KEY_SQL = f"""
SELECT CASE WHEN NOT queue_to_queue AND destination_dblink <> '' THEN {LOCK_NS_JOB}
            ELSE {LOCK_NS} END,
       CASE WHEN NOT queue_to_queue AND destination_dblink <> ''
            THEN hashtext(source_queue_id::text || '@' || destination_dblink) ELSE id END
FROM jobs_propagation WHERE id = %s
"""


def lock_key(conn: psycopg.Connection, propagation_id: int) -> tuple[int, int]:
    """The advisory lock (two-int form) a run of ``propagation_id`` holds for its life."""
    row = conn.execute(_LOCK_KEY_SQL, (propagation_id,)).fetchone()
    return (row[0], row[1]) if row is not None else (LOCK_NS, propagation_id)


LOCK_WAIT_S = 5.0
# A run that lost its database waits this long for it to record why it failed.
RECONNECT_WAIT_S = 15.0

# Set when this process's Celery worker starts a warm shutdown (jobs/worker.py): runs end at their
# next loop instead of holding the shutdown for the rest of their slice.
SHUTTING_DOWN = threading.Event()


def config() -> dict[str, Any]:
    return settings.AQ_PROPAGATION


# --- finishing a run: one statement, shared by the runner and the reaper -------------------------

_FINISH_SQL = """
WITH r AS (
    UPDATE jobs_propagationrun SET state = %(state)s, end_reason = %(reason)s, error = %(error)s,
           ended_at = now(), waiting = false, folded = true
    WHERE id = %(run)s AND state = ANY(%(from_states)s)
    RETURNING id, propagation_id, propagated, bytes, discarded, exceptions, dequeue_time,
              rule_time, enqueue_time, started_at, folded
)
UPDATE jobs_propagationschedule s SET
    run_id = NULL,
    last_run_at = now(),
    total_runs = s.total_runs + 1,
    total_number = s.total_number + r.propagated,
    total_bytes = s.total_bytes + r.bytes,
    total_time = s.total_time + extract(epoch FROM now() - coalesce(r.started_at, now())),
    total_discarded = s.total_discarded + r.discarded,
    total_exceptions = s.total_exceptions + r.exceptions,
    max_number = greatest(s.max_number, r.propagated),
    max_bytes = greatest(s.max_bytes, r.bytes),
    elapsed_dequeue_time = s.elapsed_dequeue_time + r.dequeue_time,
    elapsed_rule_time = s.elapsed_rule_time + r.rule_time,
    elapsed_enqueue_time = s.elapsed_enqueue_time + r.enqueue_time,
    failures = CASE WHEN %(failed)s THEN s.failures + 1
                    WHEN %(state)s = 'SUCCEEDED' THEN 0 ELSE s.failures END,
    last_error_msg = CASE WHEN %(failed)s THEN %(error)s ELSE s.last_error_msg END,
    last_error_at = CASE WHEN %(failed)s THEN now() ELSE s.last_error_at END,
    enabled = CASE WHEN %(failed)s AND s.failures + 1 >= s.max_failures THEN false
                   ELSE s.enabled END,
    next_run_at = CASE
        WHEN %(failed)s THEN now() + make_interval(
            secs => least(%(low)s * power(2, least(s.failures, 60)), %(high)s))
        ELSE now() END
FROM r
-- Only the schedules that name this run: one created after an unschedule is not this run's,
-- and must neither take its totals nor be row-locked by its end (dispatch skips locked rows).
-- A queue-to-dblink job's rows all name its run: they stay alike.
WHERE s.run_id = r.id
RETURNING s.failures, s.enabled
"""


def finish_run(
    conn: psycopg.Connection,
    run_id: int,
    *,
    state: str,
    reason: str = "",
    error: str = "",
    from_states: tuple[str, ...] = (RunState.QUEUED, RunState.RUNNING),
) -> tuple[int, bool] | None:
    """End a run that is in one of ``from_states`` and fold its counters into the schedule's
    totals (once). The reaper narrows ``from_states`` to what it saw: a QUEUED run it calls LOST
    may have been claimed by its worker a moment ago, and must then be left alone.

    A FAILED run counts a consecutive failure: the schedule backs off exponentially and disables
    itself at ``max_failures``. A SUCCEEDED run resets the count. Returns (failures, enabled) of
    the schedule, or None when the run was already finished or the schedule is gone. The caller
    commits."""
    cfg = config()
    row = conn.execute(
        _FINISH_SQL,
        {
            "run": run_id,
            "state": state,
            "from_states": [str(x) for x in from_states],
            "reason": reason,
            "error": error[:10_000],
            "failed": state == RunState.FAILED,
            "low": cfg["BACKOFF_MIN_S"],
            "high": cfg["BACKOFF_MAX_S"],
        },
    ).fetchone()
    if row is None:
        # The schedule may be gone (unscheduled); still end the run itself.
        conn.execute(
            "UPDATE jobs_propagationrun SET state = %s, end_reason = %s, error = %s, "
            "ended_at = now(), waiting = false WHERE id = %s AND state = ANY(%s)",
            (state, reason, error[:10_000], run_id, [str(x) for x in from_states]),
        )
        return None
    return row[0], row[1]


# --- the run -------------------------------------------------------------------------------------


@dataclass
class Counters:
    batches: int = 0
    messages: int = 0
    propagated: int = 0
    bytes: int = 0
    discarded: int = 0
    exceptions: int = 0
    dequeue_time: float = 0.0
    rule_time: float = 0.0
    enqueue_time: float = 0.0

    def as_params(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Topology:
    """What the run needs from Django, reloaded when a rule set changes."""

    propagation_id: int
    name: str
    subscriber: str
    subscriber_id: int
    source: engine.QueueInfo
    destination: engine.QueueInfo | None  # None: a remote destination (``remote``)
    positive: Any = None
    negative: Any = None
    transforms: dict[str, Any] = field(default_factory=dict)
    stamps: tuple = ()
    # The rule sets as one SQL boolean when they transform nothing and compile to SQL: then a
    # batch is one statement (engine.transfer) with no message passing through Python.
    keep_sql: tuple[str, dict[str, Any]] | None = None
    remote: RemoteTarget | None = None
    # A queue-to-dblink job: its propagations (this one, the job's first, among them), each
    # with its own subscriber, rule sets and remote queue; empty for any other propagation.
    members: tuple[Topology, ...] = ()
    job: str = ""  # the job's identity, SOURCE@LINK: the receipt stream at the remote


@dataclass(frozen=True)
class RemoteTarget:
    """A QUEUE@LINK destination: where to connect and what to expect there."""

    link: str
    global_name: str
    endpoint: Any  # sites.remote.Endpoint
    queue: str


def _keep_sql(pos: Any, neg: Any, transforms: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """Table 5-1 in SQL: no negative rule TRUE, and a positive rule TRUE (or no positive set)."""
    from rules.selectors import rule_set_sql

    if transforms:
        return None
    parts, params = [], {}
    for rule_set, prefix, negate in ((neg, "kn", True), (pos, "kp", False)):
        if rule_set is None:
            continue
        compiled = rule_set_sql(rule_set, prefix=prefix)
        if compiled is None:
            return None
        parts.append(f"NOT ({compiled[0]})" if negate else f"({compiled[0]})")
        params.update(compiled[1])
    return (" AND ".join(parts) or "TRUE"), params


_RELATED = (
    "subscriber",
    "positive_rule_set",
    "negative_rule_set",
    "source_queue",
    "destination_queue",
)


def load_topology(conn: psycopg.Connection, propagation_id: int) -> Topology:
    from jobs.models import Propagation

    p = Propagation.objects.select_related(*_RELATED).get(pk=propagation_id)
    if not p.shares_job:
        return _load_one(conn, p)
    members = tuple(
        _load_one(conn, m) for m in p.job_members().select_related(*_RELATED) if m.enabled
    )
    own = _load_one(conn, p)
    return replace(own, members=members, job=p.job_name, stamps=_job_stamps(p))


def _job_stamps(p: Any) -> tuple:
    """A job's stamps: its members (one added or dropped) and each one's own."""
    return tuple(
        (m.pk, m.enabled, _stamps(m))
        for m in p.job_members().select_related(
            "positive_rule_set", "negative_rule_set", "source_queue", "destination_queue"
        )
    )


def _load_one(conn: psycopg.Connection, p: Any) -> Topology:
    from rules.selectors import rule_set_spec, rule_set_transformations

    pos, neg = p.positive_rule_set, p.negative_rule_set
    transforms = rule_set_transformations(pos) if pos is not None else {}
    target = None
    if p.is_remote:
        from sites.remote import link_endpoint
        from sites.selectors import database_link_get

        link = database_link_get(p.destination_dblink, field="destination_dblink")
        target = RemoteTarget(
            link=link.name,
            global_name=link.remote_global_name,
            endpoint=link_endpoint(link),
            queue=p.destination_remote_queue,
        )
    return Topology(
        propagation_id=p.pk,
        name=p.name,
        subscriber=p.subscriber.name,
        subscriber_id=p.subscriber_id,
        source=engine.queue_info(conn, p.source_queue_id),
        destination=(
            None if target is not None else engine.queue_info(conn, p.destination_queue_id)
        ),
        positive=rule_set_spec(pos) if pos is not None else None,
        negative=rule_set_spec(neg) if neg is not None else None,
        transforms=transforms,
        stamps=_stamps(p),
        keep_sql=_keep_sql(pos, neg, transforms) if target is None else None,
        remote=target,
    )


def _stamps(p: Any) -> tuple:
    return (
        p.positive_rule_set_id,
        p.positive_rule_set.updated if p.positive_rule_set_id else None,
        p.negative_rule_set_id,
        p.negative_rule_set.updated if p.negative_rule_set_id else None,
        p.destination_queue_id,
        p.updated,
        # A stopped source or destination, or a changed one, is seen at the next heartbeat.
        p.source_queue.updated,
        p.destination_queue.updated if p.destination_queue_id else None,
        # A remote destination's link altered (password, endpoint) is seen the same way.
        _link_updated(p.destination_dblink) if p.destination_dblink else None,
    )


def _link_updated(name: str) -> Any:
    from sites.models import DatabaseLink

    return DatabaseLink.objects.filter(name=name).values_list("updated", flat=True).first()


def _current_stamps(propagation_id: int) -> tuple | None:
    from jobs.models import Propagation

    p = (
        Propagation.objects.select_related(
            "positive_rule_set", "negative_rule_set", "source_queue", "destination_queue"
        )
        .filter(pk=propagation_id)
        .first()
    )
    if p is None:
        return None
    return _job_stamps(p) if p.shares_job else _stamps(p)


_BEAT_SQL = """
WITH hb AS (
    UPDATE jobs_propagationrun SET heartbeat_at = now(), waiting = %(waiting)s,
           batches = %(batches)s, messages = %(messages)s, propagated = %(propagated)s,
           bytes = %(bytes)s, discarded = %(discarded)s, exceptions = %(exceptions)s,
           dequeue_time = %(dequeue_time)s, rule_time = %(rule_time)s,
           enqueue_time = %(enqueue_time)s
    WHERE id = %(run)s AND state = 'RUNNING'
    RETURNING id, propagation_id
)
-- A schedule that no longer names this run was unscheduled (and maybe scheduled again, with a
-- run of its own waiting for this one's lock): this run is dropped.
SELECT coalesce(s.run_id = hb.id, false), coalesce(s.enabled, false), p.enabled, s.window_end,
       s.latency, (SELECT count(*) FROM jobs_propagationrun q WHERE q.state = 'QUEUED'), now(),
       s.window_start,
       (SELECT lower(i.name) FROM queues_queue sq
        JOIN queues_queuetable t ON t.id = sq.queue_table_id
        LEFT JOIN aq_instance i ON i.inst_id = t.owner_instance_id
        WHERE sq.id = p.source_queue_id)
FROM hb JOIN jobs_propagation p ON p.id = hb.propagation_id
LEFT JOIN jobs_propagationschedule s ON s.propagation_id = p.id
"""


@dataclass
class BeatStatus:
    stop: str | None
    window_end: Any
    latency: float
    others_waiting: int


class Run:
    def __init__(
        self,
        conn: psycopg.Connection,
        run_id: int,
        propagation_id: int,
        instance: str | None = None,
    ):
        self.conn = conn
        self.instance = instance.lower() if instance else None
        self.run_id = run_id
        self.propagation_id = propagation_id
        self.cfg = config()
        self.c = Counters()
        self.topo = load_topology(conn, propagation_id)
        self.remote: RemoteSide | None = None
        conn.commit()

    # -- heartbeat: counters, liveness, and whether to go on --

    def beat(self, *, waiting: bool) -> BeatStatus:
        row = self.conn.execute(
            _BEAT_SQL, {"run": self.run_id, "waiting": waiting, **self.c.as_params()}
        ).fetchone()
        self.conn.commit()
        if row is None:
            return BeatStatus(RunEnd.DROPPED, None, 3.0, 0)
        has_schedule, sched_on, prop_on, window_end, latency, others, now, window_start = row[:8]
        stop = None
        if self.instance is not None and row[8] != self.instance:
            # Failback or failover moved the source queue table: its new owner's run takes over
            # once this one has let go of the propagation's lock.
            stop = RunEnd.OWNER_MOVED
        elif not has_schedule:
            stop = RunEnd.DROPPED
        elif not (sched_on and prop_on):
            stop = RunEnd.DISABLED
        elif (window_end is not None and now >= window_end) or (
            window_start is not None and now < window_start
        ):
            # An alter may move the window away from now (later start, shorter duration).
            stop = RunEnd.WINDOW_END
        stamps = _current_stamps(self.propagation_id)
        if stamps is None:
            stop = RunEnd.DROPPED
        elif stamps != self.topo.stamps:
            self.topo = load_topology(self.conn, self.propagation_id)
            self.conn.commit()
            if self.remote is not None:  # a changed link or destination: connect afresh
                self.remote.close()
                self.remote = None
        return BeatStatus(stop, window_end, float(latency or 0), int(others))

    # -- one batch, one transaction --

    def batch(self) -> int:
        """Move up to BATCH messages; returns how many were taken from the source."""
        for attempt in range(self.cfg["DEADLOCK_RETRIES"] + 1):
            before = replace(self.c)
            try:
                if self.topo.job:
                    return self._batch_job()
                if self.topo.remote is not None:
                    return self._batch_remote()
                if self.topo.keep_sql is not None and self._fits_in_sql():
                    return self._batch_sql()
                return self._batch()
            except (pg_errors.DeadlockDetected, pg_errors.SerializationFailure):
                # Two propagations of one source finish the same messages' counters; a deadlock
                # between them is a retry, not a failure of the schedule.
                self.conn.rollback()
                self.c = before  # the rolled-back batch's counters must not count twice
                if attempt == self.cfg["DEADLOCK_RETRIES"]:
                    raise
                time.sleep(0.01 * (attempt + 1))
        return 0

    def _fits_in_sql(self) -> bool:
        """A destination subscriber's rule may refuse a message one by one: Python path."""
        return not (
            self.topo.destination.multiple_consumers
            and engine.subscriber_rules(self.conn, self.topo.destination)
        )

    def _batch_sql(self) -> int:
        t, c = self.topo, self.c
        assert t.keep_sql is not None
        t0 = time.perf_counter()
        r = engine.transfer(
            self.conn,
            t.source,
            t.subscriber_id,
            t.destination,
            batch=self.cfg["BATCH"],
            keep_sql=t.keep_sql[0],
            keep_params=t.keep_sql[1],
            user=t.name,
        )
        if not r.taken:
            self.conn.rollback()
            return 0
        c.batches += 1
        c.messages += r.taken
        c.propagated += r.moved
        c.bytes += r.bytes
        c.discarded += r.taken - r.moved
        # Rules and enqueue run inside the one statement: its time counts as dequeue time.
        c.dequeue_time += time.perf_counter() - t0
        self._commit_counters()
        return r.taken

    def _commit_counters(self) -> None:
        """The counters land with the messages, so they are exact whatever happens next."""
        conn, c = self.conn, self.c
        conn.execute(
            """
            UPDATE jobs_propagationrun SET batches = %(batches)s, messages = %(messages)s,
                   propagated = %(propagated)s, bytes = %(bytes)s, discarded = %(discarded)s,
                   exceptions = %(exceptions)s, dequeue_time = %(dequeue_time)s,
                   rule_time = %(rule_time)s, enqueue_time = %(enqueue_time)s,
                   heartbeat_at = now(), waiting = false
            WHERE id = %(run)s
            """,
            {"run": self.run_id, **c.as_params()},
        )
        if c.batches == 1:
            # A batch that commits is a success: the consecutive-failure count starts again.
            conn.execute(
                "UPDATE jobs_propagationschedule SET failures = 0 "
                "WHERE run_id = %s AND failures > 0",
                (self.run_id,),
            )
        conn.commit()

    def _take(self) -> list[engine.DequeuedMessage]:
        """A batch for the propagation's subscriber, in this run's open transaction (the copy
        and the removal commit together). Buffered messages too: they arrive buffered at a local
        destination."""
        return engine.dequeue(
            self.conn,
            self.topo.source,
            mode=engine.REMOVE,
            consumer=self.topo.subscriber,
            batch=self.cfg["BATCH"],
            delivery_mode=engine.PERSISTENT_OR_BUFFERED,
            in_caller_transaction=True,
        )

    def _batch(self) -> int:
        t = self.topo
        conn = self.conn
        t0 = time.perf_counter()
        msgs = self._take()
        if not msgs:
            conn.rollback()
            return 0
        t1 = time.perf_counter()
        assert t.destination is not None
        out, modes, failed, discarded, nbytes = self._decide(msgs, t.destination)
        t2 = time.perf_counter()
        refused: list[tuple[int, str]] = []
        for mode in (engine.PERSISTENT, engine.BUFFERED):
            part = [nm for nm, md in zip(out, modes, strict=True) if md == mode]
            refused.extend(self._enqueue(part, mode))
        failed.extend(refused)
        if failed:
            engine.consumer_exception_copies(
                conn,
                [f[0] for f in failed],
                [t.subscriber_id] * len(failed),
                [f[1] for f in failed],
            )
        t3 = time.perf_counter()
        c = self.c
        c.batches += 1
        c.messages += len(msgs)
        c.propagated += len(out) - len(refused)
        c.bytes += nbytes
        c.discarded += discarded
        c.exceptions += len(failed)
        c.dequeue_time += t1 - t0
        c.rule_time += t2 - t1
        c.enqueue_time += t3 - t2
        self._commit_counters()
        return len(msgs)

    def _decide(
        self,
        msgs: list[engine.DequeuedMessage],
        destination: engine.QueueInfo,
        topo: Topology | None = None,
    ) -> tuple[list[engine.NewMessage], list[str], list[tuple[int, str]], int, int]:
        """Rules and transformations at the source (of ``topo``, default the run's): the
        destination copies (with their source delivery modes), the messages that failed (to the
        exception queue), how many the rules discarded, and the copies' payload bytes."""
        from rules.lang import MessageError, message_from_queue
        from rules.lang.pipeline import apply
        from rules.lang.transform import TransformationError

        t = topo or self.topo
        out: list[engine.NewMessage] = []
        modes: list[str] = []
        nbytes = 0
        failed: list[tuple[int, str]] = []
        discarded = 0
        for m in msgs:
            try:
                rm = message_from_queue(
                    m.kind, m.type_name, m.payload, origin=m.origin_site, tag=m.tag
                )
                res = apply(
                    rm, positive=t.positive, negative=t.negative, transformations_for=t.transforms
                )
            except (MessageError, TransformationError) as exc:
                failed.append((m.id, f"propagation {t.name}: {exc}"))
                continue
            if not res.perform:
                discarded += 1
                continue
            nm = destination_copy(m, res.message_out, unchanged=res.message_out is rm)
            try:
                engine.validate_message(destination, nm)
            except engine.InvalidMessage as exc:
                failed.append((m.id, f"propagation {t.name}: {destination.name} refused it: {exc}"))
                continue
            out.append(nm)
            modes.append(m.delivery_mode)
        if out:
            # One dump of the batch, not one per message: a list's JSON is its items' JSON
            # joined by ", " inside "[]", so this is exactly the sum of the payloads' lengths.
            nbytes = len(json.dumps([nm.payload for nm in out])) - 2 * len(out)
        return out, modes, failed, discarded, nbytes

    def _batch_remote(self) -> int:
        """One batch to QUEUE@LINK, exactly once without two-phase commit: dequeue here (rows
        locked, not committed), enqueue there with receipts and commit there, then commit
        here. A crash between the commits rolls the dequeue back; the re-sent copies find
        their receipts at the remote and are skipped (engine.receive; docs/SITES.md)."""
        t, conn = self.topo, self.conn
        if self.remote is None:
            self.remote = RemoteSide(t, conn)
        side = self.remote
        dest = side.open()  # before the dequeue: an unreachable site holds no source rows
        t0 = time.perf_counter()
        msgs = self._take()
        if not msgs:
            conn.rollback()
            return 0
        t1 = time.perf_counter()
        ahead, looped = side.not_visited(msgs)  # loop prevention: consumed, counted discarded
        out, _, failed, discarded, nbytes = self._decide(ahead, dest)
        discarded += looped
        t2 = time.perf_counter()
        ids = [int(nm.headers["aq$_source_msgid"]) for nm in out]
        side.send(out, ids)  # committed at the remote when this returns
        _test_crash_point()
        if failed:
            engine.consumer_exception_copies(
                conn,
                [f[0] for f in failed],
                [t.subscriber_id] * len(failed),
                [f[1] for f in failed],
            )
        t3 = time.perf_counter()
        c = self.c
        c.batches += 1
        c.messages += len(msgs)
        c.propagated += len(out)
        c.bytes += nbytes
        c.discarded += discarded
        c.exceptions += len(failed)
        c.dequeue_time += t1 - t0
        c.rule_time += t2 - t1
        c.enqueue_time += t3 - t2
        self._commit_counters()
        # Consumed here for good: the remote may forget their receipts (with the next batch).
        side.acknowledged(ids)
        return len(msgs)

    def _batch_job(self) -> int:
        """One batch of a queue-to-dblink job: the messages any of its propagations' subscribers
        hold (each subscriber's copies of the same messages, so a message never crosses in two
        batches), each propagation's rules at the source, then each message sent ONCE to the
        site with the queues there that take it (engine.receive_fanout: one receipt per message
        under the job's stream, enqueued into each queue in one remote transaction). Exactly
        once as for a queue-to-queue batch: commit there, then here."""
        t, conn = self.topo, self.conn
        if not t.members:
            return 0  # every propagation of the job is stopped (the beat ends the run)
        if self.remote is None:
            self.remote = RemoteSide(t, conn)
        side = self.remote
        dests = side.open_job()
        t0 = time.perf_counter()
        ids = engine.pending_for_any(
            conn,
            t.source,
            [m.subscriber_id for m in t.members],
            batch=self.cfg["BATCH"],
            delivery_mode=engine.PERSISTENT_OR_BUFFERED,
        )
        taken: dict[int, engine.DequeuedMessage] = {}
        held: dict[int, list[engine.DequeuedMessage]] = {}
        if ids:
            for m in t.members:
                got = engine.dequeue(
                    conn,
                    t.source,
                    mode=engine.REMOVE,
                    consumer=m.subscriber,
                    batch=len(ids),
                    delivery_mode=engine.PERSISTENT_OR_BUFFERED,
                    in_caller_transaction=True,
                    msgids=ids,
                )
                held[m.propagation_id] = got
                taken.update((msg.id, msg) for msg in got)
        if not taken:
            conn.rollback()
            return 0
        t1 = time.perf_counter()
        # source id -> [(copy, remote queues)]: copies equal for several queues cross once.
        crossing: dict[int, list[tuple[engine.NewMessage, list[engine.QueueInfo]]]] = {}
        discarded = 0
        failed_by: list[tuple[int, int, str]] = []  # (msgid, subscriber id, reason)
        for m in t.members:
            # Loop prevention, as for a queue-to-queue batch: consumed here, counted discarded.
            got, looped = side.not_visited(held.get(m.propagation_id) or [])
            dest = dests[m.propagation_id]
            out, _, failed, dropped, _ = self._decide(got, dest, m)
            discarded += dropped + looped
            failed_by.extend((mid, m.subscriber_id, why) for mid, why in failed)
            for nm in out:
                sid = int(nm.headers["aq$_source_msgid"])
                copies = crossing.setdefault(sid, [])
                for copy, queues in copies:
                    if copy == nm:
                        queues.append(dest)
                        break
                else:
                    copies.append((nm, [dest]))
        arrivals = [
            engine.Arrival(sid, nm, tuple(queues))
            for sid in sorted(crossing, key=lambda i: astuple(taken[i].position))
            for nm, queues in crossing[sid]
        ]
        t2 = time.perf_counter()
        side.send_job(arrivals)  # committed at the remote when this returns
        _test_crash_point()
        if failed_by:
            engine.consumer_exception_copies(
                conn,
                [f[0] for f in failed_by],
                [f[1] for f in failed_by],
                [f[2] for f in failed_by],
            )
        t3 = time.perf_counter()
        c = self.c
        c.batches += 1
        c.messages += len(taken)
        c.propagated += len(crossing)  # messages that crossed, once each
        if arrivals:
            c.bytes += len(json.dumps([a.message.payload for a in arrivals])) - 2 * len(arrivals)
        c.discarded += discarded
        c.exceptions += len(failed_by)
        c.dequeue_time += t1 - t0
        c.rule_time += t2 - t1
        c.enqueue_time += t3 - t2
        self._commit_counters()
        side.acknowledged(list(taken))
        return len(taken)

    def close(self) -> None:
        if self.remote is not None:
            self.remote.close()

    def _enqueue(self, out: list[engine.NewMessage], delivery_mode: str) -> list[tuple[int, str]]:
        """Enqueue into the destination, in ``delivery_mode`` (the source messages'), in this
        transaction. Messages that no destination subscriber's rule takes are refused one by one
        (to the exception queue); a destination nobody can read fails the batch, so the messages
        stay at the source until it is fixed."""
        if not out:
            return []
        t = self.topo
        if (
            delivery_mode == engine.BUFFERED
            and t.destination.message_grouping == engine.TRANSACTIONAL
        ):
            delivery_mode = engine.PERSISTENT  # a transaction-grouping queue holds no buffer
        kw: dict[str, Any] = {"delivery_mode": delivery_mode, "in_caller_transaction": True}
        try:
            with self.conn.transaction():
                engine.enqueue(self.conn, t.destination, out, user=t.name, validate=False, **kw)
            return []
        except engine.NoSubscribers:
            if not t.destination.multiple_consumers or not engine.subscriber_ids(
                self.conn, t.destination
            ):
                raise
        refused: list[tuple[int, str]] = []
        keep = []
        for nm in out:
            try:
                with self.conn.transaction():
                    engine.enqueue(
                        self.conn, t.destination, [nm], user=t.name, validate=False, **kw
                    )
                keep.append(nm)
            except engine.NoSubscribers as exc:
                refused.append((nm.headers.get("aq$_source_msgid"), f"propagation {t.name}: {exc}"))
        return refused


# --- a remote destination (QUEUE@LINK) ----------------------------------------------------------


class RemoteFailure(Exception):
    """The destination site could not take a batch: the run fails with the link named, and its
    messages stay at the source (the dequeue rolls back)."""


def payload_why(
    src_name: str, src_type: str, src_schema: Any, dst_name: str, dst_type: str, dst_schema: Any
) -> str | None:
    """Why a queue of (dst_type, dst_schema) cannot take a source's messages, or None: an ANY
    queue takes everything; a typed queue takes only its own type with the same schema."""
    if dst_type.upper() == "ANY":
        return None
    if src_type.upper() == "ANY":
        return (
            f"{dst_name} holds only {dst_type} payloads; {src_name} holds any "
            "payload, so not every message would fit."
        )
    if src_type.upper() != dst_type.upper():
        return f"{dst_name} holds {dst_type} payloads; {src_name} holds {src_type}."
    if (src_schema or None) != (dst_schema or None):
        return f"{dst_name} and {src_name} both hold {dst_type}, but with different schemas."
    return None


class RemoteSide:
    """A run's connection to its destination site: opened (and the destination queue checked
    again: the remote may have changed) at the first batch of a run or after a failure."""

    def __init__(self, topo: Topology, local: psycopg.Connection) -> None:
        from sites.selectors import local_global_name

        assert topo.remote is not None
        self.topo, self.target, self.local = topo, topo.remote, local
        self.site = local_global_name()
        # The destination site's GLOBAL_NAME as it answered (checked against the link's).
        self.remote_site = topo.remote.global_name
        self.conn: psycopg.Connection | None = None
        self.dest: engine.QueueInfo | None = None
        self.dests: dict[int, engine.QueueInfo] = {}
        self.forget: list[int] = []  # consumed here: their receipts there may go

    def _fail(self, text: str) -> NoReturn:
        self.close()
        raise RemoteFailure(
            f"Database link {self.target.link} ({self.target.endpoint.address}): {text}"
        )

    def open(self) -> engine.QueueInfo:
        if self.conn is not None and not self.conn.closed and self.dest is not None:
            return self.dest
        self._connect()
        self.dest = self._check_queue(self.target.queue)
        self._sweep()
        return self.dest

    def open_job(self) -> dict[int, engine.QueueInfo]:
        """A queue-to-dblink job's connection: the site checked once, then each of its
        propagations' queues there. Returns propagation id -> the queue there."""
        if self.conn is not None and not self.conn.closed and self.dests:
            return self.dests
        self._connect()
        self.dests = {
            m.propagation_id: self._check_queue(m.remote.queue) for m in self.topo.members
        }
        self._sweep()
        return self.dests

    def _connect(self) -> None:
        from sites import remote

        self.close()
        t = self.target
        try:
            self.conn = remote.connect(t.endpoint, autocommit=False)
            site = remote.read_site(self.conn, t.endpoint)
            if t.global_name and site.global_name != t.global_name:
                self._fail(
                    f"the site answers as {site.global_name}, not {t.global_name} as when the "
                    "link was made"
                )
            self.remote_site = site.global_name
            self.conn.commit()
        except remote.RemoteError as exc:
            self._fail(f"{exc.message} (link field {exc.field})")
        except psycopg.Error as exc:
            self._fail(" ".join(str(exc).split()))

    def _check_queue(self, queue: str) -> engine.QueueInfo:
        """The destination queue, read again (the remote may have changed it)."""
        assert self.conn is not None
        t, where = self.target, f"{queue}@{self.target.link}"
        try:
            dest = engine.queue_info(self.conn, queue)
            self.conn.commit()
        except engine.QueueNotFound:
            self._fail(f"queue {queue} does not exist at {t.global_name}")
        except psycopg.Error as exc:
            self._fail(" ".join(str(exc).split()))
        if dest.is_exception or dest.kind != engine.NORMAL_QUEUE:
            self._fail(f"{where} is not a normal queue")
        src = self.topo.source
        why = payload_why(
            src.name, src.payload_type, src.payload_schema,
            where, dest.payload_type, dest.payload_schema,
        )  # fmt: skip
        if why:
            self._fail(why)
        return dest

    @property
    def stream(self) -> str:
        """The receipts' stream at the remote: the propagation, or a shared job's SOURCE@LINK."""
        return self.topo.job or self.topo.name

    def _sweep(self) -> None:
        """Receipts of messages no longer at the source (consumed by an earlier run whose
        acknowledgement never reached the remote: a crash, a window's end) are forgotten. Runs
        under the propagation's (or job's) lock, so no batch of it is in flight."""
        assert self.conn is not None
        t = self.topo
        subs = [m.subscriber_id for m in t.members] if t.members else [t.subscriber_id]
        try:
            ids = engine.receipts(self.conn, source_site=self.site, stream=self.stream)
            if ids:
                keep = engine.still_pending_any(self.local, t.source, subs, ids)
                engine.forget_receipts(
                    self.conn, [i for i in ids if i not in keep], source_site=self.site,
                    stream=self.stream,
                )  # fmt: skip
            self.conn.commit()
        except psycopg.Error as exc:
            self._fail(" ".join(str(exc).split()))

    def not_visited(
        self, msgs: list[engine.DequeuedMessage]
    ) -> tuple[list[engine.DequeuedMessage], int]:
        """The messages that have never been at the destination site, and how many have (their
        origin or route names it): those are not sent, and the batch consumes them here, so a
        cycle A → B → A moves nothing twice and leaves nothing piling up (docs/SITES.md)."""
        to, here = self.remote_site, self.site
        ahead = [m for m in msgs if not engine.visited(m, to, here=here)]
        return ahead, len(msgs) - len(ahead)

    def send(self, out: list[engine.NewMessage], ids: list[int]) -> int:
        """Enqueue ``out`` (source ids ``ids``) into the destination queue at the remote and
        commit there; returns how many were new there."""
        assert self.dest is not None
        where = f"{self.target.queue}@{self.target.link}"
        dest = (self.dest,)
        return self._send(
            [engine.Arrival(i, m, dest) for m, i in zip(out, ids, strict=True)], where
        )

    def send_job(self, arrivals: list[engine.Arrival]) -> int:
        """A job's batch: each message once, for its queues there; committed there on return."""
        return self._send(arrivals, f"job {self.stream}")

    def _send(self, arrivals: list[engine.Arrival], where: str) -> int:
        if not arrivals and not self.forget:
            return 0
        assert self.conn is not None
        try:
            n = engine.receive_fanout(
                self.conn,
                arrivals,
                source_site=self.site,
                stream=self.stream,
                forget=self.forget,
                user=self.topo.name,
                # Crossing databases, every message is persistent: a buffer is one site's memory.
                delivery_mode=engine.PERSISTENT,
                source_queue=self.topo.source.name,
            )
            self.conn.commit()
        except Exception as exc:  # any refusal there is this batch's failure
            text = " ".join(str(exc).split()) or type(exc).__name__
            self._fail(f"{where} refused the batch: {text}")
        self.forget = []
        return n

    def acknowledged(self, ids: list[int]) -> None:
        self.forget.extend(ids)

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()
        self.conn, self.dest, self.dests = None, None, {}


def _test_crash_point() -> None:
    """For the crash tests only: when AQ_TEST_KILL_AFTER_REMOTE_COMMIT names a file that does
    not exist yet, the first batch to get here (committed at the remote, not yet here) creates
    it and SIGKILLs its own process."""
    marker = os.environ.get("AQ_TEST_KILL_AFTER_REMOTE_COMMIT")
    if not marker:
        return
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    os.kill(os.getpid(), signal.SIGKILL)


def destination_copy(m: engine.DequeuedMessage, out: Any, *, unchanged: bool) -> engine.NewMessage:
    """The destination's copy: same properties (origin, route and tag too), the transformed
    content when a rule changed it. The source msgid rides in a header so an exception can name
    the original."""
    headers = dict(m.headers or {})
    headers["aq$_source_msgid"] = m.id
    if unchanged:
        kind, type_name, payload = m.kind, m.type_name, m.payload
    else:
        # Imported here, not per call above: an import statement costs on every message.
        from rules.lang.pipeline import message_content

        kind, type_name, payload = message_content(out, type_name=m.type_name)
    return engine.NewMessage(
        payload=payload,
        priority=m.priority,
        correlation=m.correlation,
        sender=m.sender,
        headers=headers,
        kind=kind,
        type_name=type_name or "",
        # Unchanged here; a remote destination's engine.receive moves the route on.
        tag=m.tag,
        origin_site=m.origin_site,
        route=m.route,
    )


# --- the task body -------------------------------------------------------------------------------


# Whether instance %(instance)s owns the source queue table of the run's propagation (NULL:
# no instance given, the caller runs it in place).
_OWNED = """(%(instance)s::text IS NULL OR EXISTS (
    SELECT 1 FROM jobs_propagation p
    JOIN queues_queue q ON q.id = p.source_queue_id
    JOIN queues_queuetable t ON t.id = q.queue_table_id
    JOIN aq_instance i ON i.inst_id = t.owner_instance_id
    WHERE p.id = r.propagation_id AND lower(i.name) = lower(%(instance)s)))"""


def execute(
    run_id: int,
    *,
    conninfo: str,
    worker: str = "",
    pid: int = 0,
    task_id: str = "",
    instance: str | None = None,
) -> str:
    """Claim run ``run_id`` and move messages until its window, slice or schedule ends. Returns
    what happened ("claimed by another", "SUCCEEDED: window_end", "FAILED: …").

    ``instance``: the worker's instance; the claim then requires that it owns the source queue
    table, so a task delivered late, after a failover, does nothing (the run stays QUEUED and the
    reaper sends it to the new owner). The run ends once the queue table moves away."""
    conn = psycopg.connect(conninfo)
    try:
        row = conn.execute(
            f"SELECT propagation_id, state, {_OWNED} FROM jobs_propagationrun r WHERE id = %(run)s",
            {"run": run_id, "instance": instance},
        ).fetchone()
        if row is None:
            return "gone"
        if row[1] != RunState.QUEUED:
            return "claimed by another"  # a duplicate task: don't even wait for the lock
        if not row[2]:
            return f"not owned by instance {instance}"
        prop_id = row[0]
        # The previous run (or the reaper checking it) may hold the lock for a moment after its
        # finish commits: wait a little before calling the propagation busy.
        deadline = time.monotonic() + LOCK_WAIT_S
        key = lock_key(conn, prop_id)
        while not conn.execute("SELECT pg_try_advisory_lock(%s, %s)", key).fetchone()[0]:
            conn.commit()
            if time.monotonic() >= deadline:
                return "another run of this propagation is alive"
            time.sleep(0.1)
        conn.commit()
        # Lock first, claim second: the reaper never sees a RUNNING run without its lock.
        claimed = conn.execute(
            "UPDATE jobs_propagationrun r SET state = 'RUNNING', started_at = now(), "
            "heartbeat_at = now(), worker = %(worker)s, pid = %(pid)s, task_id = %(task)s, "
            "session_id = pg_backend_pid() WHERE id = %(run)s AND state = 'QUEUED' "
            f"AND {_OWNED} RETURNING id",
            {"worker": worker, "pid": pid, "task": task_id, "run": run_id, "instance": instance},
        ).fetchone()
        conn.commit()
        if claimed is None:
            return "claimed by another or not owned here"
        try:
            reason = _loop(conn, run_id, prop_id, conninfo, instance)
        except Exception as exc:
            log.warning("propagation run %s failed: %s", run_id, exc, exc_info=True)
            if conn.broken:
                _fail_after_reconnect(conninfo, run_id, exc)
                return f"FAILED: {exc}"
            conn.rollback()
            finish_run(conn, run_id, state=RunState.FAILED, error=_error_text(exc))
            conn.commit()
            return f"FAILED: {exc}"
        finish_run(conn, run_id, state=RunState.SUCCEEDED, reason=reason)
        conn.commit()
        return f"SUCCEEDED: {reason}"
    finally:
        conn.close()  # also releases the advisory lock


def _fail_after_reconnect(conninfo: str, run_id: int, exc: BaseException) -> None:
    """The run's session died with the database (a restart): its open batch rolled back with
    it. Record why from a new session once the server answers again, so the run does not read
    as a dead worker; if it stays away, the reaper fails the run when it sees the lock free."""
    deadline = time.monotonic() + RECONNECT_WAIT_S
    while True:
        try:
            with psycopg.connect(conninfo, connect_timeout=2) as conn:
                finish_run(
                    conn,
                    run_id,
                    state=RunState.FAILED,
                    from_states=(RunState.RUNNING,),
                    error=f"The database connection was lost ({_error_text(exc)}). The open "
                    "batch was rolled back; no message was lost or moved twice.",
                )
            return
        except psycopg.OperationalError:
            if time.monotonic() >= deadline:
                return
            time.sleep(0.2)


def _error_text(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    field = getattr(exc, "field", None)
    return f"{type(exc).__name__}: {text}" + (f" (field {field})" if field else "")


def _loop(
    conn: psycopg.Connection, run_id: int, prop_id: int, conninfo: str, instance: str | None
) -> str:
    run = Run(conn, run_id, prop_id, instance)
    try:
        return _run_loop(run, conninfo)
    finally:
        run.close()


def _run_loop(run: Run, conninfo: str) -> str:
    cfg = run.cfg
    started = time.monotonic()
    last_beat = 0.0
    idle_since: float | None = None
    listener = engine.Listener(conninfo)
    try:
        listener.listen(run.topo.source.channel)
        status = run.beat(waiting=False)
        while status.stop is None:
            if SHUTTING_DOWN.is_set():
                return RunEnd.WORKER_STOP
            now = time.monotonic()
            if now - last_beat >= cfg["HEARTBEAT_S"]:
                status = run.beat(waiting=idle_since is not None)
                last_beat = now
                if status.stop is not None:
                    break
            if run.batch():
                idle_since = None
                # A busy run yields too, or more propagations than pool threads never take turns.
                if time.monotonic() - started >= cfg["SLICE_S"]:
                    return RunEnd.SLICE
                continue
            if now - started >= cfg["SLICE_S"]:
                return RunEnd.SLICE
            latency = status.latency
            if idle_since is None:
                idle_since = now
                status = run.beat(waiting=True)  # show "idle" at once
                last_beat = now
                if status.stop is not None:
                    break
            elif status.others_waiting and now - idle_since >= max(latency, 1.0):
                return RunEnd.YIELDED
            wait = min(
                cfg["HEARTBEAT_S"], max(latency, 0.05) if latency > 0 else cfg["HEARTBEAT_S"]
            )
            wait = min(wait, max(cfg["SLICE_S"] - (now - started), 0.01))
            listener.wait(run.topo.source.channel, wait)
        return status.stop
    finally:
        listener.close()
