"""Two instances on loopback (real Celery workers with AQ_INSTANCE_NAME node1 and node2, both
serving mgw.DEFAULT_AGENT) and an outbound job from a queue whose queue table has primary node1,
secondary node2, to a real Redis stream (with the link's outbound log, exactly once):

(a) the agent runs on node1's worker only, every message reaches the stream once;
(b) SIGKILL of node1's worker while messages flow: ownership moves to node2, the agent restarts
    there and the rest arrives, none lost, none twice;
(c) node1 back: ownership returns, node2's agent ends (owner_moved) and node1's takes over,
    never both at once.

Which instance ran each agent session is read from the agent's log (its start line names the
worker and its instance), and the sessions never overlap (each start after the previous end)."""

from __future__ import annotations

import json
import re
import signal
import uuid
from collections import Counter

import pytest
import redis

from gateway import services as gw
from gateway.models import AgentLogLine
from queues import services as qs
from queues.models import Message, QueueTable
from tests.gateway.runtime.helpers import LINKS, wait_for
from tests.jobs.helpers import enqueue

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]

LIMIT_S = 5.0  # the instances' heartbeat limit: a killed one is DOWN after it
BOUND_S = LIMIT_S + 30  # kill → DOWN → reaper → restart on node2, on a loaded machine
AGENT_QUEUE = "mgw.DEFAULT_AGENT"


def _owner(qt: QueueTable) -> str | None:
    qt.refresh_from_db(fields=["owner_instance"])
    return qt.owner_instance.name if qt.owner_instance_id else None


def _sessions(agent) -> list[tuple[str, str]]:
    """(instance, how it ended) of each agent session, oldest first, from the agent's log."""
    out = []
    for line in AgentLogLine.objects.filter(agent=agent).order_by("id"):
        if m := re.search(r"starting on \S+, instance (\S+) \(pid", line.text):
            out.append([m.group(1), ""])
        elif (m := re.fullmatch(r"agent stopped \((\w+)\)", line.text)) and out:
            out[-1][1] = m.group(1)
    return [tuple(s) for s in out]


