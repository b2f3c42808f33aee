"""Buffered messages (DBMS_AQ delivery_mode BUFFERED): outside the enqueuer's transaction, kept
apart from persistent ones at dequeue, AQ's refusals, publisher flow control (ORA-25307), spilling
by the queue monitor, the V$BUFFERED_* views, propagation keeping the mode, and the Streams pool's
10 MB-per-buffered-queue check (T10)."""

from __future__ import annotations

import psycopg
import pytest
from django.db import transaction

from core.exceptions import DomainError
from queues import engine, services
from queues.buffer_config import check_pool_reserve, check_pool_settings
from queues.models import QueueTable
from tests.queues.helpers import LIVE, make_queue, msg

pytestmark = LIVE


def dsn() -> str:
    return services.conninfo()


def count(sql: str, *params: object) -> int:
    with psycopg.connect(dsn()) as other:
        return other.execute(sql, params).fetchone()[0]


def test_a_buffered_message_is_visible_at_once_and_the_enqueuers_rollback_keeps_it(admin_user):
    make_queue(admin_user, "BQ")
    with psycopg.connect(dsn()) as conn:
        q = engine.queue_info(conn, "BQ")
        # The caller's transaction is open (something else written in it) and never commits.
        conn.execute("CREATE TEMP TABLE t (x int)")
        (bid,) = engine.enqueue(conn, q, [msg({"n": 1})], delivery_mode=engine.BUFFERED)
        (pid,) = engine.enqueue(conn, q, [msg({"n": 2})])
        # Another session sees the buffered message before the enqueuer commits, not the
        # persistent one.
        assert count("SELECT count(*) FROM aq_message WHERE id = %s", bid) == 1
        assert count("SELECT count(*) FROM aq_message WHERE id = %s", pid) == 0
        conn.rollback()
    row = None
    with psycopg.connect(dsn()) as other:
        row = other.execute(
            "SELECT delivery_mode, in_buffer FROM aq_message WHERE id = %s", (bid,)
        ).fetchone()
        assert (
            other.execute("SELECT count(*) FROM aq_message WHERE id = %s", (pid,)).fetchone()[0]
            == 0
        )
    assert row == ("BUFFERED", True)


def test_dequeue_takes_persistent_or_buffered_messages_as_asked(admin_user):
    make_queue(admin_user, "BQ")
    services.message_enqueue(user=admin_user, queue="BQ", messages=[msg("p1")])
    services.message_enqueue(
        user=admin_user, queue="BQ", messages=[msg("b1")], delivery_mode=engine.BUFFERED
    )
    services.message_enqueue(user=admin_user, queue="BQ", messages=[msg("p2")])

    def take(mode: str, batch: int = 10) -> list[engine.DequeuedMessage]:
        return services.message_dequeue(
            user=admin_user,
            queue="BQ",
            request=services.DequeueRequest(mode=engine.BROWSE, batch=batch, delivery_mode=mode),
        )

    assert [m.payload for m in take(engine.PERSISTENT)] == ["p1", "p2"]
    got = take(engine.BUFFERED)
    assert [(m.payload, m.delivery_mode, m.buffered_state) for m in got] == [
        ("b1", "BUFFERED", "IN MEMORY")
    ]
    assert [m.payload for m in take(engine.PERSISTENT_OR_BUFFERED)] == ["p1", "b1", "p2"]

    # A buffered REMOVE is final at once: the caller's transaction rolling back does not undo it.
    with pytest.raises(RuntimeError), transaction.atomic():
        done = services.message_dequeue(
            user=admin_user,
            queue="BQ",
            request=services.DequeueRequest(delivery_mode=engine.BUFFERED),
        )
        assert [m.payload for m in done] == ["b1"]
        raise RuntimeError("the caller gives up")
    assert take(engine.BUFFERED) == []
    assert [m.payload for m in take(engine.PERSISTENT)] == ["p1", "p2"]


