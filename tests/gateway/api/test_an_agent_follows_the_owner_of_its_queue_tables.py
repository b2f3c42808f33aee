"""An agent's instance affinity (docs/INSTANCES.md, "gateway agents"): CREATE/ALTER_AGENT's
``service`` is validated (400 naming ``service``, nothing written); without one the agent
follows the owner of most of its outbound jobs' queue tables and says which jobs run off their
owner; STARTUP sends the start to the owner's copy of mgw.<AGENT> on the real broker; and a start
reaching another instance is not claimed. The instances are registered by real worker
heartbeats (jobs.services.worker_heartbeat), as a worker's HeartbeatStep writes them."""

from __future__ import annotations

import os

import pytest
import redis
from django.conf import settings
from django.utils import timezone

from core.models import ChangeLogEntry
from gateway import agent as agent_process
from gateway import selectors
from gateway import services as gw
from gateway.models import Agent
from jobs.services import worker_heartbeat
from queues import services as qs
from queues.models import DbaService

AGENT_QUEUE = "mgw.DEFAULT_AGENT"


def _beat(instance: str, *, serves_agent: bool = True) -> None:
    """One heartbeat of a worker of ``instance``; ``serves_agent``: it consumes the agent's
    queue (and so, the worker hook adds it, that instance's copy of it)."""
    queues = ["celery"]
    if serves_agent:
        queues += [AGENT_QUEUE, f"aq.inst.{instance}.{AGENT_QUEUE}"]
    worker_heartbeat(
        hostname=f"w@{instance}",
        pid=os.getpid(),
        queues=queues,
        pool="threads",
        concurrency=2,
        active=[],
        processed=0,
        started_at=timezone.now(),
        instance=instance,
        host=instance,
    )


@pytest.fixture
def two_instances(admin_user, default_agent, foreign_queue):
    """node1 and node2 up; QT_N1 (primary node1) with N1_A, QT_N2 (primary node2) with N2_A and
    N2_B; the AMQP link of DEFAULT_AGENT and its foreign queue OUT_Q."""
    _beat("node1")
    _beat("node2")
    out = {}
    for table, primary, queues in (
        ("QT_N1", "node1", ["N1_A"]),
        ("QT_N2", "node2", ["N2_A", "N2_B"]),
    ):
        qt = qs.queue_table_create(
            user=admin_user, name=table, sort_order="enq_time", primary_instance=primary
        )
        for q in queues:
            out[q] = qs.queue_create(user=admin_user, name=q, queue_table=qt)
    return out


def _job(name: str, source: str) -> None:
    gw.job_create(
        user=None,
        job_name=name,
        propagation_type="OUTBOUND",
        source=source,
        destination="OUT_Q@RABBIT",
    )


def _service(queue: str) -> str:
    return DbaService.objects.get(queue_name=queue).name


def test_a_bad_service_is_a_400_naming_it_and_writes_nothing(admin_api, two_instances):
    before = ChangeLogEntry.objects.count()
    for bad in ("SYS$AQADMIN.NO_SUCH_QUEUE", ["x"], {"a": 1}):
        r = admin_api.post(
            "/api/gateway/agents/", {"agent_name": "EDGE", "service": bad}, format="json"
        )
        assert r.status_code == 400 and "service" in r.json(), (bad, r.content)
    r = admin_api.patch(
        "/api/gateway/agents/DEFAULT_AGENT/", {"service": "SYS$NOBODY.N1_A"}, format="json"
    )
    assert r.status_code == 400 and "Unknown service" in r.json()["service"][0]
    assert not Agent.objects.filter(name="EDGE").exists()
    assert Agent.objects.get(name="DEFAULT_AGENT").service == ""
    assert ChangeLogEntry.objects.count() == before


def test_a_service_is_stored_as_dba_services_spells_it_and_can_be_cleared(admin_api, two_instances):
    service = _service("N1_A")
    r = admin_api.post(
        "/api/gateway/agents/",
        {"agent_name": "EDGE", "service": service.lower()},
        format="json",
    )
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["service"] == service
    assert body["placement"]["affinity"] == "SERVICE"
    assert body["placement"]["owner_instance"] == "node1"
    r = admin_api.patch("/api/gateway/agents/EDGE/", {"service": None}, format="json")
    assert r.status_code == 200 and r.json()["service"] == ""
    assert r.json()["placement"]["affinity"] == ""


def test_without_a_service_the_agent_follows_most_of_its_outbound_jobs(
    admin_api, admin_client, two_instances
):
    agent = Agent.objects.get(name="DEFAULT_AGENT")
    # No outbound job: no affinity, any instance.
    p = selectors.agent_placement(agent)
    assert (p.affinity, p.run_instance, p.warnings) == ("", None, [])

    # One job each side: a tie goes to the lowest queue table id (QT_N1, created first).
    _job("J_N1", "N1_A")
    _job("J_N2A", "N2_A")
    p = selectors.agent_placement(agent)
    assert (p.affinity, p.owner_instance, p.run_instance) == ("OUTBOUND_JOBS", "node1", "node1")
    assert p.off_owner_jobs == ["J_N2A"]

    # Two of three read node2's queue table: node2 it is, and J_N1 runs off its owner.
    _job("J_N2B", "N2_B")
    p = selectors.agent_placement(agent)
    assert (p.owner_instance, p.run_instance, p.off_owner_jobs) == ("node2", "node2", ["J_N1"])
    shown = admin_api.get("/api/gateway/agents/DEFAULT_AGENT/").json()["placement"]
    assert shown["run_instance"] == "node2" and shown["off_owner_jobs"] == ["J_N1"]
    assert any("Runs off its owner" in w and "J_N1" in w for w in shown["warnings"])
    page = admin_client.get(f"/gateway/agents/{agent.pk}/").content.decode()
    assert "Runs off its owner" in page and "J_N1" in page and "owner: node2" in page

    # A service overrides the jobs.
    gw.agent_alter(user=None, agent=agent, service=_service("N1_A"))
    p = selectors.agent_placement(Agent.objects.get(pk=agent.pk))
    assert (p.affinity, p.run_instance, p.off_owner_jobs) == (
        "SERVICE",
        "node1",
        ["J_N2A", "J_N2B"],
    )


