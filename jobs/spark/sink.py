"""Write one frozen partition ("part") of a bulk job into the destination queues, exactly once.

A part is one PostgreSQL transaction: its done-marker (``aq_bulk_part``), the claim of the
source messages (move mode), the copies at every destination, their consumer rows, exception
copies, statistics and notifications. Killed anywhere before COMMIT it leaves nothing; after
COMMIT the marker says it is done and a re-run skips it. The per-destination key
``(queue_id, bulk_job_id, bulk_source_id)`` guards the same promise a second time.

Spark's own writer commit protocol is not used for any of this: ``abort()`` receives parts that
already committed, and a local run does not retry tasks.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

# Reasons are stored in aq_message.exception_reason, a varchar(200).
_REASON_MAX = 200
ERRORS_KEPT = 20  # per part, in copy mode


class BulkWriteError(Exception):
    """A part could not be written (a queue was stopped or dropped under the job)."""


@dataclass
class PartResult:
    part_no: int
    skipped: bool = False  # an earlier attempt committed this part
    read: int = 0
    discarded: int = 0
    exceptions: int = 0
    gone: int = 0
    propagated: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Transformed:
    """A destination's transformed copy of a source message, or why it could not be made."""

    id: int
    dest: int
    kind: str | None = None
    type_name: str | None = None
    payload: str | None = None  # JSON text
    error: str | None = None


def _copy_rows(conn: psycopg.Connection, sql: str, rows: Sequence[Sequence[Any]]) -> None:
    with conn.cursor() as cur, cur.copy(sql) as copy:
        for row in rows:
            copy.write_row(row)


def _check_queues(conn: psycopg.Connection, spec: dict[str, Any]) -> None:
    """A queue stopped or dropped while the job ran fails the part (and so the job): nothing of
    the part is written, and a re-run after the fix takes it up again."""
    from queues.engine.storage import hold_storage

    src = spec["source"]
    dest_ids = [d["queue_id"] for d in spec["destinations"]]
    # Hold the queue tables' storage before checking: a queue deleted after the check waits for
    # this part (no foreign key would catch messages written to a deleted queue).
    qts = [src["queue_info"]["queue_table_id"]]
    qts += [d["queue_info"]["queue_table_id"] for d in spec["destinations"]]
    try:
        hold_storage(conn, qts)
    except psycopg.errors.UndefinedTable as exc:
        raise BulkWriteError("A queue table of the job no longer exists.") from exc
    rows = conn.execute(
        "SELECT id, name, enqueue_enabled, dequeue_enabled, kind FROM queues_queue "
        "WHERE id = ANY(%s)",
        ([src["id"], *dest_ids],),
    ).fetchall()
    found = {r[0]: r for r in rows}
    if src["id"] not in found:
        raise BulkWriteError(f"Source queue {src['name']} no longer exists.")
    if spec["mode"] == "MOVE" and not found[src["id"]][3]:
        raise BulkWriteError(f"Dequeue is disabled on queue {src['name']}.")
    for d in spec["destinations"]:
        r = found.get(d["queue_id"])
        if r is None:
            raise BulkWriteError(f"Destination queue {d['name']} no longer exists.")
        if not r[2] or r[4] != "NORMAL_QUEUE":
            raise BulkWriteError(f"Enqueue is disabled on queue {d['name']}.")


def _claim(conn: psycopg.Connection, spec: dict[str, Any]) -> int:
    """Move mode: consume at the source what this part moves, into ``bulk_claimed``.

    Single-consumer source: the READY, unleased messages that some destination takes (a message
    no destination takes stays where it is). Multi-consumer source: every destination is a
    propagation, and its subscriber's copies are consumed whether its rules take the message or
    not (Table 5-1: a propagation discards what its rules do not pass), as its runs would."""
    from queues import engine

    src = spec["source"]
    info = _info(src)
    if not src["multiple_consumers"]:
        conn.execute(
            "CREATE TEMP TABLE bulk_claimed ON COMMIT DROP AS WITH c AS ("
            + engine.consume_sql(info, "bulk_in", where="cardinality(t.dests) > 0")
            + ") SELECT id, NULL::bigint AS sub FROM c"
        )
    else:
        subs = [d["subscriber_id"] for d in spec["destinations"]]
        conn.execute(
            "CREATE TEMP TABLE bulk_claimed ON COMMIT DROP AS WITH c AS ("
            + engine.take_copies_sql(info, "bulk_in")
            + ") SELECT id, sub FROM c",
            {"subs": subs},
        )
        conn.execute(
            engine.count_down_sql(info.messages, "bulk_claimed", id_col="id", returning="m.id")
        )
    conn.execute(engine.stat_sql("src", "bulk_claimed", "dequeued"), {"src": src["id"]})
    n = conn.execute("SELECT count(*) FROM bulk_claimed").fetchone()[0]
    return int(n)