def test_what_aq_refuses_for_buffered_messages_names_the_field(admin_user):
    q = make_queue(admin_user, "BQ")

    def refused(**kw: object) -> DomainError:
        with pytest.raises(DomainError) as exc:
            services.message_enqueue(user=admin_user, **kw)  # type: ignore[arg-type]
        return exc.value

    err = refused(queue=q.exception_queue.name, messages=[msg(1)], delivery_mode="BUFFERED")
    assert err.field == "delivery_mode" and "exception queue" in str(err)
    err = refused(queue="BQ", messages=[msg(1, delay=5)], delivery_mode="BUFFERED")
    assert err.field == "delay"
    err = refused(queue="BQ", messages=[msg(1), msg(2, delay=5)], delivery_mode="BUFFERED")
    assert err.field == "messages[1].delay"
    err = refused(queue="BQ", messages=[msg(1)], delivery_mode="BUFFERED", visibility="ON_COMMIT")
    assert err.field == "visibility" and "ORA-25298" in str(err)
    err = refused(queue="BQ", messages=[msg(1)], delivery_mode="EXPRESS")
    assert err.field == "delivery_mode"

    QueueTable.objects.filter(pk=q.queue_table_id).update(message_grouping="TRANSACTIONAL")
    err = refused(queue="BQ", messages=[msg(1)], delivery_mode="BUFFERED")
    assert err.field == "delivery_mode" and "transactional message grouping" in str(err)
    QueueTable.objects.filter(pk=q.queue_table_id).update(message_grouping="NONE")

    for mode in (engine.BUFFERED, engine.PERSISTENT_OR_BUFFERED):
        with pytest.raises(DomainError) as exc:
            services.message_dequeue(
                user=admin_user,
                queue="BQ",
                request=services.DequeueRequest(mode=engine.LOCKED, delivery_mode=mode),
            )
        assert exc.value.field == "delivery_mode" and "LOCKED" in str(exc.value)
    assert count("SELECT count(*) FROM aq_message") == 0  # nothing half-written


def test_flow_control_refuses_a_publisher_whose_subscribers_are_behind(admin_user, settings):
    # Default mode: 10% of a 20 KB shared pool, a 2 KB pool for the one buffered queue.
    settings.AQ_SHARED_POOL_SIZE = "20K"
    settings.AQ_BUFFER_FLOW_CONTROL_RECHECK_S = 0
    make_queue(admin_user, "BQ")
    payload = "x" * 500
    put = dict(user=admin_user, queue="BQ", delivery_mode="BUFFERED")
    sent = 0
    with pytest.raises(engine.FlowControl) as exc:
        for _ in range(10):
            services.message_enqueue(messages=[msg(payload, sender="PUB")], **put)
            sent += 1
    assert sent == 4  # 4 x 502 bytes fit in 2048, the fifth does not
    err = exc.value
    assert str(err).startswith("ORA-25307: Enqueue rate too high, flow control enabled.")
    assert err.code == "flow_control" and err.field == "delivery_mode"
    with psycopg.connect(dsn()) as other:
        state = other.execute(
            "SELECT publisher_state, cnum_msgs, num_msgs FROM v_buffered_publishers "
            "WHERE sender_name = 'PUB'"
        ).fetchone()
    assert state == ("IN FLOW CONTROL: INSUFFICIENT MEMORY AND UNBROWSED MESSAGES", 4, 4)

    # A subscriber catching up lets the publisher go on.
    services.message_dequeue(
        user=admin_user, queue="BQ", request=services.DequeueRequest(delivery_mode="BUFFERED")
    )
    services.message_enqueue(messages=[msg(payload, sender="PUB")], **put)
    assert count("SELECT publisher_state FROM v_buffered_publishers WHERE sender_name = 'PUB'") == (
        "PUBLISHING MESSAGES"
    )


def test_flow_control_by_message_count(admin_user, settings):
    settings.AQ_BUFFER_FLOW_CONTROL_MSGS = 3
    settings.AQ_BUFFER_FLOW_CONTROL_RECHECK_S = 0
    make_queue(admin_user, "BQ")
    put = dict(user=admin_user, queue="BQ", delivery_mode="BUFFERED")
    services.message_enqueue(messages=[msg(1), msg(2), msg(3)], **put)
    with pytest.raises(engine.FlowControl):
        services.message_enqueue(messages=[msg(4)], **put)
    assert count("SELECT publisher_state FROM v_buffered_publishers") == (
        "IN FLOW CONTROL: TOO MANY UNBROWSED MESSAGES"
    )


