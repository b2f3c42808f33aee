"""The job state machine against a real outage (spec §1.12): the NATS server is stopped while an
outbound job has messages to send, and while an inbound job is removed. Each error is one of the
job's FAILURES, RETRY with MGW's back-off (shortened here), FAILED at the 16th; once the server
is back, RESET_JOB delivers everything, once. A REMOVE_JOB waits DELETE_PENDING until the server
answers and the durable consumer can be deleted."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator

import nats
import pytest

from gateway import aio
from gateway import services as gw
from gateway.models import Job
from queues import engine
from queues import services as qs
from tests.gateway.runtime.helpers import wait_for

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]

NATS_BIN = "/usr/sbin/nats-server"
START = [
    "start-stop-daemon",
    "--start",
    "--oknodo",
    "--background",
    "--exec",
    NATS_BIN,
    "--",
    "-a",
    "127.0.0.1",
    "-p",
    "4222",
    "-js",
    "-sd",
    "/var/lib/nats-server",
    "-l",
    "/var/log/nats-server.log",
]
STOP = ["start-stop-daemon", "--stop", "--oknodo", "--retry", "10", "--exec", NATS_BIN]


def _answers() -> bool:
    """The server greets every client with its INFO line (plain socket: no client retries)."""
    try:
        with socket.create_connection(("127.0.0.1", 4222), timeout=1) as sock:
            sock.settimeout(1)
            return sock.recv(5) == b"INFO "
    except OSError:
        return False


class NatsServer:
    def stop(self) -> None:
        subprocess.run(STOP, check=True, capture_output=True)
        assert wait_for(lambda: not _answers(), 15, reap=False)

    def start(self) -> None:
        subprocess.run(START, check=True, capture_output=True)
        assert wait_for(_answers, 30, reap=False), "nats-server did not come back"


@pytest.fixture
def nats_server() -> Iterator[NatsServer]:
    server = NatsServer()
    try:
        yield server
    finally:
        if not _answers():
            server.start()


def _stream_count(stream: str) -> int:
    async def count() -> int:
        nc = await nats.connect("nats://127.0.0.1:4222")
        info = await nc.jetstream().stream_info(stream)
        await nc.close()
        return info.state.messages

    return aio.run(count())


def test_an_outbound_job_retries_fails_at_16_and_reset_delivers_everything_once(
    gateway, foreign, nats_server
):
    table = qs.queue_table_create(user=None, name="QT_GW", sort_order="enq_time")
    src = qs.queue_create(user=None, name="SRC", queue_table=table)
    subject = foreign("NATS")
    link = gateway.link("NATS")
    gw.foreign_queue_register(user=None, name="BUS", link=link, provider_queue=subject)
    gw.job_create(
        user=None,
        job_name="J",
        propagation_type="OUTBOUND",
        source="SRC",
        destination=f"BUS@{link.name}",
        poll_interval=0.2,
    )
    gateway.worker("w").wait_registered()
    gateway.start()
    qs.message_enqueue(
        user=None, queue=src, messages=[engine.NewMessage(payload={"n": i}) for i in range(50)]
    )
    assert wait_for(lambda: gateway.job("J").propagated_msgs == 50, 30)

    nats_server.stop()
    qs.message_enqueue(
        user=None, queue=src, messages=[engine.NewMessage(payload={"n": i}) for i in range(50, 200)]
    )
    assert wait_for(lambda: gateway.job("J").status == "RETRY", 20)
    retry = gateway.job("J")
    assert retry.failures >= 1 and retry.last_error_msg and retry.last_error_at
    assert wait_for(lambda: gateway.job("J").status == "FAILED", 60), gateway.job("J").failures
    failed = gateway.job("J")
    assert failed.failures == 16 and failed.propagated_msgs == 50
    time.sleep(1)
    assert gateway.job("J").failures == 16  # FAILED: no more attempts

    nats_server.start()
    time.sleep(1)
    assert gateway.job("J").status == "FAILED"  # a FAILED job waits for RESET_JOB
    gw.job_reset(user=None, job=gateway.job("J"))
    assert wait_for(lambda: gateway.job("J").propagated_msgs == 200, 30), gateway.job("J").__dict__
    job = gateway.job("J")
    assert (job.status, job.failures) == ("READY", 0)
    assert _stream_count(subject.replace(".", "_")) == 200


def test_remove_job_with_the_server_down_waits_delete_pending_then_goes(
    gateway, foreign, nats_server
):
    table = qs.queue_table_create(user=None, name="QT_GW", sort_order="enq_time")
    qs.queue_create(user=None, name="DST", queue_table=table)
    subject = foreign("NATS")
    link = gateway.link("NATS")
    gw.foreign_queue_register(user=None, name="BUS", link=link, provider_queue=subject)
    gw.job_create(
        user=None,
        job_name="J",
        propagation_type="INBOUND",
        source=f"BUS@{link.name}",
        destination="DST",
        poll_interval=0.2,
    )
    gateway.worker("w").wait_registered()
    gateway.start()
    from gateway.models import AgentLogLine

    assert wait_for(
        lambda: AgentLogLine.objects.filter(
            component="job J", text__startswith="subscribed"
        ).exists(),
        20,
    )
    nats_server.stop()
    gw.job_remove(user=None, job=gateway.job("J"))
    assert wait_for(lambda: "cleanup failed" in gateway.job("J").last_error_msg, 30)
    assert gateway.job("J").status == "DELETE_PENDING"
    nats_server.start()
    assert wait_for(lambda: not Job.objects.filter(name="J").exists(), 30)

    async def consumers() -> int:
        nc = await nats.connect("nats://127.0.0.1:4222")
        found = await nc.jetstream().consumers_info(subject.replace(".", "_"))
        await nc.close()
        return len(found)

    assert aio.run(consumers()) == 0
