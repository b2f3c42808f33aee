"""TRANSACTIONAL message grouping: one enqueuing transaction's messages are one group, handed out
whole, in order, to one consumer, with AQ's end-of-group signal; NEXT_TRANSACTION skips the rest
of a group; browse shows the groups; a crash mid-enqueue leaves no part of a group."""

from __future__ import annotations

import random
import time
from collections import defaultdict

import psycopg
import pytest

from queues import engine, services

from .helpers import LIVE, browse, info, msg, raw, run_threads


def grouped_queue(user, name: str, **kw):
    qt = services.queue_table_create(
        user=user, name=f"QT_{name}", message_grouping="TRANSACTIONAL", **kw
    )
    return services.queue_create(user=user, name=name, queue_table=qt)


def enqueue_group(queue, *payloads) -> list[int]:
    """One transaction, so one group."""
    with raw() as conn:
        ids = engine.enqueue(conn, info(conn, queue), [msg(p) for p in payloads])
        conn.commit()
    return ids


def dq(conn, queue, **kw) -> list[engine.DequeuedMessage]:
    got = engine.dequeue(conn, info(conn, queue), **kw)
    conn.commit()
    return got


@LIVE
def test_one_consumer_gets_a_group_in_order_with_the_end_of_group_flag_then_the_next(admin_user):
    queue = grouped_queue(admin_user, "G1")
    enqueue_group(queue, "a1", "a2", "a3")
    enqueue_group(queue, "b1", "b2")
    with raw() as conn:
        first = dq(conn, queue)
        token = first[0].group_token
        rest = dq(conn, queue, group_token=token) + dq(conn, queue, group_token=token)
        group_a = first + rest
        assert [m.payload for m in group_a] == ["a1", "a2", "a3"]
        assert [m.group_position for m in group_a] == [1, 2, 3]
        assert [m.last_in_group for m in group_a] == [False, False, True]
        assert len({m.transaction_group for m in group_a}) == 1
        # ORA-25235 after the last message of the group.
        with pytest.raises(engine.EndOfGroup) as err:
            dq(conn, queue, group_token=token)
        assert err.value.field == "group_token"
        conn.rollback()
        group_b = dq(conn, queue, navigation=engine.NEXT_TRANSACTION, batch=10)
        assert [m.payload for m in group_b] == ["b1", "b2"]
        assert group_b[-1].last_in_group and not group_b[0].last_in_group
        assert group_b[0].transaction_group != group_a[0].transaction_group


@LIVE
def test_a_batch_never_crosses_into_the_next_group(admin_user):
    queue = grouped_queue(admin_user, "G2")
    enqueue_group(queue, 1, 2)
    enqueue_group(queue, 3)
    with raw() as conn:
        assert [m.payload for m in dq(conn, queue, batch=100)] == [1, 2]
        assert [m.payload for m in dq(conn, queue, batch=100)] == [3]


@LIVE
def test_another_consumer_skips_a_group_someone_owns(admin_user):
    queue = grouped_queue(admin_user, "G3")
    enqueue_group(queue, "a1", "a2")
    enqueue_group(queue, "b1", "b2")
    with raw() as alice, raw() as bob:
        a = dq(alice, queue)
        b = dq(bob, queue)
        assert [m.payload for m in a] == ["a1"]
        assert [m.payload for m in b] == ["b1"]
        assert dq(bob, queue, group_token=b[0].group_token)[0].payload == "b2"
        assert dq(alice, queue, group_token=a[0].group_token)[0].payload == "a2"
        assert dq(alice, queue) == [] and dq(bob, queue) == []


@LIVE
def test_a_group_is_skipped_while_its_first_dequeue_is_uncommitted(admin_user):
    queue = grouped_queue(admin_user, "G4")
    enqueue_group(queue, "a1", "a2", "a3")
    enqueue_group(queue, "b1")
    with raw() as alice, raw() as bob:
        a = engine.dequeue(alice, info(alice, queue))  # not committed yet
        assert a[0].payload == "a1"
        assert [m.payload for m in dq(bob, queue, batch=10)] == ["b1"]
        assert dq(bob, queue, batch=10) == []
        alice.commit()
        assert dq(bob, queue, batch=10) == []  # alice's lease holds a2, a3 for her
        assert [m.payload for m in dq(alice, queue, group_token=a[0].group_token, batch=5)] == [
            "a2",
            "a3",
        ]