def test_the_queue_monitor_spills_old_buffered_messages_and_counts_them(admin_user, settings):
    make_queue(admin_user, "BQ")
    ids = services.message_enqueue(
        user=admin_user, queue="BQ", messages=[msg(1), msg(2)], delivery_mode="BUFFERED"
    )
    with psycopg.connect(dsn()) as conn:
        assert engine.monitor_run(conn).spilled == 0  # 300 s by default: nothing is that old
        conn.commit()
    settings.AQ_BUFFER_SPILL_AFTER_S = 0
    with psycopg.connect(dsn()) as conn:
        assert engine.monitor_run(conn).spilled == 2
        conn.commit()
    with psycopg.connect(dsn()) as other:
        rows = other.execute(
            "SELECT delivery_mode, in_buffer FROM aq_message WHERE id = ANY(%s)", (ids,)
        ).fetchall()
        assert rows == [("BUFFERED", False)] * 2
        figures = other.execute(
            "SELECT num_msgs, spill_msgs, cnum_msgs, cspill_msgs, queue_size "
            "FROM v_buffered_queues WHERE queue_name = 'BQ'"
        ).fetchone()
    assert figures == (2, 2, 2, 2, 0)
    # Spilled messages are still buffered messages: a buffered dequeue takes them.
    got = services.message_dequeue(
        user=admin_user,
        queue="BQ",
        request=services.DequeueRequest(batch=5, delivery_mode="BUFFERED"),
    )
    assert [(m.payload, m.buffered_state) for m in got] == [(1, "SPILLED"), (2, "SPILLED")]


def test_memory_beyond_the_queues_share_spills_the_oldest(admin_user, settings):
    make_queue(admin_user, "BQ")
    services.message_enqueue(
        user=admin_user,
        queue="BQ",
        messages=[msg("a" * 600), msg("b" * 600), msg("c" * 600)],
        delivery_mode="BUFFERED",
    )
    settings.AQ_SHARED_POOL_SIZE = "13K"  # a 1331-byte pool: two of the 602-byte payloads fit
    with psycopg.connect(dsn()) as conn:
        assert engine.monitor_run(conn).spilled == 1
        conn.commit()
        kept = conn.execute(
            "SELECT left(payload #>> '{}', 1), in_buffer FROM aq_message ORDER BY id"
        ).fetchall()
    assert kept == [("a", False), ("b", True), ("c", True)]


def test_buffered_subscribers_view(admin_user):
    q = make_queue(admin_user, "BQ", multiple_consumers=True)
    services.subscriber_add(user=admin_user, queue=q, name="S1")
    services.subscriber_add(user=admin_user, queue=q, name="S2")
    services.message_enqueue(
        user=admin_user, queue="BQ", messages=[msg(1), msg(2)], delivery_mode="BUFFERED"
    )
    got = services.message_dequeue(
        user=admin_user,
        queue="BQ",
        request=services.DequeueRequest(consumer_name="S1", batch=5, delivery_mode="BUFFERED"),
    )
    assert len(got) == 2
    with psycopg.connect(dsn()) as other:
        rows = other.execute(
            "SELECT subscriber_name, num_msgs, total_dequeued_msg, last_dequeued_num "
            "FROM v_buffered_subscribers ORDER BY subscriber_name"
        ).fetchall()
        queue_row = other.execute(
            "SELECT num_msgs, cnum_msgs FROM v_buffered_queues WHERE queue_name = 'BQ'"
        ).fetchone()
    assert rows == [("S1", 0, 2, max(m.id for m in got)), ("S2", 2, 0, None)]
    assert queue_row == (2, 2)  # S2 has not had them yet


def test_transfer_moves_buffered_messages_as_buffered(admin_user):
    src_q = make_queue(admin_user, "SRC", multiple_consumers=True)
    make_queue(admin_user, "DST")
    services.subscriber_add(user=admin_user, queue=src_q, name="PROP")
    services.message_enqueue(user=admin_user, queue="SRC", messages=[msg("p")])
    services.message_enqueue(
        user=admin_user, queue="SRC", messages=[msg("b")], delivery_mode="BUFFERED"
    )
    with psycopg.connect(dsn()) as conn:
        src, dst = engine.queue_info(conn, "SRC"), engine.queue_info(conn, "DST")
        r = engine.transfer(conn, src, engine.subscriber_id(conn, src, "PROP"), dst, batch=10)
        conn.commit()
        assert (r.taken, r.moved) == (2, 2)
        rows = conn.execute(
            "SELECT payload #>> '{}', delivery_mode, in_buffer FROM aq_message "
            "WHERE queue_id = %s ORDER BY id",
            (dst.id,),
        ).fetchall()
        # Each copy counts where an enqueue of its mode counts: the persistent one in the
        # queue's counters, the buffered one in the buffer's (V$BUFFERED_PUBLISHERS).
        counted = conn.execute(
            "SELECT (SELECT sum(enqueued) FROM aq_queue_stat WHERE queue_id = %(q)s), "
            "(SELECT sum(enqueued) FROM aq_buffer_stat WHERE queue_id = %(q)s)",
            {"q": dst.id},
        ).fetchone()
        # The propagation's subscriber dequeued one buffered message at the source.
        taken = conn.execute(
            "SELECT total_dequeued_msg FROM v_buffered_subscribers "
            "WHERE queue_name = 'SRC' AND subscriber_name = 'PROP'"
        ).fetchone()
    assert rows == [("p", "PERSISTENT", False), ("b", "BUFFERED", True)]
    assert counted == (1, 1)
    assert taken == (1,)