def _info(q: dict[str, Any]) -> Any:
    """The engine's QueueInfo of a queue in the spec (as the driver read it)."""
    from queues.engine import QueueInfo

    return QueueInfo(**q["queue_info"])


def _subscribers(conn: psycopg.Connection, d: dict[str, Any]) -> tuple[list[int], dict[int, str]]:
    """A multi-consumer destination's subscribers and their rules as they are now (not as at
    the first attempt: one may have come or gone since). None at all fails the part, as an
    enqueue refuses a message nobody could dequeue."""
    if not d["queue_info"]["multiple_consumers"]:
        return [], {}
    rows = conn.execute(
        "SELECT id, rule FROM queues_subscriber WHERE queue_id = %s ORDER BY id", (d["queue_id"],)
    ).fetchall()
    if not rows:
        raise BulkWriteError(
            f"Queue {d['name']} has no subscribers: a message nobody can dequeue is refused."
        )
    return [r[0] for r in rows], {r[0]: r[1] for r in rows if r[1]}


def _insert(
    conn: psycopg.Connection, spec: dict[str, Any], d: dict[str, Any], subs: list[int]
) -> int:
    """Copy this part's messages that destination ``d`` takes into it; returns how many.
    Commit-time destinations get commit_seq 0 here and their number at the very end."""
    src = spec["source"]
    move = spec["mode"] == "MOVE"
    if move and src["multiple_consumers"]:
        claimed = "JOIN bulk_claimed c ON c.id = t.id AND c.sub = %(sub)s"
    elif move:
        claimed = "JOIN bulk_claimed c ON c.id = t.id"
    else:
        claimed = ""
    from queues import engine

    # The copies' source rows, as the engine's copy statement takes them: a transformation's
    # kind, type and payload replace the message's.
    rows = f"""(
        SELECT m.id, m.priority, m.sort_pri, m.commit_seq, coalesce(x.kind, m.kind) AS kind,
               coalesce(x.type_name, m.type_name) AS type_name, m.correlation, m.sender,
               m.headers, coalesce(x.payload::jsonb, m.payload) AS payload, m.origin_site,
               m.route, m.tag
        FROM bulk_in t JOIN {engine.message_part(src["queue_info"]["queue_table_id"])} m
             ON m.id = t.id AND m.queue_id = %(src)s
        {claimed}
        LEFT JOIN bulk_tx x ON x.id = t.id AND x.dest = %(dq)s
        WHERE %(dq)s = ANY(t.dests) AND x.error IS NULL
    )"""
    sql = (
        "WITH "
        + engine.insert_copies_sql(_info(d), rows, bulk=True)
        + " SELECT count(*), CASE WHEN count(*) > 0 THEN pg_notify(%(channel)s, '') END FROM ins"
    )
    params = {
        "dq": d["queue_id"],
        "dqid": d["queue_id"],
        "by_pri": 1 if d["by_priority"] else 0,
        # Commit-time destinations get their number at the end of the part.
        "cseq": 0,
        "user": spec["user"],
        "npend": len(subs),
        "subs": subs,
        "job": spec["job_id"],
        "src": src["id"],
        "sub": d.get("subscriber_id"),
        "channel": d["channel"],
    }
    return int(conn.execute(sql, params).fetchone()[0])


def _no_recipient(
    conn: psycopg.Connection, spec: dict[str, Any], d: dict[str, Any], rules: dict[int, str]
) -> list[int]:
    """Subscriber rules of a multi-consumer destination, decided in SQL as an enqueue does. A
    copy that no subscriber takes is removed; the source ids of those go to the exception queue."""
    if not rules:
        return []
    from queues import engine

    scope = (
        "m.queue_id = %(dq)s AND m.bulk_job_id = %(job)s AND m.original_queue_id IS NULL "
        "AND m.bulk_source_id IN (SELECT id FROM bulk_in)"
    )
    info = _info(d)
    rows = engine.apply_subscriber_rules(
        conn, info, rules, scope, {"dq": d["queue_id"], "job": spec["job_id"]}
    )
    refused = [(mid, source) for mid, source, n in rows if n == 0]
    engine.withdraw(conn, info, [r[0] for r in refused])
    return [r[1] for r in refused]


