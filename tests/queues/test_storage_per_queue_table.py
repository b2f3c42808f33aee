"""Each queue table's messages live in partitions of their own: created with the queue table,
dropped with it, truncated by a whole-queue purge when nothing else lives there, and vacuumed by
the queue monitor once they hold many dead rows."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.db import connection

from queues import engine, services, tasks
from queues.models import Message, Queue
from tests.queues.helpers import LIVE, make_queue, put, raw, take


def _one(sql: str, params: list[Any] | None = None) -> Any:
    with connection.cursor() as cur:
        cur.execute(sql, params or [])
        row = cur.fetchone()
        return row[0] if row else None


def _persistence(table: str) -> str | None:
    return _one("SELECT relpersistence FROM pg_class WHERE relname = %s", [table])


def _filenode(table: str) -> int:
    return _one("SELECT pg_relation_filenode(%s::regclass)", [table])


@pytest.mark.django_db
def test_a_queue_table_gets_its_storage_and_takes_it_away_when_dropped(admin_user):
    qt = services.queue_table_create(user=admin_user, name="QT_STORE", multiple_consumers=True)
    logged, buffered = engine.message_leaf(qt.pk), engine.message_leaf(qt.pk, buffered=True)
    c_logged, c_buffered = engine.consumer_leaf(qt.pk), engine.consumer_leaf(qt.pk, buffered=True)
    assert [_persistence(t) for t in (logged, buffered, c_logged, c_buffered)] == [
        "p",
        "u",
        "p",
        "u",
    ]
    q = services.queue_create(user=admin_user, name="Q_STORE", queue_table=qt)
    services.subscriber_add(user=admin_user, queue=q, name="S1")
    [mid] = put(q, {"n": 1}, user=admin_user)
    # The message and its consumer copy are stored in this queue table's logged leaves.
    assert _one("SELECT tableoid::regclass::text FROM aq_message WHERE id = %s", [mid]) == logged
    assert (
        _one(
            "SELECT tableoid::regclass::text FROM aq_message_consumer WHERE message_id = %s", [mid]
        )
        == c_logged
    )
    services.queue_purge(user=admin_user, queue=q, condition=engine.PurgeCondition())
    services.queue_table_delete(user=admin_user, queue_table=qt)
    assert [_persistence(t) for t in (logged, buffered, c_logged, c_buffered)] == [None] * 4
    assert _one("SELECT count(*) FROM pg_class WHERE relname = %s", [f"aq_qt{qt.pk}"]) == 0


@pytest.mark.django_db(transaction=True)
def test_a_flush_takes_the_storage_of_the_queue_tables_it_removes(admin_user):
    """``manage.py flush`` (and every transactional test's teardown) deletes queue table rows
    without the service's drop; the storage they leave must go with them, or it piles up and
    every later TRUNCATE of the message tables locks it all."""
    from django.core.management import call_command

    from core.roles import Role
    from tests.conftest import _user

    gone = services.queue_table_create(user=admin_user, name="QT_FLUSHED")
    assert _one("SELECT to_regclass(%s)::text", [engine.message_leaf(gone.pk)]) is not None
    call_command("flush", interactive=False, verbosity=0)
    for table in (engine.message_part(gone.pk), engine.consumer_part(gone.pk)):
        assert _one("SELECT to_regclass(%s)::text", [table]) is None
    # A queue table that still exists keeps its storage.
    kept = services.queue_table_create(user=_user("bob", Role.ADMINISTRATOR), name="QT_KEPT")
    with connection.cursor() as cur:
        assert engine.drop_orphan_storage(cur.connection) == []
    assert _one("SELECT to_regclass(%s)::text", [engine.message_leaf(kept.pk)]) is not None


@LIVE
def test_purging_a_whole_queue_alone_in_its_queue_table_truncates(admin_user):
    q = make_queue(admin_user, "Q_ALONE")
    put(q, *range(50), user=admin_user)
    leaf = engine.message_leaf(q.queue_table_id)
    before = _filenode(leaf)
    removed = services.queue_purge(user=admin_user, queue=q, condition=engine.PurgeCondition())
    assert removed == 50
    assert not Message.objects.filter(queue=q).exists()
    # TRUNCATE gives the table a new file: no dead rows left behind.
    assert _filenode(leaf) != before
    # The queue works on after it.
    put(q, "again", user=admin_user)
    assert [m.payload for m in take(q, user=admin_user)] == ["again"]


@LIVE
def test_a_purge_never_truncates_another_queues_messages(admin_user):
    q = make_queue(admin_user, "Q_SHARED", max_retries=0)
    sibling = services.queue_create(user=admin_user, name="Q_SIBLING", queue_table=q.queue_table)
    exq = Queue.objects.get(queue_table=q.queue_table, kind="EXCEPTION_QUEUE")
    leaf = engine.message_leaf(q.queue_table_id)
    [failed] = put(q, "to exception", user=admin_user)
    engine.move_to_exception_queue(services.raw_connection(), [failed], "TEST")
    put(q, *range(5), user=admin_user)
    put(sibling, "sibling's", user=admin_user)
    before = _filenode(leaf)

    assert services.queue_purge(user=admin_user, queue=q, condition=engine.PurgeCondition()) == 5
    assert _filenode(leaf) == before
    assert [m.payload for m in Message.objects.filter(queue=sibling)] == ["sibling's"]
    assert list(Message.objects.filter(queue=exq).values_list("id", flat=True)) == [failed]

    # The exception queue shares the queue table too: purging it leaves the sibling's message.
    assert services.queue_purge(user=admin_user, queue=exq, condition=engine.PurgeCondition()) == 1
    assert _filenode(leaf) == before
    assert Message.objects.filter(queue=sibling).count() == 1


@LIVE
def test_a_purge_waits_for_no_running_dequeue(admin_user):
    """A session holding the storage (here: a dequeue's lease, not committed) does not block a
    purge: it removes what it can row by row, as AQ's purge with block => FALSE."""
    q = make_queue(admin_user, "Q_BUSY")
    put(q, "held", "free", user=admin_user)
    with raw() as other:
        [held] = engine.dequeue(other, engine.queue_info(other, q.pk), mode=engine.LOCKED)
        removed = services.queue_purge(user=admin_user, queue=q, condition=engine.PurgeCondition())
        assert removed == 1
        assert held.payload == "held"
        other.rollback()
    assert [m.payload for m in Message.objects.filter(queue=q)] == ["held"]


def _dead(table: str) -> int:
    return _one("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = %s", [table]) or 0


@LIVE
def test_the_queue_monitor_vacuums_storage_with_many_dead_rows(admin_user, settings):
    settings.AQ_VACUUM_MIN_DEAD = 200
    settings.AQ_VACUUM_DEAD_RATIO = 0.5
    q = make_queue(admin_user, "Q_CHURN")
    quiet = make_queue(admin_user, "Q_QUIET")
    put(quiet, "stays", user=admin_user)
    leaf, quiet_leaf = (
        engine.message_leaf(q.queue_table_id),
        engine.message_leaf(quiet.queue_table_id),
    )
    for _ in range(3):
        put(q, *range(100), user=admin_user)
        assert len(take(q, user=admin_user, batch=100)) == 100
    # The statistics reach the collector within a second or so of the commits.
    deadline = time.monotonic() + 10
    while _dead(leaf) < 300 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _dead(leaf) >= 300

    report = tasks.queue_monitor_run()

    assert leaf in report["vacuumed"]
    assert quiet_leaf not in report["vacuumed"]
    assert _one(
        "SELECT last_vacuum IS NOT NULL FROM pg_stat_user_tables WHERE relname = %s", [leaf]
    )
    assert _one(
        "SELECT last_vacuum IS NULL FROM pg_stat_user_tables WHERE relname = %s", [quiet_leaf]
    )
    assert _dead(leaf) == 0


@pytest.mark.django_db
def test_vacuum_refuses_a_transaction_and_a_table_that_is_not_storage():
    with raw() as conn:
        with pytest.raises(ValueError, match="autocommit"):
            engine.vacuum(conn, ["aq_qt1_p"])
        conn.autocommit = True
        with pytest.raises(ValueError, match="not a message leaf"):
            engine.vacuum(conn, ["auth_user"])


def _analysed(table: str) -> bool:
    return bool(
        _one(
            "SELECT coalesce(last_analyze, last_autoanalyze) IS NOT NULL FROM pg_stat_user_tables "
            "WHERE relname = %s",
            [table],
        )
    )


@LIVE
def test_the_queue_monitor_analyses_storage_that_grew_without_statistics(admin_user, settings):
    """Live rows count too: a leaf that took many messages (kept as history, or waiting) and was
    never analysed gets generic plans that scan all of it for one message (docs/BENCHMARKS.md,
    "The plan"), so the monitor analyses it as autovacuum's analyze threshold would."""
    settings.AQ_VACUUM_MIN_DEAD = 200
    settings.AQ_VACUUM_DEAD_RATIO = 0.5
    q = make_queue(admin_user, "Q_GROWN")
    quiet = make_queue(admin_user, "Q_STILL")
    put(quiet, "stays", user=admin_user)
    leaf, quiet_leaf = (
        engine.message_leaf(q.queue_table_id),
        engine.message_leaf(quiet.queue_table_id),
    )
    put(q, *range(300), user=admin_user)  # live rows, no dead ones
    deadline = time.monotonic() + 10
    modified = "SELECT n_mod_since_analyze FROM pg_stat_user_tables WHERE relname = %s"
    while (_one(modified, [leaf]) or 0) < 300 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _dead(leaf) == 0 and not _analysed(leaf)

    report = tasks.queue_monitor_run()

    assert leaf in report["vacuumed"]
    assert quiet_leaf not in report["vacuumed"]
    assert _analysed(leaf) and not _analysed(quiet_leaf)
