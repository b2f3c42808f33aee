"""The Spark writer's part transaction (jobs/spark/sink.py), driven directly with psycopg: the
same part written twice or by two attempts at once lands once; commit-time, multi-consumer and
retaining queues get what an enqueue would give them; failed copies never collide or duplicate.
No Spark here: these are the writer's promises, cheap to check one by one."""

from __future__ import annotations

import threading

import psycopg
import pytest

from jobs import services, spark_submit
from jobs.spark.sink import Transformed, write_part
from queues import engine
from queues import services as qs
from queues.models import Message, MessageConsumer

from .helpers import enqueue

pytestmark = pytest.mark.django_db(transaction=True)


def spec_for(**kw) -> dict:
    """A job's spec as its first attempt freezes it (the task sends it to Spark)."""
    kw.setdefault("user", None)
    job = services.spark_job_submit(**kw)
    spec = spark_submit.freeze(spark_submit.build_spec(job))
    return {**spec, "attempt": 1}


def connect() -> psycopg.Connection:
    return psycopg.connect(qs.conninfo())


def sources_at(queue) -> list[int]:
    return sorted(Message.objects.filter(queue=queue).values_list("bulk_source_id", flat=True))


def test_a_part_written_twice_lands_once(sc_table, make_queue):
    src, dst = make_queue("SRC", sc_table), make_queue("DST", sc_table)
    ids = enqueue(src, [{"n": i} for i in range(10)])
    spec = spec_for(source_queue=src, destinations=[dst], mode="MOVE")
    with connect() as conn:
        first = write_part(conn, spec, 0, ids, [[dst.pk]] * 10)
        again = write_part(conn, spec, 0, ids, [[dst.pk]] * 10)
    assert (first.skipped, first.propagated, first.read) == (False, {"DST": 10}, 10)
    assert again.skipped
    assert sources_at(dst) == ids and not Message.objects.filter(queue=src).exists()