def _exception_copies(
    conn: psycopg.Connection, spec: dict[str, Any], failures: list[tuple[int, int | None, str]]
) -> int:
    """Copies of source messages in the source's exception queue: (source id, subscriber id or
    None, reason). With a subscriber, the copy keeps a consumer row for it, so a replay returns
    it to that propagation only. The source itself was consumed (move) or is untouched (copy)."""
    if not failures:
        return 0
    src = spec["source"]
    if src["exception_queue_id"] is None:
        raise BulkWriteError(f"Queue {src['name']} has no exception queue.")
    from queues import engine

    return engine.exception_copies(
        conn,
        [f[0] for f in failures],
        [f[1] for f in failures],
        [f[2][:_REASON_MAX] for f in failures],
        name_consumer=False,
    )


RETRIES = 5  # a deadlock with a live dequeuer: the whole part is simply done again


def write_part(
    conn: psycopg.Connection,
    spec: dict[str, Any],
    part_no: int,
    ids: Sequence[int],
    dests: Sequence[Sequence[int]],
    transformed: Sequence[Transformed] = (),
) -> PartResult:
    """Write part ``part_no`` (its decided rows: source id → destination queue ids) in one
    transaction on ``conn`` (autocommit off, no transaction open). A deadlock or serialization
    failure rolls the part back whole, so it is retried whole."""
    for attempt in range(RETRIES):
        try:
            return _write_part(conn, spec, part_no, ids, dests, transformed)
        except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure):
            if attempt == RETRIES - 1:
                raise
            time.sleep(0.1 * 2**attempt)
    raise AssertionError("unreachable")


def _write_part(
    conn: psycopg.Connection,
    spec: dict[str, Any],
    part_no: int,
    ids: Sequence[int],
    dests: Sequence[Sequence[int]],
    transformed: Sequence[Transformed],
) -> PartResult:
    res = PartResult(part_no)
    by_queue = {d["queue_id"]: d for d in spec["destinations"]}
    src = spec["source"]
    move = spec["mode"] == "MOVE"
    with conn.transaction():
        # The marker first: a concurrent attempt of the same part (a speculative or zombie
        # task) blocks here until the other commits or rolls back, then finds it done.
        row = conn.execute(
            "INSERT INTO aq_bulk_part (job_id, part_no, attempt, read, discarded, exceptions, "
            "gone, propagated, errors, done_at) "
            "VALUES (%s, %s, %s, 0, 0, 0, 0, '{}', '[]', now()) "
            "ON CONFLICT (job_id, part_no) DO NOTHING RETURNING id",
            (spec["job_id"], part_no, spec["attempt"]),
        ).fetchone()
        if row is None:
            res.skipped = True
            return res
        _check_queues(conn, spec)
        subscribers = {d["queue_id"]: _subscribers(conn, d) for d in spec["destinations"]}
        conn.execute(
            "CREATE TEMP TABLE bulk_in (id bigint PRIMARY KEY, dests bigint[]) ON COMMIT DROP"
        )
        _copy_rows(conn, "COPY bulk_in (id, dests) FROM STDIN", zip(ids, dests, strict=True))
        conn.execute(
            "CREATE TEMP TABLE bulk_tx (id bigint, dest bigint, kind text, type_name text, "
            "payload text, error text) ON COMMIT DROP"
        )
        if transformed:
            _copy_rows(
                conn,
                "COPY bulk_tx (id, dest, kind, type_name, payload, error) FROM STDIN",
                [(t.id, t.dest, t.kind, t.type_name, t.payload, t.error) for t in transformed],
            )
        res.read = len(ids)
        if move:
            _claim(conn, spec)
            # What this part consumed at the source, per message: gone = read but not taken
            # (another consumer, a lease), discarded = taken by no destination's rules.
            counts = conn.execute(
                "SELECT count(DISTINCT c.id), "
                "count(DISTINCT c.id) FILTER (WHERE cardinality(t.dests) = 0) "
                "FROM bulk_claimed c JOIN bulk_in t ON t.id = c.id"
            ).fetchone()
            taken, discarded_claimed = int(counts[0]), int(counts[1])
            if src["multiple_consumers"]:
                res.gone = res.read - taken
                res.discarded = discarded_claimed
            else:
                wanted = sum(1 for d in dests if d)
                res.gone = wanted - taken
                # Left at the source: no destination takes them.
                res.discarded = res.read - wanted
        else:
            present = conn.execute(
                "SELECT count(*), count(*) FILTER (WHERE cardinality(t.dests) = 0) "
                "FROM bulk_in t JOIN aq_message m ON m.id = t.id AND m.queue_id = %s",
                (src["id"],),
            ).fetchone()
            res.gone = res.read - int(present[0])
            res.discarded = int(present[1])

        failures: list[tuple[int, int | None, str]] = []
        job = f"spark job {spec['job_id']}"
        for t in transformed:
            if t.error is not None:
                d = by_queue[t.dest]
                failures.append((t.id, d.get("subscriber_id"), f"{job} → {d['name']}: {t.error}"))
        for d in spec["destinations"]:
            subs, rules = subscribers[d["queue_id"]]
            n = _insert(conn, spec, d, subs)
            for sid in _no_recipient(conn, spec, d, rules):
                failures.append(
                    (sid, d.get("subscriber_id"), f"{job} → {d['name']}: no subscriber takes it")
                )
                n -= 1
            res.propagated[d["name"]] = n
        if failures and move:
            # Only what this part consumed gets a copy in the exception queue: a message another
            # consumer took in between is that consumer's, and nothing may be copied twice.
            claimed = {
                (r[0], r[1]) for r in conn.execute("SELECT id, sub FROM bulk_claimed").fetchall()
            }
            failures = [f for f in failures if (f[0], f[1]) in claimed]
            res.exceptions = _exception_copies(conn, spec, failures)
        elif failures:
            # Copy mode: the source still holds every message, so an exception copy would come
            # back as a duplicate on replay. Counted, and the first reasons kept on the part.
            res.exceptions = len(failures)
            res.errors = [f"message {f[0]}: {f[2]}" for f in failures[:ERRORS_KEPT]]
        if move and not src["multiple_consumers"] and src["retention_time"] <= 0:
            from queues import engine

            conn.execute(engine.remove_sql(_info(src), "bulk_claimed"))
        conn.execute(
            "UPDATE aq_bulk_part SET read = %s, discarded = %s, exceptions = %s, gone = %s, "
            "propagated = %s, errors = %s, done_at = now() WHERE id = %s",
            (
                res.read,
                res.discarded,
                res.exceptions,
                res.gone,
                json.dumps(res.propagated),
                json.dumps(res.errors),
                row[0],
            ),
        )
        _number_commit_time(conn, spec)
    return res


