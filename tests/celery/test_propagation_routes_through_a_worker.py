"""Celery beat opens the windows and a real worker moves the messages, routed by rule sets."""

from __future__ import annotations

import pytest

from jobs import services
from jobs.choices import RunState
from jobs.models import PropagationRun
from queues.models import Message
from tests.celery.helpers import wait_for
from tests.jobs.helpers import enqueue

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]

REGIONS = ["EU", "US", "ASIA", "EU", "LATAM", "US", "EU"]


def _payloads(queue) -> list:
    return list(
        Message.objects.filter(queue=queue, state="READY")
        .order_by("id")
        .values_list("payload", flat=True)
    )


def _held(queue) -> bool:
    return queue.messages.exclude(state="PROCESSED").exists()


def test_beat_and_a_worker_route_messages_by_rule_sets_to_several_destinations(
    celery_procs, admin_user, mc_table, sc_table, make_queue, rule_set
):
    src = make_queue("SRC", mc_table)
    eu, us, rest = (
        make_queue("EU", sc_table),
        make_queue("US", sc_table),
        make_queue("REST", sc_table),
    )
    props = [
        services.propagation_create(
            user=admin_user,
            name="TO_EU",
            source_queue=src,
            destination_queue=eu,
            positive_rule_set=rule_set("EU_RS", ":msg.region = 'EU'"),
        ),
        services.propagation_create(
            user=admin_user,
            name="TO_US",
            source_queue=src,
            destination_queue=us,
            positive_rule_set=rule_set("US_RS", ":msg.region = 'US'"),
        ),
        # Everything the other two take is refused here by a negative rule set.
        services.propagation_create(
            user=admin_user,
            name="TO_REST",
            source_queue=src,
            destination_queue=rest,
            negative_rule_set=rule_set("NOT_EU_US", ":msg.region = 'EU'", ":msg.region = 'US'"),
        ),
    ]
    sent = [{"region": REGIONS[i % len(REGIONS)], "n": i} for i in range(420)]
    enqueue(src, sent)

    celery_procs.worker("route1")
    celery_procs.beat()  # nobody else dispatches in this test

    def expected(pred) -> list:
        return [p for p in sent if pred(p["region"])]

    want = {
        eu.pk: expected(lambda r: r == "EU"),
        us.pk: expected(lambda r: r == "US"),
        rest.pk: expected(lambda r: r not in ("EU", "US")),
    }

    def delivered() -> bool:
        counts = Message.objects.filter(queue__in=[eu, us, rest]).count()
        return counts >= sum(map(len, want.values())) and not _held(src)

    assert wait_for(delivered, 45, interval=0.2), celery_procs.procs[0].log()[-3000:]

    # Exactly these payloads, each once, in the source's order.
    assert _payloads(eu) == want[eu.pk]
    assert _payloads(us) == want[us.pk]
    assert _payloads(rest) == want[rest.pk]
    # The source keeps nothing: every message is consumed by all three (the queue monitor then
    # removes it, retention being 0).
    assert not _held(src)

    worker = celery_procs.procs[0].hostname
    for p in props:
        runs = PropagationRun.objects.filter(propagation=p, started_at__isnull=False)
        assert runs.exists()
        # Beat sent them through the broker; the worker ran them.
        assert {r.worker for r in runs} == {worker}
        assert all(r.task_id for r in runs)
        assert not runs.filter(state=RunState.FAILED).exists()
        assert sum(r.messages for r in runs) == len(sent)
        assert sum(r.propagated for r in runs) == len(want[p.destination_queue_id])
        assert sum(r.discarded for r in runs) == len(sent) - len(want[p.destination_queue_id])