def test_two_attempts_of_one_part_at_once_write_it_once(sc_table, make_queue):
    src, dst = make_queue("SRC", sc_table), make_queue("DST", sc_table)
    ids = enqueue(src, [{"n": i} for i in range(2_000)])
    spec = spec_for(source_queue=src, destinations=[dst], mode="COPY")
    results, barrier = [], threading.Barrier(2)

    def attempt() -> None:
        with connect() as conn:
            barrier.wait()
            results.append(write_part(conn, spec, 0, ids, [[dst.pk]] * len(ids)))

    threads = [threading.Thread(target=attempt) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(r.skipped for r in results) == [False, True]
    assert sources_at(dst) == ids


def test_a_commit_time_destination_numbers_the_part_once(admin_user, sc_table, make_queue):
    ct = qs.queue_table_create(user=admin_user, name="QT_CT", sort_order="commit_time")
    src, dst = make_queue("SRC", sc_table), make_queue("DST", ct)
    ids = enqueue(src, [{"n": i} for i in range(5)])
    later = enqueue(dst, [{"n": "before"}])
    spec = spec_for(source_queue=src, destinations=[dst])
    with connect() as conn:
        write_part(conn, spec, 0, ids, [[dst.pk]] * 5)
    enqueue(dst, [{"n": "after"}])
    rows = list(Message.objects.filter(queue=dst).order_by("commit_seq", "id"))
    assert [m.payload["n"] for m in rows] == ["before", 0, 1, 2, 3, 4, "after"]
    assert len({m.commit_seq for m in rows[1:6]}) == 1
    assert rows[0].id == later[0] and rows[0].commit_seq < rows[1].commit_seq < rows[6].commit_seq


def test_a_multi_consumer_destination_applies_its_subscribers_rules(
    admin_user, mc_table, sc_table, make_queue
):
    src, dst = make_queue("SRC", sc_table), make_queue("DST", mc_table)
    qs.subscriber_add(user=admin_user, queue=dst, name="BIG", rule=":msg.n >= 5")
    qs.subscriber_add(user=admin_user, queue=dst, name="ODD", rule=":msg.n IN (1, 3, 5, 7)")
    ids = enqueue(src, [{"n": i} for i in range(8)])
    spec = spec_for(source_queue=src, destinations=[dst], mode="MOVE")
    with connect() as conn:
        res = write_part(conn, spec, 0, ids, [[dst.pk]] * 8)
    # 0, 2 and 4 suit nobody: they go to the source's exception queue, nothing is lost.
    assert res.propagated == {"DST": 5} and res.exceptions == 3
    got = {
        m.payload["n"]: sorted(c.subscriber.name for c in m.consumers.all())
        for m in Message.objects.filter(queue=dst).prefetch_related("consumers__subscriber")
    }
    assert got == {1: ["ODD"], 3: ["ODD"], 5: ["BIG", "ODD"], 6: ["BIG"], 7: ["BIG", "ODD"]}
    assert all(
        m.pending_consumers == len(got[m.payload["n"]]) for m in Message.objects.filter(queue=dst)
    )
    exc = Message.objects.filter(queue=src.exception_queue)
    assert sorted(m.payload["n"] for m in exc) == [0, 2, 4]
    assert all("no subscriber takes it" in m.exception_reason for m in exc)


def test_a_move_keeps_what_the_source_retains(admin_user, sc_table, make_queue):
    src = qs.queue_create(user=admin_user, name="SRC", queue_table=sc_table, retention_time=3600)
    dst = make_queue("DST", sc_table)
    ids = enqueue(src, [{"n": i} for i in range(4)])
    spec = spec_for(source_queue=src, destinations=[dst], mode="MOVE")
    with connect() as conn:
        res = write_part(conn, spec, 0, ids, [[dst.pk], [dst.pk], [], [dst.pk]])
    assert (res.propagated, res.discarded, res.gone) == ({"DST": 3}, 1, 0)
    states = dict(Message.objects.filter(queue=src).values_list("id", "state"))
    assert states == {
        ids[0]: "PROCESSED",
        ids[1]: "PROCESSED",
        ids[2]: "READY",
        ids[3]: "PROCESSED",
    }


def test_a_message_taken_in_between_is_gone_not_copied(sc_table, make_queue):
    src, dst = make_queue("SRC", sc_table), make_queue("DST", sc_table)
    ids = enqueue(src, [{"n": i} for i in range(3)])
    spec = spec_for(source_queue=src, destinations=[dst], mode="MOVE")
    with connect() as conn:
        (taken,) = engine.dequeue(conn, engine.queue_info(conn, src.pk), mode=engine.REMOVE)
    failed = Transformed(id=ids[0], dest=dst.pk, error="boom")
    with connect() as conn:
        res = write_part(conn, spec, 0, ids, [[dst.pk]] * 3, [failed])
    assert taken.id == ids[0]
    assert (res.gone, res.exceptions, res.propagated) == (1, 0, {"DST": 2})
    assert sources_at(dst) == ids[1:]
    assert not Message.objects.filter(queue=src.exception_queue).exists()


def test_copies_failing_in_one_exception_queue_keep_their_keys_apart(sc_table, make_queue):
    src, d1, d2 = (make_queue(n, sc_table) for n in ("SRC", "D1", "D2"))
    ids = enqueue(src, [{"n": 1}])
    spec = spec_for(source_queue=src, destinations=[d1, d2])
    with connect() as conn:
        write_part(conn, spec, 0, ids, [[d1.pk, d2.pk]])
        copies = list(Message.objects.filter(queue__in=[d1, d2]).values_list("id", flat=True))
        # Both copies fail (too many retries): both land in the table's one exception queue.
        for cid in copies:
            engine.move_to_exception_queue(conn, [cid], "max retries")
        conn.commit()
    assert Message.objects.filter(queue=d1.exception_queue).count() == 2
    assert d1.exception_queue_id == d2.exception_queue_id


def test_a_copy_keeps_failed_messages_at_the_source_only(sc_table, make_queue):
    src, dst = make_queue("SRC", sc_table), make_queue("DST", sc_table)
    ids = enqueue(src, [{"n": 1}, {"n": 2}])
    spec = spec_for(source_queue=src, destinations=[dst], mode="COPY")
    with connect() as conn:
        res = write_part(
            conn, spec, 0, ids, [[dst.pk]] * 2, [Transformed(id=ids[1], dest=dst.pk, error="bad")]
        )
    assert res.exceptions == 1 and "bad" in res.errors[0] and str(ids[1]) in res.errors[0]
    assert sources_at(dst) == ids[:1]
    assert Message.objects.filter(queue=src, state="READY").count() == 2
    assert not Message.objects.filter(queue=src.exception_queue).exists()
    assert not MessageConsumer.objects.exists()
