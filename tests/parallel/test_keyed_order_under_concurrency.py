"""Four producer threads and four consumer threads (each its own connection) over a logical
queue of three partitions: every message is consumed exactly once, and each group key's messages
are consumed in the order they were enqueued (ordered dequeue), even though each message takes
an uneven moment to handle. With AQ_TEST_UNORDERED=1 (plain dequeues) the same check finds
violations: the two consumers of one partition finish each other's groups out of order."""

from __future__ import annotations

import os
import random
import threading
import time
from collections import defaultdict

import pytest
from django.db import connections, transaction

from parallel import services as ps
from parallel.client import LogicalQueueClient
from queues.models import Message

from .conftest import up

# The threads are other connections: data must really commit.
pytestmark = pytest.mark.django_db(transaction=True)

PRODUCERS = 4
KEYS_PER_PRODUCER = 3
PER_KEY = 10
DEADLINE_S = 60
SLOW_SHARE, SLOW_S = 0.1, 0.1  # about 12 slow messages: about 1 s in all
# AQ_TEST_UNORDERED=1 shows the check failing without the ordered dequeue.
ORDERED = os.environ.get("AQ_TEST_UNORDERED") != "1"


def test_four_producers_four_consumers_keep_each_keys_order(role_groups, settings):
    # One beat each, so a lease that outlives the test on a loaded machine: this test is about
    # order, and an instance going DOWN mid-test (15 s by default) would move its partition.
    settings.AQ_INSTANCE_HEARTBEAT_LIMIT_S = 600
    for name in ("n1", "n2", "n3"):
        up(name)
    ps.logical_queue_create(user=None, name="ORDERS", partitions=3)
    total = PRODUCERS * KEYS_PER_PRODUCER * PER_KEY
    produced: list[int] = []
    consumed: list[tuple[int, str, int, int]] = []  # (msgid, key, seq, stamp)
    errors: list[BaseException] = []
    lock = threading.Lock()

    def produce(p: int) -> None:
        try:
            client = LogicalQueueClient("ORDERS", instance=f"n{p % 3 + 1}")
            keys = [f"p{p}-k{k}" for k in range(KEYS_PER_PRODUCER)]
            for seq in range(PER_KEY):
                for key in keys:  # one transaction per message, keys interleaved
                    mid = client.enqueue({"key": key, "seq": seq}, key=key)
                    with lock:
                        produced.append(mid)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    def consume(instance: str, seed: int) -> None:
        try:
            client = LogicalQueueClient("ORDERS", instance=instance)
            jitter = random.Random(seed)
            end = time.monotonic() + DEADLINE_S
            while time.monotonic() < end and not errors:
                with lock:
                    if len(consumed) == total:
                        return
                # The stamp is taken before the commit that releases the partition, so the
                # next consumer of that partition stamps later.
                with transaction.atomic():
                    got = client.dequeue(ordered=ORDERED, batch=1)
                    if got and jitter.random() < SLOW_SHARE:  # now and then a slow message
                        time.sleep(SLOW_S)
                    stamp = time.monotonic_ns()
                for m in got:
                    with lock:
                        consumed.append((m.id, m.payload["key"], m.payload["seq"], stamp))
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    # The producers run concurrently first, then the consumers on the backlog, so that the two
    # consumers of n1's partition really compete for the same groups' messages.
    producers = [threading.Thread(target=produce, args=(p,)) for p in range(PRODUCERS)]
    for t in producers:
        t.start()
    for t in producers:
        t.join(DEADLINE_S)
    threads = [
        threading.Thread(target=consume, args=(n, i))
        for i, n in enumerate(("n1", "n2", "n3", "n1"))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_S + 10)

    assert not errors, errors
    ids = [c[0] for c in consumed]
    assert len(produced) == total
    assert len(ids) == total and len(set(ids)) == total  # exactly once
    assert sorted(ids) == sorted(produced)
    by_key: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for _mid, key, seq, stamp in consumed:
        by_key[key].append((stamp, seq))
    violations = sum(
        1
        for rows in by_key.values()
        for a, b in zip(sorted(rows), sorted(rows)[1:], strict=False)
        if b[1] < a[1]
    )
    assert violations == 0
    assert all(sorted(seq for _s, seq in rows) == list(range(PER_KEY)) for rows in by_key.values())
    # The keys really were spread: more than one partition received messages.
    assert (
        len(
            {
                ps.partition_for(logical_queue=ps.logical_queue_resolve("ORDERS"), key=k).pk
                for k in by_key
            }
        )
        > 1
    )
    assert not Message.objects.exists()