def test_startup_goes_to_the_owners_copy_of_the_agents_queue(
    two_instances, default_agent, django_capture_on_commit_callbacks
):
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    keys = [AGENT_QUEUE, f"aq.inst.node1.{AGENT_QUEUE}", f"aq.inst.node2.{AGENT_QUEUE}"]
    broker.delete(*keys)
    _job("J_N2A", "N2_A")
    try:
        with django_capture_on_commit_callbacks(execute=True):
            gw.agent_startup(user=None, agent=default_agent)
        assert [broker.llen(k) for k in keys] == [0, 0, 1]
        gw.agent_shutdown(user=None, agent=default_agent)

        # node2 up but none of its workers serves the agent: the shared queue, as the queue
        # monitor falls back.
        _beat("node2", serves_agent=False)
        assert selectors.agent_place(default_agent.pk) is None
        with django_capture_on_commit_callbacks(execute=True):
            gw.agent_startup(user=None, agent=default_agent)
        assert [broker.llen(k) for k in keys] == [1, 0, 1]
    finally:
        broker.delete(*keys)


@pytest.mark.django_db(transaction=True)  # the agent process reads on its own connection
def test_a_start_reaching_an_instance_that_does_not_own_the_agent_is_not_claimed(
    two_instances, default_agent
):
    _job("J_N2A", "N2_A")
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    gw.agent_startup(user=None, agent=default_agent)
    broker.delete(f"aq.inst.node2.{AGENT_QUEUE}")  # no worker here: the test plays node1's
    token = str(Agent.objects.get(pk=default_agent.pk).start_token)
    # The worker of node1 takes it (late, or misrouted): it does nothing, and the start is due
    # again at once for the reaper to send to node2.
    assert (
        agent_process.run(default_agent.pk, token, aq_instance="node1")
        == "not placed on instance node1"
    )
    a = Agent.objects.get(pk=default_agent.pk)
    assert (a.status, str(a.start_token), a.instance_name) == ("START_SCHEDULED", token, "")
    assert a.restart_at <= timezone.now()


def test_a_restart_waits_while_its_owner_instance_has_missed_heartbeats(
    two_instances, default_agent, django_capture_on_commit_callbacks
):
    """The restart after a kill is not sent into the dead owner's queue (nobody would read it
    until START_RESEND_S re-sent it): while node2's workers have missed two heartbeats, yet are
    still counted live, it stays due; once node2 beats again it goes there."""
    from jobs.models import Worker

    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    keys = [AGENT_QUEUE, f"aq.inst.node1.{AGENT_QUEUE}", f"aq.inst.node2.{AGENT_QUEUE}"]
    broker.delete(*keys)
    _job("J_N2A", "N2_A")
    try:
        with django_capture_on_commit_callbacks(execute=True):
            gw.agent_startup(user=None, agent=default_agent)
        broker.delete(*keys)
        Agent.objects.filter(pk=default_agent.pk).update(restart_at=timezone.now())  # due now
        quiet = timezone.now() - timezone.timedelta(seconds=2.5 * settings.AQ_WORKER_HEARTBEAT_S)
        Worker.objects.filter(instance="node2").update(last_seen=quiet)
        assert selectors.agent_place(default_agent.pk) == "node2"  # still counted live
        token = Agent.objects.get(pk=default_agent.pk).start_token

        with django_capture_on_commit_callbacks(execute=True):
            assert gw.agents_reap()["held"] == 1
        assert [broker.llen(k) for k in keys] == [0, 0, 0]
        assert Agent.objects.get(pk=default_agent.pk).start_token == token

        _beat("node2")
        with django_capture_on_commit_callbacks(execute=True):
            assert gw.agents_reap() == {"died": 0, "restarted": 1, "held": 0}
        assert [broker.llen(k) for k in keys] == [0, 0, 1]
    finally:
        broker.delete(*keys)


def test_a_service_that_stopped_resolving_does_not_block_other_edits(admin_api, two_instances):
    service = _service("N1_A")
    assert (
        admin_api.post(
            "/api/gateway/agents/", {"agent_name": "EDGE", "service": service}, format="json"
        ).status_code
        == 201
    )
    qs.queue_delete(user=None, queue=two_instances["N1_A"])  # its service names no queue now
    # The form sends every field back: the same service, another max_threads.
    r = admin_api.patch(
        "/api/gateway/agents/EDGE/", {"service": service, "max_threads": 2}, format="json"
    )
    assert r.status_code == 200, r.content
    assert (r.json()["service"], r.json()["max_threads"]) == (service, 2)
    # A new value is still checked.
    r = admin_api.patch("/api/gateway/agents/EDGE/", {"service": "NOPE"}, format="json")
    assert r.status_code == 400 and "service" in r.json()