def test_t10_a_manual_pool_reserves_10_mb_per_buffered_queue(admin_user, settings):
    for name in ("B1", "B2", "B3"):
        make_queue(admin_user, name)
        services.message_enqueue(
            user=admin_user, queue=name, messages=[msg(1)], delivery_mode="BUFFERED"
        )
    settings.AQ_STREAMS_POOL_SIZE = "20M"  # manual mode: 3 buffered queues need 30 MB
    errors = check_pool_reserve(databases=["default"])
    assert [e.id for e in errors] == ["queues.E101"]
    assert "3 buffered queues" in errors[0].msg and "30 MB" in errors[0].msg
    # A fourth buffered queue is refused at its first buffered enqueue (the ORA-00832 analogue).
    make_queue(admin_user, "B4")
    with pytest.raises(engine.PoolTooSmall) as exc:
        services.message_enqueue(
            user=admin_user, queue="B4", messages=[msg(1)], delivery_mode="BUFFERED"
        )
    assert exc.value.field == "delivery_mode" and "40 MB" in str(exc.value)

    settings.AQ_STREAMS_POOL_SIZE = "30M"
    assert check_pool_reserve(databases=["default"]) == []
    # The automatic modes and the default mode size the pool themselves: no reserve to check.
    settings.AQ_STREAMS_POOL_SIZE = "20M"
    settings.AQ_SGA_TARGET = "1G"
    assert check_pool_reserve(databases=["default"]) == []
    assert engine.buffered.POOL.mode == "AUTOMATIC SHARED MEMORY MANAGEMENT"
    settings.AQ_SGA_TARGET = "0"
    settings.AQ_STREAMS_POOL_SIZE = "0"
    assert engine.buffered.POOL.mode == "DEFAULT"
    assert engine.buffered.POOL.size == 8 * 1024 * 1024  # 10% of the 80 MB shared pool
    assert check_pool_reserve(databases=["default"]) == []


def test_pool_settings_that_are_not_sizes_fail_the_check(settings):
    settings.AQ_STREAMS_POOL_SIZE = "ten megabytes"
    assert [e.id for e in check_pool_settings()] == ["queues.E100"]
    assert "AQ_STREAMS_POOL_SIZE" in check_pool_settings()[0].msg
    settings.AQ_STREAMS_POOL_SIZE = "5M"
    assert [e.id for e in check_pool_settings()] == ["queues.W100"]


def _where(ids: list[int]) -> list[tuple[str, int]]:
    """Which storage leaf holds each message (by id order) and how many consumer copies."""
    with psycopg.connect(dsn()) as other:
        return other.execute(
            "SELECT m.tableoid::regclass::text, "
            "(SELECT count(*) FROM aq_message_consumer mc WHERE mc.message_id = m.id) "
            "FROM aq_message m WHERE m.id = ANY(%s) ORDER BY m.id",
            (ids,),
        ).fetchall()


