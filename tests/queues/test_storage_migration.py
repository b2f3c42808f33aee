"""Migration 0009 moves the old single ``aq_message`` table into per-queue-table partitions: every
message state, lease, consumer copy and commit sequence number arrives with the same id and
fields, dequeue works after it, and the reverse migration gives the same rows back."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import IntegrityError, connection
from django.db.migrations.executor import MigrationExecutor

from queues import engine, services
from tests.queues.helpers import LIVE, make_queue, msg

pytestmark = LIVE

BEFORE = ("queues", "0009_message_group_lease")
AFTER = ("queues", "0010_message_storage_per_queue_table")
LATEST = ("queues", "0014_message_origin_route_tag")

MESSAGE_COLS = (
    "id, queue_id, queue_table_id, state, priority, sort_pri, commit_seq, kind, type_name, "
    "correlation, sender, headers, payload, enq_time, enq_user, delay_until, expiration, "
    "expire_at, attempts, locked_until, lock_token, pending_consumers, processed_at, "
    "original_queue_id, exception_reason, replayed, bulk_job_id, bulk_source_id, delivery_mode, "
    "in_buffer, txn_group"
)
CONSUMER_COLS = "id, message_id, subscriber_id, attempts, locked_until, lock_token"


def _migrate(target: tuple[str, str]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])


def _migrate_to_latest() -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    # Every app's leaf: going back to queues 0008 also unapplied what depends on later queues
    # migrations (jobs, sites), which later tests need.
    executor.migrate(executor.loader.graph.leaf_nodes())


def _exec(sql: str) -> None:
    with connection.cursor() as cur:
        cur.execute(sql)


def _rows(sql: str) -> list[tuple[Any, ...]]:
    with connection.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def _insert(sql: str, params: list[Any]) -> int:
    with connection.cursor() as cur:
        cur.execute(sql + " RETURNING id", params)
        return cur.fetchone()[0]


def _message(queue: Any, state: str, **fields: Any) -> int:
    cols = {
        "queue_id": queue.pk,
        "queue_table_id": queue.queue_table_id,
        "state": state,
        "priority": 1,
        "sort_pri": 0,
        "commit_seq": 0,
        "kind": "USER",
        "type_name": "",
        "correlation": "",
        "sender": "",
        "headers": "{}",
        "payload": '{"n": 1}',
        "enq_time": "2026-11-26T10:00:00Z",
        "enq_user": "alice",
        "attempts": 0,
        "pending_consumers": 0,
        "exception_reason": "",
        "replayed": False,
        **fields,
    }
    names = ", ".join(cols)
    marks = ", ".join(["%s"] * len(cols))
    return _insert(f"INSERT INTO aq_message ({names}) VALUES ({marks})", list(cols.values()))


@pytest.fixture
def at_0008(admin_user):
    """Topology made at the latest migration (its partitions exist), then the schema taken back
    to 0008: plain tables, as before the change. The test database ends at the latest state."""
    single = make_queue(admin_user, "MIG_SINGLE", retention_time=3600)
    multi = make_queue(admin_user, "MIG_MULTI", sort_order="commit_time", multiple_consumers=True)
    subs = [
        services.subscriber_add(user=admin_user, queue=multi, name=name) for name in ("S1", "S2")
    ]
    _migrate(BEFORE)
    try:
        yield single, multi, subs
    finally:
        _migrate_to_latest()


def test_every_message_state_moves_into_the_partitions_and_back(at_0008):
    single, multi, (s1, s2) = at_0008
    assert _rows("SELECT relkind FROM pg_class WHERE relname = 'aq_message'") == [("r",)]
    # An index an earlier migration added (as grouping's does) is carried over, not forgotten.
    _exec("CREATE INDEX aq_message_extra ON aq_message (correlation) WHERE correlation <> ''")
    exq = single.queue_table.queues.get(kind="EXCEPTION_QUEUE")
    ids = {
        "ready": _message(single, "READY", priority=3, correlation="c1", headers='{"h": 1}'),
        "waiting": _message(single, "WAITING", delay_until="2099-01-01T00:00:00Z"),
        "expiring": _message(single, "READY", expiration=60, expire_at="2099-01-01T00:00:00Z"),
        "processed": _message(single, "PROCESSED", processed_at="2026-11-26T10:01:00Z"),
        "leased": _message(
            single,
            "READY",
            locked_until="2099-01-01T00:00:00Z",
            lock_token="6f1c1f3e-8f0a-4a55-9f39-3b1f0c8d2a11",
            attempts=2,
        ),
        "exception": _message(
            exq,
            "EXPIRED",
            original_queue_id=single.pk,
            exception_reason="MAX_RETRIES_EXCEEDED",
            attempts=5,
        ),
        "bulk": _message(single, "READY", bulk_job_id=7, bulk_source_id=99),
        # A buffered message goes to the queue table's UNLOGGED leaf.
        "buffered": _message(single, "READY", delivery_mode="BUFFERED", in_buffer=True),
        # Commit-time: NULL at insert, numbered by the deferred trigger when it commits.
        "commit_time": _message(multi, "READY", commit_seq=None, pending_consumers=2),
    }
    mid = ids["commit_time"]
    _insert(
        "INSERT INTO aq_message_consumer (message_id, subscriber_id, attempts) VALUES (%s, %s, 0)",
        [mid, s1.pk],
    )
    _insert(
        "INSERT INTO aq_message_consumer (message_id, subscriber_id, attempts, locked_until, "
        "lock_token) VALUES (%s, %s, 1, '2099-01-01', '0b5d7c36-4d4f-4c1e-9a57-0e1f7f0f3b2c')",
        [mid, s2.pk],
    )
    messages = _rows(f"SELECT {MESSAGE_COLS} FROM aq_message ORDER BY id")
    consumers = _rows(f"SELECT {CONSUMER_COLS} FROM aq_message_consumer ORDER BY id")
    assert len(messages) == 9 and len(consumers) == 2
    assert _rows(f"SELECT commit_seq IS NOT NULL FROM aq_message WHERE id = {mid}") == [(True,)]

    _migrate(AFTER)

    assert _rows("SELECT relkind FROM pg_class WHERE relname = 'aq_message'") == [("p",)]
    assert _rows(f"SELECT {MESSAGE_COLS} FROM aq_message ORDER BY id") == messages
    assert _rows(f"SELECT {CONSUMER_COLS} FROM aq_message_consumer ORDER BY id") == consumers
    # Each row is stored in its own queue table's logged leaf, the copies beside their message.
    where = _rows(
        "SELECT m.id, m.tableoid::regclass::text FROM aq_message m ORDER BY m.id"
    ) + _rows(
        "SELECT c.message_id, c.tableoid::regclass::text FROM aq_message_consumer c "
        "JOIN aq_message m ON m.id = c.message_id AND m.queue_table_id = c.queue_table_id"
    )
    expect = {
        single.pk: single.queue_table_id,
        exq.pk: exq.queue_table_id,
        multi.pk: multi.queue_table_id,
    }
    qt_of = {row[0]: expect[row[1]] for row in messages}
    buffered = ids["buffered"]
    assert sorted(where) == sorted(
        [(m, engine.message_leaf(qt_of[m], buffered=m == buffered)) for m in qt_of]
        + [(mid, engine.consumer_leaf(multi.queue_table_id))] * 2
    )

    assert _rows(
        "SELECT c.relkind FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid "
        "WHERE x.indrelid = 'aq_message'::regclass AND c.relname = 'aq_message_extra'"
    ) == [("I",)]
    # The views over the tables were recreated, over the new ones.
    assert _rows(
        "SELECT DISTINCT d.refobjid::regclass::text FROM pg_depend d "
        "JOIN pg_rewrite r ON r.oid = d.objid "
        "WHERE r.ev_class = 'v_propagation_sender'::regclass "
        "AND d.refobjid = 'aq_message_consumer'::regclass"
    ) == [("aq_message_consumer",)]

    # Dequeue works on the migrated rows; new ids continue after the old ones. Today's engine
    # reads the columns later queues migrations add (origin site, route, tag: 0014), so the
    # rows go on to the latest queues migration first (and all the way back below).
    _migrate(LATEST)
    conn = services.raw_connection()
    got = engine.dequeue(conn, engine.queue_info(conn, single.pk), batch=10)
    assert {ids["ready"], ids["expiring"], ids["bulk"]} <= {m.id for m in got}
    got = engine.dequeue(conn, engine.queue_info(conn, multi.pk), consumer="S1")
    assert [m.id for m in got] == [mid]
    # S2's copy is leased until 2099: nothing for S2, and the message waits for it.
    assert engine.dequeue(conn, engine.queue_info(conn, multi.pk), consumer="S2") == []
    assert _rows(f"SELECT state, pending_consumers FROM aq_message WHERE id = {mid}") == [
        ("READY", 1)
    ]
    new_id = engine.enqueue(conn, engine.queue_info(conn, single.pk), [msg({"n": 2})])[0]
    assert new_id > max(r[0] for r in messages)
    # The bulk key still refuses a second copy of the same source message in the same queue.
    with pytest.raises(IntegrityError, match=r"\(queue_id, bulk_job_id, bulk_source_id"):
        _message(single, "READY", bulk_job_id=7, bulk_source_id=99)
    remaining = _rows(f"SELECT {MESSAGE_COLS} FROM aq_message ORDER BY id")
    remaining_consumers = _rows(f"SELECT {CONSUMER_COLS} FROM aq_message_consumer ORDER BY id")

    _migrate(BEFORE)

    assert _rows("SELECT relkind FROM pg_class WHERE relname = 'aq_message'") == [("r",)]
    assert _rows(f"SELECT {MESSAGE_COLS} FROM aq_message ORDER BY id") == remaining
    assert _rows(f"SELECT {CONSUMER_COLS} FROM aq_message_consumer ORDER BY id") == (
        remaining_consumers
    )
    assert _rows("SELECT count(*) FROM pg_class WHERE relname ~ '^aq_qt[0-9]'") == [(0,)]
    assert _rows("SELECT count(*) FROM pg_indexes WHERE indexname = 'aq_message_extra'") == [(1,)]
    _exec("DROP INDEX aq_message_extra")
