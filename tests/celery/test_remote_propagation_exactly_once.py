"""A propagation to QUEUE@LINK run by real Celery workers against the private second PostgreSQL
(the session ``site`` fixture): every message arrives once at the remote queue even when the
worker is SIGKILLed between the remote commit and the local one (the re-sent batch meets its
receipts there), the receipts are pruned afterwards, and a site that cannot be reached fails the
schedule with the link named (back-off, disabled at max_failures, reset delivers) while a local
propagation of the same source keeps moving."""

from __future__ import annotations

import socket
import uuid

import pytest

from jobs import services
from jobs.models import PropagationRun, PropagationSchedule
from queues.models import MessageConsumer
from sites import services as site_services
from sites.models import DatabaseLink
from tests.celery.helpers import wait_for
from tests.jobs.helpers import enqueue, payloads_at
from tests.sites.remote_queues import remote_payloads, remote_queues, remote_receipts

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def source(site, admin_user, role_groups, mc_table, make_queue):
    """SRC (multi-consumer) here, link SITE_B to site_b, queue REMOTE_IN there."""
    remote_queues(site)
    site_services.database_link_create(user=admin_user, name="SITE_B", **site.link_fields())
    return make_queue("SRC", mc_table)


def _name() -> str:
    return "P" + uuid.uuid4().hex[:12].upper()


def _pending(prop) -> int:
    """The source's copies still kept for the propagation's subscriber."""
    return MessageConsumer.objects.filter(subscriber_id=prop.subscriber_id).count()


def test_a_worker_killed_between_the_two_commits_delivers_each_message_once(
    celery_procs, admin_user, site, source, tmp_path
):
    marker = tmp_path / "killed"
    celery_procs.configure(AQ_PROPAGATION_BATCH=4)
    celery_procs.env["AQ_TEST_KILL_AFTER_REMOTE_COMMIT"] = str(marker)
    name, tag = _name(), uuid.uuid4().hex
    prop = services.propagation_create(
        user=admin_user, name=name, source_queue=source, destination_queue="REMOTE_IN@SITE_B"
    )
    enqueue(source, [{"tag": tag, "n": n} for n in range(10)])

    a = celery_procs.worker("a")
    a.wait_registered()
    assert wait_for(lambda: not a.alive(), 30, drive=True), a.log()[-3000:]
    a.kill()
    # The first batch committed there, not here: 4 copies at the remote, all 10 still here.
    assert marker.exists()
    assert len(remote_payloads(site, "REMOTE_IN", tag)) == 4
    assert _pending(prop) == 10

    del celery_procs.env["AQ_TEST_KILL_AFTER_REMOTE_COMMIT"]
    b = celery_procs.worker("b")
    b.wait_registered()
    assert wait_for(lambda: _pending(prop) == 0, 60, drive=True), b.log()[-3000:]

    arrived = remote_payloads(site, "REMOTE_IN", tag)
    assert sorted(p["n"] for p in arrived) == list(range(10)), arrived
    died = PropagationRun.objects.filter(propagation=prop, state="FAILED").first()
    assert died is not None  # the reaper failed the killed run
    # The receipts go once the source has consumed their messages (the next batch or window).
    assert wait_for(lambda: remote_receipts(site, name) == 0, 30, drive=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_site_fails_the_schedule_naming_the_link_and_blocks_nothing_else(
    celery_procs, admin_user, site, source, sc_table, make_queue
):
    local_dst = make_queue("LOCAL_DST", sc_table)
    name, tag = _name(), uuid.uuid4().hex
    remote = services.propagation_create(
        user=admin_user,
        name=name,
        source_queue=source,
        destination_queue="REMOTE_IN@SITE_B",
        max_failures=3,
    )
    services.propagation_create(
        user=admin_user, name="LOCAL", source_queue=source, destination_queue=local_dst
    )
    # The site goes away: nothing listens on the link's port any more.
    DatabaseLink.objects.filter(name="SITE_B").update(port=_free_port())
    enqueue(source, [{"tag": tag, "n": n} for n in range(3)])

    w = celery_procs.worker("w")
    w.wait_registered()
    sched = lambda: PropagationSchedule.objects.get(propagation=remote)  # noqa: E731
    assert wait_for(lambda: not sched().enabled, 60, drive=True), w.log()[-3000:]

    s = sched()
    assert s.failures == 3
    assert "Database link SITE_B" in s.last_error_msg and "cannot be reached" in s.last_error_msg
    failed = PropagationRun.objects.filter(propagation=remote, state="FAILED")
    assert failed.count() == 3 and all("SITE_B" in r.error for r in failed)
    assert len(payloads_at(local_dst)) == 3  # the local propagation was not held up
    assert _pending(remote) == 3 and remote_payloads(site, "REMOTE_IN", tag) == []

    # The site is back; RESET delivers everything, once.
    DatabaseLink.objects.filter(name="SITE_B").update(port=site.port)
    services.schedule_reset(user=admin_user, propagation=remote)
    assert wait_for(lambda: _pending(remote) == 0, 60, drive=True), w.log()[-3000:]
    assert sorted(p["n"] for p in remote_payloads(site, "REMOTE_IN", tag)) == [0, 1, 2]
    assert sched().failures == 0