def test_buffered_messages_live_in_the_unlogged_leaves_and_spill_with_their_copies(
    admin_user, settings
):
    q = make_queue(admin_user, "BQ", multiple_consumers=True)
    for name in ("S1", "S2"):
        services.subscriber_add(user=admin_user, queue=q, name=name)
    qt = q.queue_table_id
    ids = services.message_enqueue(
        user=admin_user, queue="BQ", messages=[msg(1), msg(2)], delivery_mode="BUFFERED"
    )
    (pid,) = services.message_enqueue(user=admin_user, queue="BQ", messages=[msg("p")])
    assert _where([*ids, pid]) == [(f"aq_qt{qt}_b", 2), (f"aq_qt{qt}_b", 2), (f"aq_qt{qt}_p", 2)]
    assert (
        count(f"SELECT count(*) FROM aq_qt{qt}_cb WHERE in_buffer AND queue_table_id = %s", qt) == 4
    )
    with psycopg.connect(dsn()) as conn:
        persistence = dict(
            conn.execute(
                "SELECT relname, relpersistence FROM pg_class WHERE relname = ANY(%s)",
                ([f"aq_qt{qt}_b", f"aq_qt{qt}_cb", f"aq_qt{qt}_p", f"aq_qt{qt}_cp"],),
            ).fetchall()
        )
    assert persistence == {
        f"aq_qt{qt}_b": "u",
        f"aq_qt{qt}_cb": "u",
        f"aq_qt{qt}_p": "p",
        f"aq_qt{qt}_cp": "p",
    }

    settings.AQ_BUFFER_SPILL_AFTER_S = 0
    with psycopg.connect(dsn()) as holder, psycopg.connect(dsn()) as monitor:
        # A dequeuer holds S1's copy of the first message: the spill takes the second only, and
        # does not wait (a wait would fail at the lock timeout).
        holder.execute(
            "SELECT 1 FROM aq_message_consumer WHERE message_id = %s AND subscriber_id = "
            "(SELECT id FROM queues_subscriber WHERE name = 'S1') FOR UPDATE",
            (ids[0],),
        )
        monitor.execute("SET lock_timeout = '2s'")
        assert engine.monitor_run(monitor).spilled == 1
        monitor.commit()
        assert _where(ids) == [(f"aq_qt{qt}_b", 2), (f"aq_qt{qt}_p", 2)]
        holder.rollback()
        assert engine.monitor_run(monitor).spilled == 1
        monitor.commit()
    # Same ids and fields, copies in the logged leaf with the message's storage keys.
    assert _where(ids) == [(f"aq_qt{qt}_p", 2), (f"aq_qt{qt}_p", 2)]
    assert (
        count(f"SELECT count(*) FROM aq_qt{qt}_cp WHERE NOT in_buffer AND queue_table_id = %s", qt)
        == 6
    )
    assert (
        count(f"SELECT count(*) FROM aq_qt{qt}_b") + count(f"SELECT count(*) FROM aq_qt{qt}_cb")
        == 0
    )

    for name in ("S1", "S2"):
        got = services.message_dequeue(
            user=admin_user,
            queue="BQ",
            request=services.DequeueRequest(consumer_name=name, batch=5, delivery_mode="BUFFERED"),
        )
        assert [(m.id, m.payload, m.buffered_state) for m in got] == [
            (ids[0], 1, "SPILLED"),
            (ids[1], 2, "SPILLED"),
        ]
    # A persistent dequeue never saw them, and still has its own message.
    got = services.message_dequeue(
        user=admin_user,
        queue="BQ",
        request=services.DequeueRequest(consumer_name="S1", mode=engine.BROWSE, batch=5),
    )
    assert [m.payload for m in got] == ["p"]


def test_an_expired_buffered_message_goes_to_the_exception_queue_as_a_persistent_one(admin_user):
    q = make_queue(admin_user, "BQ")
    (mid,) = services.message_enqueue(
        user=admin_user, queue="BQ", messages=[msg("old", expiration=0)], delivery_mode="BUFFERED"
    )
    with psycopg.connect(dsn()) as conn:
        assert engine.monitor_run(conn).expired == 1
        conn.commit()
    with psycopg.connect(dsn()) as other:
        row = other.execute(
            "SELECT queue_id, state, delivery_mode, in_buffer, tableoid::regclass::text "
            "FROM aq_message WHERE id = %s",
            (mid,),
        ).fetchone()
        expired = other.execute(
            "SELECT expired_msgs FROM v_buffered_queues WHERE queue_name = 'BQ'"
        ).fetchone()
    assert row == (
        q.exception_queue_id,
        "EXPIRED",
        "PERSISTENT",
        False,
        f"aq_qt{q.queue_table_id}_p",
    )
    assert expired == (1,)
    # The exception queue's ordinary (persistent) dequeue takes it.
    got = services.message_dequeue(
        user=admin_user,
        queue=q.exception_queue.name,
        request=services.DequeueRequest(mode=engine.BROWSE),
    )
    assert [m.id for m in got] == [mid]