@LIVE
def test_next_transaction_skips_the_rest_of_the_current_group(admin_user):
    queue = grouped_queue(admin_user, "G5")
    enqueue_group(queue, "a1", "a2", "a3")
    enqueue_group(queue, "b1")
    with raw() as conn:
        a = dq(conn, queue)
        b = dq(conn, queue, navigation=engine.NEXT_TRANSACTION, group_token=a[0].group_token)
        assert [m.payload for m in b] == ["b1"] and b[0].last_in_group
        # The skipped messages stay in the queue, as AQ leaves them, and form the rest of group a.
        left = browse(conn, queue)
        conn.rollback()
        assert [(m.payload, m.group_position, m.group_size) for m in left] == [
            ("a2", 1, 2),
            ("a3", 2, 2),
        ]
        again = dq(conn, queue, batch=10)
        assert [m.payload for m in again] == ["a2", "a3"]


@LIVE
def test_a_group_whose_owner_went_away_goes_whole_to_the_next_consumer_after_the_lease(
    admin_user,
):
    queue = grouped_queue(admin_user, "G6")
    enqueue_group(queue, "a1", "a2", "a3")
    with raw() as alice, raw() as bob:
        a = dq(alice, queue, lease_seconds=0.3)
        assert dq(bob, queue) == []
        time.sleep(0.5)
        b = dq(bob, queue, batch=10)
        # The new owner's places and group size go on from what the first owner was handed.
        assert [(m.payload, m.group_position, m.group_size) for m in b] == [
            ("a2", 2, 3),
            ("a3", 3, 3),
        ]
        assert b[-1].last_in_group
        with pytest.raises(engine.EndOfGroup):
            dq(alice, queue, group_token=a[0].group_token)


@LIVE
def test_browse_shows_each_messages_group_and_place(admin_user):
    queue = grouped_queue(admin_user, "G7")
    enqueue_group(queue, "a1", "a2")
    enqueue_group(queue, "b1", "b2", "b3")
    with raw() as conn:
        seen = browse(conn, queue)
    assert [(m.payload, m.group_position, m.group_size, m.last_in_group) for m in seen] == [
        ("a1", 1, 2, False),
        ("a2", 2, 2, True),
        ("b1", 1, 3, False),
        ("b2", 2, 3, False),
        ("b3", 3, 3, True),
    ]
    assert seen[0].transaction_group == seen[1].transaction_group != seen[2].transaction_group


@LIVE
def test_next_transaction_and_group_tokens_need_a_transactional_queue_table(admin_user):
    qt = services.queue_table_create(user=admin_user, name="QT_PLAIN")
    queue = services.queue_create(user=admin_user, name="PLAIN", queue_table=qt)
    with raw() as conn:
        with pytest.raises(engine.InvalidMessage) as err:
            dq(conn, queue, navigation=engine.NEXT_TRANSACTION)
        assert err.value.field == "navigation"
        conn.rollback()
        with pytest.raises(engine.InvalidMessage) as err:
            dq(conn, queue, group_token="2b0a4c8e-6f33-4a43-9a0e-0c5d3a0c4c11")
        assert err.value.field == "group_token"


@LIVE
def test_a_crash_during_a_grouped_enqueue_leaves_no_part_of_the_group(admin_user):
    queue = grouped_queue(admin_user, "G8")
    enqueue_group(queue, "whole1", "whole2")
    victim = raw()
    pid = victim.info.backend_pid
    q = info(victim, queue)
    engine.enqueue(victim, q, [msg("half1")])
    engine.enqueue(victim, q, [msg("half2")])
    with raw() as killer:
        killer.execute("SELECT pg_terminate_backend(%s)", (pid,))
        killer.commit()
    with pytest.raises(psycopg.OperationalError):
        victim.execute("SELECT 1")
    victim.close()
    with raw() as conn:
        assert [m.payload for m in browse(conn, queue)] == ["whole1", "whole2"]
        stored = conn.execute(
            "SELECT count(*) FROM aq_message WHERE queue_id = %s", (queue.pk,)
        ).fetchone()[0]
        assert stored == 2


