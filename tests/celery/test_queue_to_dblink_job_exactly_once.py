"""A queue-to-dblink job (two propagations from one source over one link) run by real Celery
workers against the private second PostgreSQL: the worker is SIGKILLed between the remote
commit and the local one, and still each message arrives once in each queue whose
propagation's rules take it, having crossed once (one receipt per message under the job's
stream, SOURCE@LINK); the receipts are pruned afterwards."""

from __future__ import annotations

import uuid

import pytest

from jobs import services
from jobs.models import PropagationRun
from queues.models import MessageConsumer
from sites import services as site_services
from tests.celery.helpers import wait_for
from tests.jobs.helpers import enqueue
from tests.sites.remote_queues import remote_payloads, remote_queues, remote_receipts

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


def test_a_killed_worker_leaves_each_message_once_in_each_queue_that_takes_it(
    celery_procs, admin_user, site, mc_table, make_queue, rule_set, tmp_path
):
    remote_queues(site)
    with site.admin("site_b") as conn:
        conn.execute("DELETE FROM aq_propagation_receipt")
    site_services.database_link_create(user=admin_user, name="SITE_B", **site.link_fields())
    src = make_queue("SRC", mc_table)
    marker = tmp_path / "killed"
    celery_procs.configure(AQ_PROPAGATION_BATCH=4)
    celery_procs.env["AQ_TEST_KILL_AFTER_REMOTE_COMMIT"] = str(marker)
    a = services.propagation_create(
        user=admin_user,
        name="TO_A",
        source_queue=src,
        destination_queue="REMOTE_A@SITE_B",
        queue_to_queue=False,
        positive_rule_set=rule_set("EVEN", ":msg.n IN (0, 2, 4, 6, 8)"),
    )
    b = services.propagation_create(
        user=admin_user,
        name="TO_B",
        source_queue=src,
        destination_queue="REMOTE_B@SITE_B",
        queue_to_queue=False,
    )
    tag = uuid.uuid4().hex
    enqueue(src, [{"tag": tag, "n": n} for n in range(10)])
    held = lambda: MessageConsumer.objects.filter(  # noqa: E731
        subscriber_id__in=[a.subscriber_id, b.subscriber_id]
    ).count()

    w1 = celery_procs.worker("a")
    w1.wait_registered()
    assert wait_for(lambda: not w1.alive(), 30, drive=True), w1.log()[-3000:]
    w1.kill()
    # The first batch (4 messages) committed there, not here.
    assert marker.exists()
    assert sorted(p["n"] for p in remote_payloads(site, "REMOTE_B", tag)) == [0, 1, 2, 3]
    assert sorted(p["n"] for p in remote_payloads(site, "REMOTE_A", tag)) == [0, 2]
    assert held() == 20

    del celery_procs.env["AQ_TEST_KILL_AFTER_REMOTE_COMMIT"]
    w2 = celery_procs.worker("b")
    w2.wait_registered()
    assert wait_for(lambda: held() == 0, 60, drive=True), w2.log()[-3000:]

    assert sorted(p["n"] for p in remote_payloads(site, "REMOTE_B", tag)) == list(range(10))
    assert sorted(p["n"] for p in remote_payloads(site, "REMOTE_A", tag)) == [0, 2, 4, 6, 8]
    # Runs are the job's, under its first propagation; the killed one was reaped.
    assert not PropagationRun.objects.filter(propagation=b).exists()
    assert PropagationRun.objects.filter(propagation=a, state="FAILED").exists()
    assert wait_for(lambda: remote_receipts(site, "SRC@SITE_B") == 0, 30, drive=True)