def test_an_agent_sends_from_its_owner_instance_and_follows_it(
    gateway, foreign, celery_procs, settings
):
    # START_RESEND_S stays at its default (60 s, past BOUND_S): the restart after the kill must
    # not be sent into the dead instance's queue, where only a re-send would rescue it. Worker
    # heartbeats every 1 s keep a killed worker "live" (three beats) past the agent's death
    # (STALE_S 2 s) and restart delay (0.5 s), as the defaults do (5 s beats, 10 s + 5 s).
    assert settings.MGW["START_RESEND_S"] >= 60
    celery_procs.env["AQ_WORKER_HEARTBEAT_S"] = "1.0"
    settings.AQ_WORKER_HEARTBEAT_S = 1.0

    def node(proc: str, name: str):
        env = {"AQ_INSTANCE_NAME": name, "AQ_INSTANCE_HEARTBEAT_LIMIT_S": str(LIMIT_S)}
        return celery_procs.worker_on(proc, AGENT_QUEUE, concurrency=3, env=env)

    w1, w2 = node("n1", "node1"), node("n2", "node2")
    for w, name in ((w1, "node1"), (w2, "node2")):
        row = w.wait_registered()
        # Each worker serves the agent's queue and its instance's own copy of it.
        assert row.instance == name
        assert {AGENT_QUEUE, f"aq.inst.{name}.{AGENT_QUEUE}"} <= set(row.queues), row.queues
    qt = qs.queue_table_create(
        user=None,
        name="QT_MGW_OWN",
        sort_order="enq_time",
        primary_instance="node1",
        secondary_instance="node2",
    )
    assert _owner(qt) == "node1"
    src = qs.queue_create(user=None, name="MGW_OWN_OUT", queue_table=qt)
    link = gateway.link("REDIS", outbound_log_queue=f"mgwt.log.{uuid.uuid4().hex[:8]}")
    stream = foreign("REDIS")
    gw.foreign_queue_register(user=None, name="BUS", link=link, provider_queue=stream)
    gw.job_create(
        user=None,
        job_name="JOUT",
        propagation_type="OUTBOUND",
        source=src.name,
        destination=f"BUS@{link.name}",
        poll_interval=0.2,
        options={"MsgBatchSize": "5"},  # many small batches: the kill lands mid-flow
    )
    bus = redis.Redis(port=LINKS["REDIS"]["port"], db=LINKS["REDIS"]["db"])
    total = 0

    def add(n: int) -> None:
        nonlocal total
        for start in range(total, total + n, 500):
            enqueue(src, [{"id": i} for i in range(start, min(start + 500, total + n))])
        total += n

    def at_bus() -> Counter:
        return Counter(json.loads(fields[b"body"])["id"] for _, fields in bus.xrange(stream))

    def arrived() -> int:
        return bus.xlen(stream)

    def drained() -> bool:
        return arrived() >= total and not Message.objects.filter(queue=src).exists()

    try:
        # (a) The start goes to node1's copy of the queue; only node1's worker sends.
        agent = gateway.start()
        assert agent.instance_name == "node1" and agent.instance.startswith("n1@"), (
            agent.instance_name,
            agent.instance,
        )
        add(200)
        assert wait_for(drained, 30), f"{arrived()} of {total}; log:\n{w1.log()[-3000:]}"
        assert at_bus() == Counter(range(total))
        assert _sessions(agent) == [("node1", "")]
        # node2's worker never got a start task (node1's did).
        assert "gateway.tasks.agent_run[" in w1.log()
        assert "gateway.tasks.agent_run[" not in w2.log()

        # (b) SIGKILL node1's worker while messages flow: the agent restarts on node2.
        add(3000)
        assert wait_for(lambda: arrived() >= 400, 30, interval=0.01)
        w1.kill(signal.SIGKILL)
        assert arrived() < total, "all sent before the kill: nothing to fail over"
        assert wait_for(lambda: _owner(qt) == "node2", BOUND_S, interval=0.05), _owner(qt)
        assert wait_for(
            lambda: (a := gateway.agent()).status == "RUNNING" and a.instance_name == "node2",
            BOUND_S,
        ), (gateway.agent().status, gateway.agent().instance_name, w2.log()[-3000:])
        assert wait_for(drained, 90), f"{arrived()} of {total}; log:\n{w2.log()[-3000:]}"
        assert at_bus() == Counter(range(total)), "a message was lost or sent twice"
        sessions = _sessions(agent)
        assert sessions[0][0] == "node1" and {s[0] for s in sessions[1:]} == {"node2"}, sessions

        # (c) node1 comes back: ownership returns, node2's agent lets go, node1 runs it.
        w1b = node("n1b", "node1")
        w1b.wait_registered()
        assert wait_for(lambda: _owner(qt) == "node1", BOUND_S, interval=0.05)
        assert wait_for(
            lambda: (a := gateway.agent()).status == "RUNNING" and a.instance_name == "node1",
            BOUND_S,
        ), (gateway.agent().status, gateway.agent().instance_name, w1b.log()[-3000:])
        sessions = _sessions(agent)
        assert sessions[-2] == ("node2", "owner_moved") and sessions[-1] == ("node1", ""), sessions
        add(300)
        assert wait_for(drained, 30), f"{arrived()} of {total}; log:\n{w1b.log()[-3000:]}"
        assert at_bus() == Counter(range(total))
        assert _sessions(agent)[-1] == ("node1", "")
        # Never both at once: node2's session ended before node1's began.
        lines = AgentLogLine.objects.filter(agent=agent).order_by("id")
        ended = lines.filter(text="agent stopped (owner_moved)").last()
        began = lines.filter(text__contains="instance node1 (pid").last()
        assert ended is not None and began is not None and ended.at < began.at
    finally:
        bus.delete(link.outbound_log_queue)