def _consume(queue, seed: int, consumer: str | None = None) -> list[tuple[int, int, dict]]:
    """Dequeue until nothing is left, one transaction per call, following the group token."""
    rnd = random.Random(seed)
    seen: list[tuple[int, int, dict]] = []
    token = None
    with raw() as conn:
        q = info(conn, queue)
        while True:
            try:
                got = engine.dequeue(
                    conn, q, batch=rnd.choice([1, 2, 3]), group_token=token, consumer=consumer
                )
            except engine.EndOfGroup:
                conn.rollback()
                token = None
                continue
            if not got:
                conn.rollback()
                if token is not None:
                    token = None
                    continue
                if consumer:
                    sql = (
                        "SELECT count(*) FROM aq_message_consumer mc JOIN queues_subscriber s "
                        "ON s.id = mc.subscriber_id WHERE s.queue_id = %s AND s.name = %s"
                    )
                    left = conn.execute(sql, (q.id, consumer)).fetchone()[0]
                else:
                    sql = "SELECT count(*) FROM aq_message WHERE queue_id = %s"
                    left = conn.execute(sql, (q.id,)).fetchone()[0]
                conn.rollback()
                if not left:
                    return seen
                time.sleep(0.01)  # another consumer owns what is left
                continue
            conn.commit()
            seen.extend((m.transaction_group, m.group_position, m.payload) for m in got)
            token = None if got[-1].last_in_group else got[-1].group_token


def _fill(queue, groups: int, seed: int = 7) -> dict[int, int]:
    """``groups`` transactions of 1 to 6 messages; returns group number → size."""
    rnd = random.Random(seed)
    sizes = {g: rnd.randint(1, 6) for g in range(groups)}
    with raw() as conn:
        q = info(conn, queue)
        for g, size in sizes.items():
            engine.enqueue(conn, q, [msg({"g": g, "i": i}) for i in range(size)])
            conn.commit()
    return sizes


def _assert_whole_groups(sizes: dict[int, int], per_consumer: list[list]) -> None:
    owners: dict[int, set[int]] = defaultdict(set)
    order: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for c, seen in enumerate(per_consumer):
        for txn_group, position, payload in seen:
            owners[payload["g"]].add(c)
            order[payload["g"]].append((position, payload["i"]))
            assert txn_group is not None
    assert sum(len(s) for s in per_consumer) == sum(sizes.values())
    assert {g for g, who in owners.items() if len(who) != 1} == set()
    for g, size in sizes.items():
        assert order[g] == [(i + 1, i) for i in range(size)], g


@LIVE
def test_four_concurrent_consumers_each_get_whole_groups_in_order(admin_user):
    queue = grouped_queue(admin_user, "GCONC")
    sizes = _fill(queue, 150)
    per_consumer = run_threads(*[(lambda s=s: _consume(queue, s)) for s in range(4)], timeout=120)
    _assert_whole_groups(sizes, per_consumer)
    assert sum(1 for seen in per_consumer if seen) >= 2


@LIVE
def test_each_subscriber_of_a_multi_consumer_queue_gets_whole_groups(admin_user):
    queue = grouped_queue(admin_user, "GMULTI", multiple_consumers=True)
    for name in ("RED", "BLUE"):
        services.subscriber_add(user=admin_user, queue=queue, name=name)
    sizes = _fill(queue, 60)
    per_session = run_threads(
        *[(lambda s=s, c=c: _consume(queue, s, c)) for s in range(2) for c in ("RED", "BLUE")],
        timeout=120,
    )
    # Sessions 0 and 2 are RED's, 1 and 3 BLUE's: each subscriber sees every group once, whole.
    _assert_whole_groups(sizes, [per_session[0], per_session[2]])
    _assert_whole_groups(sizes, [per_session[1], per_session[3]])
