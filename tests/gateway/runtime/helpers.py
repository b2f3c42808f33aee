"""Helpers of the gateway run-time tests (the fixtures ``gateway`` and ``foreign`` are in this
folder's conftest.py): real Celery workers serving agents' queues (``mgw.<AGENT>``), real foreign
brokers on loopback, pytest-django's test database (transactional: the workers see only
committed rows). Timings are shortened for both sides: the workers read them from their
environment, this process's settings.MGW is patched to match (the reaper runs here)."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable
from typing import Any

from gateway import aio
from gateway import services as gw
from gateway.models import DEFAULT_AGENT, Agent, Job, Link
from gateway.selectors import console_database_role
from tests.celery.helpers import CeleryProcess, CeleryProcesses

FAST = {
    "MGW_HEARTBEAT_S": 0.3,
    "MGW_STALE_S": 2.0,
    "MGW_RESTART_DELAY_S": 0.5,
    "MGW_LOOP_WAIT_S": 0.1,
    "MGW_FETCH_WAIT_S": 0.2,
    "MGW_FOREIGN_TIMEOUT_S": 3.0,
    "MGW_BACKOFF_MIN_S": 0.05,
    "MGW_BACKOFF_MAX_S": 0.2,
    "MGW_REMOVE_RETRY_S": 0.3,
    "AQ_WORKER_HEARTBEAT_S": 0.5,
}
MGW_KEYS = {k: k.removeprefix("MGW_") for k in FAST if k.startswith("MGW_")}

# Each system's link properties on this machine, and a fresh provider name per test.
LINKS: dict[str, dict[str, Any]] = {
    "AMQP": {"host": "127.0.0.1", "port": 5672, "username": "guest"},
    "MQTT": {"host": "127.0.0.1", "port": 1883},
    "NATS": {"host": "127.0.0.1", "port": 4222},
    "REDIS": {"host": "127.0.0.1", "port": 6379, "db": 11},
}
PASSWORDS = {"AMQP": "guest"}


def wait_for(
    predicate: Callable[[], Any], timeout: float = 20.0, interval: float = 0.05, reap: bool = True
) -> Any:
    """Poll until truthy (returned) or timeout (the last falsy value); runs the agent reaper
    each round, as beat would."""
    deadline = time.monotonic() + timeout
    while True:
        if reap:
            gw.agents_reap()
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


class Gateway:
    def __init__(self, procs: CeleryProcesses, settings: Any):
        self.procs = procs
        self.settings = settings
        mgw = dict(settings.MGW)
        for var, value in FAST.items():
            procs.env[var] = str(value)
            if var in MGW_KEYS:
                mgw[MGW_KEYS[var]] = value
        settings.MGW = mgw
        settings.AQ_WORKER_HEARTBEAT_S = FAST["AQ_WORKER_HEARTBEAT_S"]
        # STARTUP refuses an agent without an agent user: the console's own role here.
        username, password = console_database_role()
        gw.agent_alter(
            user=None, agent=gw.ensure_default_agent(), username=username, password=password
        )

    def worker(self, name: str, *agents: str, concurrency: int = 4) -> CeleryProcess:
        queues = ",".join(f"mgw.{a}" for a in (agents or (DEFAULT_AGENT,)))
        return self.procs.worker_on(name, queues, concurrency=concurrency)

    @staticmethod
    def agent(name: str = DEFAULT_AGENT) -> Agent:
        if name == DEFAULT_AGENT:
            # Transactional tests flush the tables, the data migration's DEFAULT_AGENT included.
            return gw.ensure_default_agent()
        return Agent.objects.get(name=name)

    def start(self, name: str = DEFAULT_AGENT, timeout: float = 30) -> Agent:
        gw.agent_startup(user=None, agent=self.agent(name))
        running = wait_for(lambda: self.agent(name).status == "RUNNING", timeout)
        assert running, (
            f"agent {name} is {self.agent(name).status}: {self.agent(name).last_error_msg}"
        )
        return self.agent(name)

    def stop(self, name: str = DEFAULT_AGENT, mode: str = "NORMAL", timeout: float = 30) -> None:
        if self.agent(name).status == "NOT_STARTED":
            return
        gw.agent_shutdown(user=None, agent=self.agent(name), mode=mode)
        assert wait_for(lambda: self.agent(name).status == "NOT_STARTED", timeout)

    @staticmethod
    def link(link_type: str, *, name: str | None = None, **extra: Any) -> Link:
        return gw.link_create(
            user=None,
            name=name or f"L_{link_type}_{uuid.uuid4().hex[:6]}",
            link_type=link_type,
            properties={**LINKS[link_type], **extra.pop("properties", {})},
            password=PASSWORDS.get(link_type, ""),
            **extra,
        )

    @staticmethod
    def job(name: str) -> Job:
        return Job.objects.get(name=name)


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


# --- the foreign side: what an administrator creates with the system's own tools -----------------


def foreign_create(link_type: str, provider: str) -> None:
    """Create the physical queue/stream a registered foreign queue names (registering creates
    nothing, as in MGW)."""
    if link_type == "AMQP":
        import pika

        conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", 5672))
        conn.channel().queue_declare(provider, durable=True)
        conn.close()
    elif link_type == "NATS":
        import nats

        async def make() -> None:
            nc = await nats.connect("nats://127.0.0.1:4222")
            await nc.jetstream().add_stream(name=provider.replace(".", "_"), subjects=[provider])
            await nc.close()

        aio.run(make())


def foreign_drop(link_type: str, provider: str) -> None:
    with contextlib.suppress(Exception):
        if link_type == "AMQP":
            import pika

            conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", 5672))
            conn.channel().queue_delete(provider)
            conn.close()
        elif link_type == "NATS":
            import nats

            async def drop() -> None:
                nc = await nats.connect("nats://127.0.0.1:4222")
                await nc.jetstream().delete_stream(provider.replace(".", "_"))
                await nc.close()

            aio.run(drop())
        elif link_type == "REDIS":
            import redis

            redis.Redis(port=6379, db=11).delete(provider)


def drain(queue: Any, *, consumer: str | None = None) -> list[Any]:
    """Every message now in ``queue`` (dequeued)."""
    from django.db import transaction

    from queues import engine
    from queues.services import raw_connection

    out = []
    with transaction.atomic():
        conn = raw_connection()
        info = engine.queue_info(conn, queue.pk)
        while batch := engine.dequeue(conn, info, batch=500, consumer=consumer):
            out.extend(batch)
    return out