def _number_commit_time(conn: psycopg.Connection, spec: dict[str, Any]) -> None:
    """The last statement of the part: commit-time destinations' copies get one commit number,
    taken under the engine's commit-order lock (released only once the commit is visible, see
    queues/engine/), so the lock is held for this UPDATE and the COMMIT alone, with no other
    row lock taken after it (a stat row held by an enqueuer waiting for the lock would deadlock)."""
    from queues import engine

    engine.number_commit_time(
        conn,
        [d["queue_id"] for d in spec["destinations"] if d["commit_time"]],
        "bulk_job_id = %(job)s AND original_queue_id IS NULL "
        "AND bulk_source_id IN (SELECT id FROM bulk_in)",
        {"job": spec["job_id"]},
    )


# --- the Spark data source ----------------------------------------------------------------------------------


class PartsWritten(WriterCommitMessage):
    def __init__(self, results: list[dict[str, Any]]):
        self.results = results


class AqWriter(DataSourceArrowWriter):
    def __init__(self, spec: dict[str, Any]):
        self.spec = spec

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        rows: dict[int, tuple[list[int], list[list[int]], list[Transformed]]] = {}
        for batch in iterator:
            cols = batch.to_pydict()
            tx = cols.get("tx")
            for i, (mid, part, dests) in enumerate(
                zip(cols["id"], cols["part"], cols["dests"], strict=True)
            ):
                ids, ds, ts = rows.setdefault(part, ([], [], []))
                ids.append(mid)
                ds.append(dests or [])
                for t in (tx[i] if tx else None) or ():
                    ts.append(Transformed(id=mid, **t))
        results = []
        with psycopg.connect(self.spec["conninfo"]) as conn:
            for part, (ids, ds, ts) in sorted(rows.items()):
                results.append(write_part(conn, self.spec, part, ids, ds, ts).as_dict())
        return PartsWritten(results)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        pass  # each part committed itself, with its marker

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        pass  # never undo: parts that committed are done (their markers say so)


class AqSink(DataSource):
    @classmethod
    def name(cls) -> str:
        return "aqsink"

    def writer(self, schema: StructType, overwrite: bool) -> AqWriter:
        return AqWriter(json.loads(self.options["spec"]))
