"""The queue monitor: delayed messages become READY when due, expired ones move to the exception
queue, processed ones go after retention. Idempotent, and safe with two monitors at once."""

from __future__ import annotations

import time

from queues import engine, services
from queues.models import Message

from .helpers import LIVE, barrier, make_queue, msg, payloads, put, row, run_threads, take


def exq_of(queue):
    queue.refresh_from_db()
    return queue.exception_queue


@LIVE
def test_a_delayed_message_waits_until_due_then_the_monitor_makes_it_ready(admin_user):
    queue = make_queue(admin_user, "DELAYQ")
    [mid] = put(queue, "later", user=admin_user, delay=1.0)
    put(queue, "now", user=admin_user)
    assert row(mid).state == "WAITING"
    assert payloads(take(queue, user=admin_user, mode=engine.BROWSE, batch=10)) == ["now"]
    assert payloads(take(queue, user=admin_user, batch=10)) == ["now"]
    assert services.queue_monitor_run().made_ready == 0
    assert row(mid).state == "WAITING"
    time.sleep(1.2)
    assert services.queue_monitor_run().made_ready == 1
    assert row(mid).state == "READY"
    assert payloads(take(queue, user=admin_user)) == ["later"]


@LIVE
def test_an_expired_message_moves_to_the_exception_queue_with_state_expired(admin_user):
    queue = make_queue(admin_user, "EXPQ")
    [mid] = put(queue, "stale", user=admin_user, expiration=1.0)
    [keep] = put(queue, "fresh", user=admin_user, expiration=60)
    assert services.queue_monitor_run().expired == 0
    time.sleep(1.2)
    assert services.queue_monitor_run().expired == 1
    moved = row(mid)
    assert moved.queue_id == exq_of(queue).pk
    assert moved.state == "EXPIRED"
    assert moved.exception_reason == engine.REASON_EXPIRED
    assert moved.original_queue_id == queue.pk
    assert row(keep).state == "READY"
    assert [m.id for m in take(queue, user=admin_user, batch=10)] == [keep]


@LIVE
def test_expiration_counts_from_when_a_delayed_message_becomes_ready(admin_user):
    queue = make_queue(admin_user, "EXPQ")
    [mid] = put(queue, "m", user=admin_user, delay=0.3, expiration=30)
    time.sleep(0.5)
    report = services.queue_monitor_run()
    assert (report.made_ready, report.expired) == (1, 0)
    assert row(mid).state == "READY"


@LIVE
def test_a_leased_message_is_not_expired_under_its_holder(admin_user):
    queue = make_queue(admin_user, "EXPQ")
    [mid] = put(queue, "m", user=admin_user, expiration=0.2)
    [leased] = take(queue, user=admin_user, mode=engine.LOCKED, lease_seconds=60)
    time.sleep(0.4)
    assert services.queue_monitor_run().expired == 0
    services.message_ack(user=admin_user, queue=queue, msgid=mid, lock_token=str(leased.lock_token))
    assert not Message.objects.filter(pk=mid).exists()


@LIVE
def test_an_expired_multi_consumer_message_can_be_replayed_to_the_subscribers_still_owed_it(
    admin_user,
):
    queue = make_queue(admin_user, "EXPMC", multiple_consumers=True)
    services.subscriber_add(user=admin_user, queue=queue, name="A")
    services.subscriber_add(user=admin_user, queue=queue, name="B")
    [mid] = put(queue, "m", user=admin_user, expiration=0.3)
    take(queue, user=admin_user, consumer_name="A")
    time.sleep(0.5)
    assert services.queue_monitor_run().expired == 1
    assert take(queue, user=admin_user, consumer_name="B") == []
    services.exception_queue_replay(user=admin_user, queue=exq_of(queue), ids=[mid])
    assert take(queue, user=admin_user, consumer_name="A") == []
    assert payloads(take(queue, user=admin_user, consumer_name="B")) == ["m"]
    assert row(mid).state == "PROCESSED"


@LIVE
def test_the_monitor_is_idempotent(admin_user):
    queue = make_queue(admin_user, "IDEM", retention_time=0.1)
    put(queue, "d", user=admin_user, delay=0.2)
    put(queue, "e", user=admin_user, expiration=0.2)
    [p] = put(queue, "p", user=admin_user)
    take(queue, user=admin_user, msgid=p)
    time.sleep(0.4)
    first = services.queue_monitor_run().as_dict()
    assert first == {
        "made_ready": 1,
        "expired": 1,
        "leases_released": 0,
        "removed": 1,
        "spilled": 0,
    }
    second = services.queue_monitor_run().as_dict()
    assert second == {
        "made_ready": 0,
        "expired": 0,
        "leases_released": 0,
        "removed": 0,
        "spilled": 0,
    }


@LIVE
def test_two_monitors_running_at_once_share_the_work_without_doing_any_twice(admin_user, settings):
    queue = make_queue(admin_user, "TWOMON", retention_time=0.1)
    n = 300
    delayed = put(queue, *range(n), user=admin_user, delay=0.3)
    expiring = put(queue, *range(n), user=admin_user, expiration=0.3)
    leased = put(queue, *range(n), user=admin_user, priority=9)
    done = put(queue, *range(n), user=admin_user)
    buffered = services.message_enqueue(
        user=admin_user, queue=queue, messages=[msg(i) for i in range(n)], delivery_mode="BUFFERED"
    )
    settings.AQ_BUFFER_SPILL_AFTER_S = 0  # every buffered message is due to spill
    # Lease the third group briefly, and mark the fourth consumed (kept PROCESSED by retention).
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(
            "UPDATE aq_message SET locked_until = now() + interval '0.3 seconds', "
            "lock_token = gen_random_uuid() WHERE id = ANY(%s)",
            [leased],
        )
        cur.execute(
            "UPDATE aq_message SET state = 'PROCESSED', processed_at = now() WHERE id = ANY(%s)",
            [done],
        )
    time.sleep(0.6)
    start = barrier(2)

    def monitor() -> dict[str, int]:
        start.wait()
        return services.queue_monitor_run().as_dict()

    a, b = run_threads(monitor, monitor)
    total = {k: a[k] + b[k] for k in a}
    assert total == {
        "made_ready": n,
        "expired": n,
        "leases_released": n,
        "removed": n,
        "spilled": n,
    }
    assert Message.objects.filter(queue=exq_of(queue)).count() == n
    assert set(Message.objects.filter(pk__in=delayed).values_list("state", flat=True)) == {"READY"}
    assert set(Message.objects.filter(pk__in=leased).values_list("attempts", flat=True)) == {1}
    assert not Message.objects.filter(pk__in=done).exists()
    assert len(expiring) == n
    assert set(
        Message.objects.filter(pk__in=buffered).values_list("delivery_mode", "in_buffer")
    ) == {("BUFFERED", False)}
    again = services.queue_monitor_run().as_dict()
    assert again == {
        "made_ready": 0,
        "expired": 0,
        "leases_released": 0,
        "removed": 0,
        "spilled": 0,
    }
