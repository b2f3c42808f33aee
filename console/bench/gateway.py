"""The ``gateway`` suite: messages through ONE Messaging Gateway job, end to end, against the
same client library working alone on this machine.

The suite starts what it needs and stops it afterwards: a gateway agent of its own
(``BGW_<hex>``, so its Celery queue ``mgw.BGW_<hex>`` is the run's alone), a Celery worker
subprocess serving that queue (``-P threads``), and the agent itself (``agent_startup``, waited
for RUNNING). Each workload has its own link, registered foreign queue and job on that agent,
the job created DISABLED; the default batch size (``MsgBatchSize`` 30, the agent's
``oracle.mgw.batch_size`` default) and the default polling interval.

``outbound_<system>``: N messages (the shared 241-byte payload) are enqueued into our queue
(engine enqueue, not timed). The clock starts at ``job_enable`` on the RUNNING agent and stops
when the foreign system holds all N: the AMQP queue's message count (passive declare), the MQTT
subscriber's N-th arrival (QoS 2, as the job publishes), the JetStream stream's message count,
the Redis stream's XLEN. The suite then waits for the job's ``propagated_msgs`` to reach N and
fails unless the foreign side holds exactly N, the source is empty and the job counted no
failure and no exception.

``inbound_amqp``: N persistent messages with a ``message_id`` each (the job's exactly-once key)
are published to a RabbitMQ queue (not timed); the clock runs from ``job_enable`` to the job's
``propagated_msgs`` reaching N; our queue must then hold exactly N and the RabbitMQ queue none.

``<system>_client_limit``: the same client library alone, doing what the driver does with the
same messages, in batches of the same size, against the same foreign queue, measured to the same
end point: pika publishing with publisher confirms (the driver's mode for a link without an
outbound log queue: a batch in flight, then one wait for its confirms); pika consuming with
manual acknowledgements and prefetch 30, one multiple-ack per batch
(``amqp_consume_client_limit``); paho publishing QoS 2 with the driver's MQTT 5 properties (a
batch in flight, then a wait for every PUBCOMP) until the subscriber has all N; nats-py JetStream
publishing with ``Nats-Msg-Id`` (a batch of publish futures, then a wait for their acks); redis-py
XADD in MULTI/EXEC pipelines of 30. ``<workload>_ratio`` is the gateway figure over the limit;
the target is a ratio of at least 0.5.

Names are unique per run; the foreign queues, streams and keys the suite creates are deleted at
the end, and the gateway objects, queue table and worker with them, even when a workload fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg

from console.bench.propagation import WorkerProcess, forget_broker_queue
from console.bench.queues import PAYLOAD, BenchError, server_settings
from gateway import aio, conversion
from queues import engine

Log = Callable[[str], None]

FULL_N = 20_000
BATCH = 30  # MsgBatchSize's default (the agent's oracle.mgw.batch_size)
TARGET_RATIO = 0.5
LOAD_BATCH = 1_000
START_TIMEOUT_S = 90.0
# Loopback brokers (the gateway runtime tests use the same ones).
AMQP = {"host": "127.0.0.1", "port": 5672, "username": "guest"}
AMQP_PASSWORD = "guest"
MQTT = {"host": "127.0.0.1", "port": 1883}
NATS = {"host": "127.0.0.1", "port": 4222}
REDIS = {"host": "127.0.0.1", "port": 6379, "db": 12}
MQTT_QOS = 2  # the driver's default for a destination
POLL_S = 0.02  # how often the foreign side is counted while a job runs

# Workload -> (its client-limit key, link type).
WORKLOADS: dict[str, tuple[str, str]] = {
    "outbound_amqp": ("amqp_client_limit", "AMQP"),
    "inbound_amqp": ("amqp_consume_client_limit", "AMQP"),
    "outbound_mqtt": ("mqtt_client_limit", "MQTT"),
    "outbound_nats": ("nats_client_limit", "NATS"),
    "outbound_redis": ("redis_client_limit", "REDIS"),
}


def size_for(scale: float) -> int:
    """Messages per workload at ``scale`` (1.0 = 20,000)."""
    return max(10, round(FULL_N * scale))


def body() -> bytes:
    """The payload as the gateway sends it (``gateway.conversion``: compact JSON)."""
    data, _content_type = conversion.body_of(PAYLOAD)
    return data


def load_avg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _wait(
    predicate: Callable[[], Any],
    timeout: float,
    what: str,
    check: Callable[[], None] | None = None,
    every: float = 0.05,
) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        if check is not None:
            check()
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise BenchError(f"Timed out after {timeout:.0f} s waiting for {what}.")
        time.sleep(every)


def driver_missing(link_type: str) -> str | None:
    """Why the gateway has no driver for ``link_type`` yet, or None."""
    from gateway.drivers import driver_class

    try:
        driver_class(link_type)
    except ImportError as exc:
        return f"the {link_type} driver is not importable ({exc})"
    return None


# --- AMQP: pika, as the driver uses it ------------------------------------------------------------


def amqp_connection() -> Any:
    import pika

    return pika.BlockingConnection(
        pika.ConnectionParameters(
            AMQP["host"],
            AMQP["port"],
            credentials=pika.PlainCredentials(AMQP["username"], AMQP_PASSWORD),
            socket_timeout=10,
            blocked_connection_timeout=30,
        )
    )


def amqp_properties(message_id: str) -> Any:
    """What the driver sets for one of our messages (``AmqpDriver._to_native``)."""
    import pika

    return pika.BasicProperties(
        content_type=conversion.JSON,
        delivery_mode=2,
        priority=1,
        message_id=message_id,
        timestamp=int(time.time()),
    )


class AmqpQueue:
    """A durable RabbitMQ queue of the run, counted by passive declares on its own connection."""

    def __init__(self, name: str):
        self.name = name
        self.conn = amqp_connection()
        self.ch = self.conn.channel()
        self.ch.queue_declare(name, durable=True)

    def count(self) -> int:
        return int(self.ch.queue_declare(self.name, passive=True).method.message_count)

    def purge(self) -> None:
        self.ch.queue_purge(self.name)

    def drop(self) -> None:
        with contextlib.suppress(Exception):
            self.ch.queue_delete(self.name)
        with contextlib.suppress(Exception):
            self.conn.close()


def amqp_publish_confirmed(queue: str, n: int, *, id_prefix: str, batch: int = BATCH) -> float:
    """Publish ``n`` persistent messages with publisher confirms, ``batch`` in flight then one
    wait for their confirms (the driver's ``_publish_confirmed``); seconds from the first publish
    to the last confirm."""
    conn = amqp_connection()
    try:
        ch = conn.channel()
        impl = ch._impl
        data = body()
        outstanding: set[int] = set()
        state = {"selected": False, "nacked": 0, "returned": 0}

        def wake() -> None:
            conn.call_later(0, lambda: None)

        def on_confirm(frame: Any) -> None:
            import pika.spec

            m = frame.method
            if isinstance(m, pika.spec.Basic.Nack):
                state["nacked"] += 1
            if m.multiple:
                for tag in [t for t in outstanding if t <= m.delivery_tag]:
                    outstanding.discard(tag)
            else:
                outstanding.discard(m.delivery_tag)
            if not outstanding:
                wake()

        def selected(_frame: Any) -> None:
            state["selected"] = True
            wake()

        def returned(*_args: Any) -> None:
            state["returned"] += 1

        impl.add_on_return_callback(returned)
        impl.confirm_delivery(ack_nack_callback=on_confirm, callback=selected)
        _pika_wait(conn, lambda: bool(state["selected"]), "confirm.select")
        tag = 1
        t0 = time.perf_counter()
        for start in range(0, n, batch):
            for i in range(start, min(start + batch, n)):
                impl.basic_publish(
                    "", queue, data, amqp_properties(f"{id_prefix}:{i}"), mandatory=True
                )
                outstanding.add(tag)
                tag += 1
            _pika_wait(conn, lambda: not outstanding, "publisher confirms")
        seconds = time.perf_counter() - t0
        if state["nacked"] or state["returned"]:
            raise BenchError(
                f"RabbitMQ refused {state['nacked']} and returned {state['returned']} messages."
            )
        return seconds
    finally:
        with contextlib.suppress(Exception):
            conn.close()


def _pika_wait(conn: Any, done: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BenchError(f"pika: no {what} within {timeout:.0f} s.")
        conn.process_data_events(time_limit=remaining)


def amqp_consume(queue: str, n: int, *, batch: int = BATCH) -> float:
    """Consume ``n`` messages with manual acknowledgements and prefetch ``batch``, the way the
    driver's ``fetch``/``ack`` do (wait for the first, collect the rest of the batch briefly,
    one multiple-ack per batch); seconds from ``basic_consume`` to the last ack sent."""
    conn = amqp_connection()
    try:
        ch = conn.channel()
        ch.basic_qos(prefetch_count=batch)
        buffer: list[int] = []

        def on_message(_ch: Any, method: Any, _props: Any, _body: bytes) -> None:
            buffer.append(method.delivery_tag)

        got = 0
        t0 = time.perf_counter()
        ch.basic_consume(queue, on_message, auto_ack=False)
        while got < n:
            _pika_wait(conn, lambda: bool(buffer), "delivery")
            brief = time.monotonic() + 0.05
            while len(buffer) < batch and time.monotonic() < brief:
                before = len(buffer)
                conn.process_data_events(time_limit=max(0.0, brief - time.monotonic()))
                if len(buffer) == before:
                    break
            take, buffer[:] = buffer[:batch], buffer[batch:]
            ch.basic_ack(take[-1], multiple=True)
            got += len(take)
        conn.process_data_events(0)  # the last ack onto the wire
        seconds = time.perf_counter() - t0
        return seconds
    finally:
        with contextlib.suppress(Exception):
            conn.close()


def amqp_preload(queue: str, n: int, id_prefix: str) -> None:
    """N messages into ``queue`` for an inbound workload (not timed)."""
    amqp_publish_confirmed(queue, n, id_prefix=id_prefix, batch=500)


# --- MQTT: paho, as the driver uses it ------------------------------------------------------------


class MqttCounter:
    """A clean-session MQTT 5 subscriber counting arrivals on ``topic`` at QoS 2 (the job's
    QoS), timestamping the ``target``-th."""

    def __init__(self, topic: str, client_id: str):
        import paho.mqtt.client as mqtt
        from paho.mqtt.enums import CallbackAPIVersion

        self.topic = topic
        self.lock = threading.Lock()
        self.count = 0
        self.target = 0
        self.reached_at: float | None = None
        self.reached = threading.Event()
        self.connected = threading.Event()
        self.subscribed = threading.Event()
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5
        )

        def on_connect(*_a: Any) -> None:
            self.connected.set()

        def on_subscribe(*_a: Any) -> None:
            self.subscribed.set()

        def on_message(_c: Any, _u: Any, _m: Any) -> None:
            with self.lock:
                self.count += 1
                if self.target and self.count >= self.target and self.reached_at is None:
                    self.reached_at = time.perf_counter()
                    self.reached.set()

        self.client.on_connect = on_connect
        self.client.on_subscribe = on_subscribe
        self.client.on_message = on_message
        self.client.connect(MQTT["host"], MQTT["port"], keepalive=30, clean_start=True)
        self.client.loop_start()
        if not self.connected.wait(10):
            self.close()
            raise BenchError("The MQTT subscriber got no CONNACK within 10 s.")
        self.client.subscribe(topic, qos=MQTT_QOS)
        if not self.subscribed.wait(10):
            self.close()
            raise BenchError("The MQTT subscriber got no SUBACK within 10 s.")

    def arm(self, target: int) -> None:
        with self.lock:
            self.count = 0
            self.target = target
            self.reached_at = None
            self.reached.clear()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.disconnect()
        self.client.loop_stop()


def mqtt_properties(message_id: str) -> Any:
    """The MQTT 5 properties the driver sends with one of our messages."""
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    props = Properties(PacketTypes.PUBLISH)
    props.UserProperty = [
        ("message-id", message_id),
        ("mgw-enq-time", datetime.now(UTC).isoformat()),
    ]
    props.ContentType = conversion.JSON
    return props


def mqtt_publish(topic: str, n: int, counter: MqttCounter, *, id_prefix: str) -> float:
    """Publish ``n`` messages at QoS 2 with paho, ``BATCH`` at once then a wait for every
    PUBCOMP (the driver's ``_send``); seconds from the first publish to the subscriber's N-th
    arrival."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    client = mqtt.Client(
        CallbackAPIVersion.VERSION2,
        client_id=f"{id_prefix}.pub.{secrets.token_hex(4)}",
        protocol=mqtt.MQTTv5,
    )
    connected = threading.Event()
    client.on_connect = lambda *_a: connected.set()
    client.connect(MQTT["host"], MQTT["port"], keepalive=30, clean_start=True)
    client.loop_start()
    try:
        if not connected.wait(10):
            raise BenchError("The MQTT publisher got no CONNACK within 10 s.")
        data = body()
        counter.arm(n)
        t0 = time.perf_counter()
        for start in range(0, n, BATCH):
            infos = [
                client.publish(topic, data, qos=MQTT_QOS, properties=mqtt_properties(f"{i}"))
                for i in range(start, min(start + BATCH, n))
            ]
            for info in infos:
                info.wait_for_publish(30)
                if not info.is_published():
                    raise BenchError("paho: a QoS 2 publish was not completed within 30 s.")
        if not counter.reached.wait(60):
            raise BenchError(f"The MQTT subscriber received {counter.count} of {n} messages.")
        assert counter.reached_at is not None
        return counter.reached_at - t0
    finally:
        with contextlib.suppress(Exception):
            client.disconnect()
        client.loop_stop()


# --- NATS: nats-py JetStream, as the driver uses it -----------------------------------------------


async def _quiet(_exc: Exception) -> None:
    """nats-py's error callback; failures surface as exceptions of the calls instead."""


async def nats_connect() -> Any:
    import nats

    return await asyncio.wait_for(
        nats.connect(
            f"nats://{NATS['host']}:{NATS['port']}",
            allow_reconnect=False,
            max_reconnect_attempts=0,
            connect_timeout=5,
            error_cb=_quiet,
        ),
        10,
    )


class NatsStream:
    """A JetStream stream of the run capturing one subject, on a connection (and event loop)
    of its own."""

    def __init__(self, stream: str, subject: str):
        self.stream = stream
        self.subject = subject
        self.loop = aio.LoopThread("bench-nats")
        self.nc = self.loop.call(nats_connect())
        self.js = self.nc.jetstream(timeout=10)
        self.loop.call(self.js.add_stream(name=stream, subjects=[subject]))

    def count(self) -> int:
        info = self.loop.call(self.js.stream_info(self.stream))
        return int(info.state.messages)

    def purge(self) -> None:
        self.loop.call(self.js.purge_stream(self.stream))

    def drop(self) -> None:
        with contextlib.suppress(Exception):
            self.loop.call(self.js.delete_stream(self.stream))
        with contextlib.suppress(Exception):
            self.loop.call(self.nc.close())
        self.loop.close()


def nats_publish(stream: str, subject: str, n: int, *, id_prefix: str) -> float:
    """Publish ``n`` messages to JetStream with nats-py, each with a ``Nats-Msg-Id``: a batch
    of ``publish_async`` futures, then one wait for their PubAcks (the driver's ``_send``);
    seconds from the first publish to the last PubAck."""
    data = body()

    async def go() -> float:
        nc = await nats_connect()
        try:
            js = nc.jetstream(timeout=10)
            t0 = time.perf_counter()
            for start in range(0, n, BATCH):
                pending = []
                for i in range(start, min(start + BATCH, n)):
                    headers = {
                        "Content-Type": conversion.JSON,
                        "MGW-Enq-Time": datetime.now(UTC).isoformat(),
                        "Nats-Msg-Id": f"{id_prefix}:{i}",
                    }
                    pending.append(
                        await js.publish_async(
                            subject, data, headers=headers, stream=stream, wait_stall=10
                        )
                    )
                await asyncio.wait_for(asyncio.gather(*pending), 10)
            return time.perf_counter() - t0
        finally:
            await nc.close()

    return aio.run(go())


# --- Redis: redis-py, as the driver uses it -------------------------------------------------------


def redis_client() -> Any:
    import redis

    return redis.Redis(host=REDIS["host"], port=REDIS["port"], db=REDIS["db"], socket_timeout=10)


def redis_publish(stream: str, n: int) -> float:
    """XADD ``n`` entries with redis-py, ``BATCH`` per MULTI/EXEC pipeline (the driver's publish
    on a link without an outbound log); seconds from the first to the last EXEC reply."""
    r = redis_client()
    try:
        data = body()
        t0 = time.perf_counter()
        for start in range(0, n, BATCH):
            with r.pipeline(transaction=True) as pipe:
                for _ in range(start, min(start + BATCH, n)):
                    fields = {
                        "body": data,
                        "content_type": conversion.JSON,
                        "enq_time": datetime.now(UTC).isoformat(),
                    }
                    pipe.xadd(stream, fields)  # type: ignore[arg-type]
                pipe.execute()
        return time.perf_counter() - t0
    finally:
        r.close()


# --- the gateway side ------------------------------------------------------------------------------


@dataclass
class Topology:
    prefix: str
    agent: Any = None
    table: Any = None
    links: list[Any] = field(default_factory=list)
    foreign: list[Any] = field(default_factory=list)
    jobs: list[Any] = field(default_factory=list)
    cleanups: list[Callable[[], None]] = field(default_factory=list)


def _load(conninfo: str, queue_id: int, n: int) -> None:
    """N copies of the shared payload into our queue (engine enqueue, not timed)."""
    with psycopg.connect(conninfo) as conn:
        info = engine.queue_info(conn, queue_id)
        for start in range(0, n, LOAD_BATCH):
            engine.enqueue(
                conn,
                info,
                [engine.NewMessage(payload=PAYLOAD) for _ in range(min(LOAD_BATCH, n - start))],
                user="BENCH",
            )
            conn.commit()
    got = _queue_count(conninfo, queue_id)
    if got != n:
        raise BenchError(f"Our queue holds {got} messages after loading {n}.")


def _queue_count(conninfo: str, queue_id: int) -> int:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM aq_message WHERE queue_id = %s", (queue_id,)
        ).fetchone()
    return int(row[0]) if row else 0


class JobWatch:
    """The job's counters, read on a connection of its own."""

    def __init__(self, conninfo: str, job_id: int):
        self.conn = psycopg.connect(conninfo, autocommit=True)
        self.job_id = job_id

    def read(self) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT propagated_msgs, exceptionq_msgs, failures, status, last_error_msg "
            "FROM gateway_job WHERE id = %s",
            (self.job_id,),
        ).fetchone()
        if row is None:
            raise BenchError(f"Job {self.job_id} is gone.")
        keys = ("propagated", "exceptions", "failures", "status", "error")
        return dict(zip(keys, row, strict=True))

    def check(self) -> dict[str, Any]:
        state = self.read()
        if state["failures"] or state["status"] not in ("READY",):
            raise BenchError(
                f"The job failed ({state['failures']} failure(s), {state['status']}): "
                f"{state['error']}"
            )
        return state

    def close(self) -> None:
        self.conn.close()


@dataclass
class Run:
    """What every workload needs: the run's names, connection string, topology and worker."""

    prefix: str
    conninfo: str
    topo: Topology
    worker: WorkerProcess
    log: Log

    def check(self) -> None:
        self.worker.check()
        from gateway.models import Agent

        agent = Agent.objects.get(pk=self.topo.agent.pk)
        if agent.status != "RUNNING":
            raise BenchError(f"The agent is {agent.status}: {agent.last_error_msg}")

    def link(self, link_type: str, properties: dict[str, Any], password: str = "") -> Any:
        from gateway import services as gw

        link = gw.link_create(
            user=None,
            name=f"{self.prefix}_{link_type}",
            link_type=link_type,
            properties=properties,
            password=password,
            agent=self.topo.agent,
            comment="benchmark; removed when the run ends",
        )
        self.topo.links.append(link)
        return link

    def foreign_queue(self, link: Any, name: str, provider: str, domain: str) -> Any:
        from gateway import services as gw

        fq = gw.foreign_queue_register(
            user=None,
            name=f"{self.prefix}_{name}",
            link=link,
            provider_queue=provider,
            domain=domain,
        )
        self.topo.foreign.append(fq)
        return fq

    def our_queue(self, name: str) -> Any:
        from queues import services as qs

        return qs.queue_create(
            user=None,
            name=f"{self.prefix}_{name}",
            queue_table=self.topo.table,
            comment="benchmark; dropped when the run ends",
        )

    def job(self, name: str, direction: str, source: str, destination: str) -> Any:
        from gateway import services as gw

        job = gw.job_create(
            user=None,
            job_name=f"{self.prefix}_{name}",
            propagation_type=direction,
            source=source,
            destination=destination,
            enabled=False,
            comments="benchmark; removed when the run ends",
        )
        self.topo.jobs.append(job)
        return job


def outbound(
    run: Run,
    key: str,
    link: Any,
    fq: Any,
    n: int,
    foreign_count: Callable[[], int],
    reached_at: Callable[[], float | None] | None = None,
) -> dict[str, Any]:
    """One outbound workload: N messages preloaded, the job enabled, timed to the foreign side
    holding all N."""
    from gateway import services as gw

    src = run.our_queue(key.upper())
    job = run.job(key.upper(), "OUTBOUND", src.name, f"{fq.name}@{link.name}")
    _load(run.conninfo, src.pk, n)
    if foreign_count() != 0:
        raise BenchError(f"The foreign side of {key} is not empty before the run.")
    watch = JobWatch(run.conninfo, job.pk)
    try:
        load = load_avg()
        t0 = time.perf_counter()
        gw.job_enable(user=None, job=job)
        timeout = START_TIMEOUT_S + n / 100
        deadline = time.monotonic() + timeout
        end: float | None = None
        polls = 0
        while end is None:
            if reached_at is not None:
                end = reached_at()
            elif foreign_count() >= n:
                end = time.perf_counter()
            if end is not None:
                break
            polls += 1
            if polls % 25 == 0:
                watch.check()
                run.check()
            if time.monotonic() > deadline:
                state = watch.read()
                raise BenchError(
                    f"{key}: the foreign side holds {foreign_count()} of {n} after "
                    f"{timeout:.0f} s (job: {state})."
                )
            time.sleep(POLL_S)
        seconds = end - t0
        _wait(
            lambda: watch.check()["propagated"] >= n,
            30,
            f"{key}'s job to count {n} propagated messages",
            run.check,
        )
        gw.job_disable(user=None, job=job)
        state = watch.check()
        time.sleep(0.2)  # anything sent twice would show now
        held = foreign_count()
        left = _queue_count(run.conninfo, src.pk)
    finally:
        watch.close()
    if state["propagated"] != n or state["exceptions"] or held != n or left:
        raise BenchError(
            f"{key}: the job counts {state['propagated']} propagated and {state['exceptions']} "
            f"exceptions, the foreign side holds {held} and our queue {left}; expected {n}, 0, "
            f"{n} and 0."
        )
    return {key: round(n / seconds, 1), f"{key}_s": round(seconds, 3), f"{key}_load": load}


def inbound_amqp(run: Run, link: Any, fq: Any, amqp_queue: AmqpQueue, n: int) -> dict[str, Any]:
    from gateway import services as gw

    key = "inbound_amqp"
    dst = run.our_queue("INBOUND_AMQP")
    job = run.job("INBOUND_AMQP", "INBOUND", f"{fq.name}@{link.name}", dst.name)
    amqp_preload(amqp_queue.name, n, f"{run.prefix}-in")
    if amqp_queue.count() != n:
        raise BenchError(f"The RabbitMQ queue holds {amqp_queue.count()} messages, not {n}.")
    watch = JobWatch(run.conninfo, job.pk)
    try:
        load = load_avg()
        t0 = time.perf_counter()
        gw.job_enable(user=None, job=job)
        timeout = START_TIMEOUT_S + n / 100
        deadline = time.monotonic() + timeout
        polls = 0
        while True:
            state = watch.read()
            if state["propagated"] >= n:
                end = time.perf_counter()
                break
            polls += 1
            if polls % 25 == 0:
                watch.check()
                run.check()
            if time.monotonic() > deadline:
                raise BenchError(
                    f"{key}: the job moved {state['propagated']} of {n} in {timeout:.0f} s "
                    f"({state})."
                )
            time.sleep(POLL_S)
        seconds = end - t0
        # The acknowledgements follow the commit: the RabbitMQ queue empties right after.
        _wait(lambda: amqp_queue.count() == 0, 30, "RabbitMQ to drop the acknowledged messages")
        gw.job_disable(user=None, job=job)
        state = watch.check()
        held = _queue_count(run.conninfo, dst.pk)
    finally:
        watch.close()
    if state["propagated"] != n or state["exceptions"] or held != n:
        raise BenchError(
            f"{key}: the job counts {state['propagated']} propagated and {state['exceptions']} "
            f"exceptions and our queue holds {held}; expected {n}, 0 and {n}."
        )
    return {key: round(n / seconds, 1), f"{key}_s": round(seconds, 3), f"{key}_load": load}


# --- the workloads, one system at a time ----------------------------------------------------------


def _limit(key: str, n: int, seconds: float) -> dict[str, Any]:
    return {key: round(n / seconds, 1), f"{key}_s": round(seconds, 3), f"{key}_load": load_avg()}


def amqp_workloads(run: Run, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    link = run.link("AMQP", dict(AMQP), AMQP_PASSWORD)
    tag = secrets.token_hex(4)
    q_out = AmqpQueue(f"aqbench.{run.prefix.lower()}.out.{tag}")
    run.topo.cleanups.append(q_out.drop)
    q_in = AmqpQueue(f"aqbench.{run.prefix.lower()}.in.{tag}")
    run.topo.cleanups.append(q_in.drop)

    seconds = amqp_publish_confirmed(q_out.name, n, id_prefix=f"{run.prefix}-limit")
    out.update(_limit("amqp_client_limit", n, seconds))
    if q_out.count() != n:
        raise BenchError(f"amqp_client_limit: the queue holds {q_out.count()} of {n}.")
    q_out.purge()
    run.log(f"  amqp_client_limit          {out['amqp_client_limit']:>10}/s")
    fq_out = run.foreign_queue(link, "AMQP_OUT", q_out.name, "QUEUE")
    out.update(outbound(run, "outbound_amqp", link, fq_out, n, q_out.count))
    run.log(f"  outbound_amqp              {out['outbound_amqp']:>10}/s")

    amqp_preload(q_in.name, n, f"{run.prefix}-limit-in")
    seconds = amqp_consume(q_in.name, n)
    out.update(_limit("amqp_consume_client_limit", n, seconds))
    _wait(lambda: q_in.count() == 0, 10, "the consumed RabbitMQ queue to be empty")
    run.log(f"  amqp_consume_client_limit  {out['amqp_consume_client_limit']:>10}/s")
    fq_in = run.foreign_queue(link, "AMQP_IN", q_in.name, "QUEUE")
    out.update(inbound_amqp(run, link, fq_in, q_in, n))
    run.log(f"  inbound_amqp               {out['inbound_amqp']:>10}/s")
    return out


def mqtt_workloads(run: Run, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    link = run.link("MQTT", dict(MQTT))
    topic = f"aqbench/{run.prefix.lower()}/{secrets.token_hex(4)}"
    counter = MqttCounter(topic, f"aqbench.{run.prefix.lower()}.sub")
    run.topo.cleanups.append(counter.close)

    seconds = mqtt_publish(topic, n, counter, id_prefix=f"aqbench.{run.prefix.lower()}")
    out.update(_limit("mqtt_client_limit", n, seconds))
    time.sleep(0.2)
    if counter.count != n:
        raise BenchError(f"mqtt_client_limit: the subscriber received {counter.count} of {n}.")
    run.log(f"  mqtt_client_limit          {out['mqtt_client_limit']:>10}/s")
    counter.arm(n)
    fq = run.foreign_queue(link, "MQTT_OUT", topic, "TOPIC")
    out.update(
        outbound(
            run,
            "outbound_mqtt",
            link,
            fq,
            n,
            lambda: counter.count,
            lambda: counter.reached_at,
        )
    )
    run.log(f"  outbound_mqtt              {out['outbound_mqtt']:>10}/s")
    return out


def nats_workloads(run: Run, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    link = run.link("NATS", dict(NATS))
    tag = secrets.token_hex(4)
    subject = f"aqbench.{run.prefix.lower()}.{tag}"
    stream = NatsStream(f"AQBENCH_{run.prefix}_{tag}", subject)
    run.topo.cleanups.append(stream.drop)

    seconds = nats_publish(stream.stream, subject, n, id_prefix=f"{run.prefix}-limit")
    out.update(_limit("nats_client_limit", n, seconds))
    if stream.count() != n:
        raise BenchError(f"nats_client_limit: the stream holds {stream.count()} of {n}.")
    stream.purge()
    run.log(f"  nats_client_limit          {out['nats_client_limit']:>10}/s")
    fq = run.foreign_queue(link, "NATS_OUT", subject, "QUEUE")
    out.update(outbound(run, "outbound_nats", link, fq, n, stream.count))
    run.log(f"  outbound_nats              {out['outbound_nats']:>10}/s")
    return out


def redis_workloads(run: Run, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    link = run.link("REDIS", dict(REDIS))
    stream = f"aqbench:{run.prefix.lower()}:{secrets.token_hex(4)}"
    r = redis_client()
    run.topo.cleanups.append(r.close)
    run.topo.cleanups.append(lambda: r.delete(stream))

    def xlen() -> int:
        return int(r.xlen(stream))

    seconds = redis_publish(stream, n)
    out.update(_limit("redis_client_limit", n, seconds))
    if xlen() != n:
        raise BenchError(f"redis_client_limit: the stream holds {xlen()} of {n}.")
    r.delete(stream)
    run.log(f"  redis_client_limit         {out['redis_client_limit']:>10}/s")
    fq = run.foreign_queue(link, "REDIS_OUT", stream, "QUEUE")
    out.update(outbound(run, "outbound_redis", link, fq, n, xlen))
    run.log(f"  outbound_redis             {out['outbound_redis']:>10}/s")
    return out


SYSTEM_WORKLOADS: dict[str, Callable[[Run, int], dict[str, Any]]] = {
    "AMQP": amqp_workloads,
    "MQTT": mqtt_workloads,
    "NATS": nats_workloads,
    "REDIS": redis_workloads,
}


# --- the suite -------------------------------------------------------------------------------------


SERVERS: dict[str, dict[str, Any]] = {"AMQP": AMQP, "MQTT": MQTT, "NATS": NATS, "REDIS": REDIS}


def _await_server(system: str, log: Log, timeout: float = 60.0) -> None:
    """Wait (bounded) for the system's server to accept connections: the brokers are shared
    with test suites that stop and restart them."""
    where = (SERVERS[system]["host"], SERVERS[system]["port"])

    def answers() -> bool:
        try:
            socket.create_connection(where, timeout=1).close()
        except OSError:
            return False
        return True

    if answers():
        return
    log(f"  {system} at {where[0]}:{where[1]} refuses connections; waiting up to {timeout:.0f} s")
    _wait(answers, timeout, f"{system} at {where[0]}:{where[1]} to accept connections", every=1)
    time.sleep(2)  # a restarted server finishes its start-up (JetStream recovery)


def _start_agent(run: Run) -> None:
    from gateway import services as gw
    from gateway.models import Agent

    gw.agent_startup(user=None, agent=run.topo.agent)

    def running() -> bool:
        agent = Agent.objects.get(pk=run.topo.agent.pk)
        if agent.status in ("NOT_STARTED", "BROKEN"):
            raise BenchError(f"The agent did not start ({agent.status}): {agent.last_error_msg}")
        return agent.status == "RUNNING"

    _wait(running, START_TIMEOUT_S, "the agent to be RUNNING", run.worker.check, every=0.1)


def _stop_agent(topo: Topology, worker: WorkerProcess | None) -> None:
    from gateway import services as gw
    from gateway.models import Agent

    agent = Agent.objects.filter(pk=topo.agent.pk).first()
    if agent is None or agent.status in ("NOT_STARTED", "BROKEN"):
        return
    with contextlib.suppress(Exception):
        gw.agent_shutdown(user=None, agent=agent, mode="IMMEDIATE")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if Agent.objects.get(pk=agent.pk).status == "NOT_STARTED":
            return
        if worker is not None and worker.proc.poll() is not None:
            break
        time.sleep(0.1)
    # The process is gone without ending its session (or never answered): stop it here.
    Agent.objects.filter(pk=agent.pk).update(status="NOT_STARTED", start_token=None)


def _drop(topo: Topology, worker_hostname: str) -> None:
    from console.bench.queues import _drop as drop_queue_table
    from gateway import services as gw
    from jobs.models import Worker
    from queues import services as qs

    for job in topo.jobs:
        with contextlib.suppress(Exception):
            gw.job_remove(user=None, job=job, force=True)
    for fq in topo.foreign:
        with contextlib.suppress(Exception):
            gw.foreign_queue_unregister(user=None, foreign_queue=fq)
    for link in topo.links:
        with contextlib.suppress(Exception):
            gw.link_remove(user=None, link=link)
    if topo.agent is not None:
        with contextlib.suppress(Exception):
            gw.agent_remove(user=None, agent=topo.agent)
    if topo.table is not None:
        drop_queue_table(qs, topo.table)
    for cleanup in reversed(topo.cleanups):
        with contextlib.suppress(Exception):
            cleanup()
    Worker.objects.filter(hostname=worker_hostname).delete()


def run(*, scale: float = 1.0, baseline: bool = False, log: Log = print) -> dict[str, Any]:
    """Every workload of the suite; the result object (``baseline`` adds nothing here)."""
    from gateway import services as gw
    from gateway.selectors import console_database_role
    from queues import services as qs

    n = size_for(scale)
    conninfo = qs.conninfo()
    prefix = f"BGW_{secrets.token_hex(3).upper()}"
    out: dict[str, Any] = {"suite": "gateway", "scale": scale, "prefix": prefix, "n": n}
    with psycopg.connect(conninfo) as conn:
        out.update(server_settings(conn))
    out.update(batch_size=BATCH, target_ratio=TARGET_RATIO)
    pending = {t: why for t in ("AMQP", "MQTT", "NATS", "REDIS") if (why := driver_missing(t))}
    systems = [t for t in SYSTEM_WORKLOADS if t not in pending]
    for t in ("NATS", "REDIS"):
        if t not in SYSTEM_WORKLOADS and t not in pending:
            pending[t] = f"the suite has no {t} workload yet"
    log(
        f"gateway benchmark under {prefix} (scale {scale}: {n} messages per workload, batches "
        f"of {BATCH}, PostgreSQL {out['postgres_version']}, load {load_avg()})"
    )
    topo = Topology(prefix)
    worker: WorkerProcess | None = None
    hostname = f"{prefix.lower()}@{socket.gethostname()}"
    try:
        username, password = console_database_role()  # STARTUP needs an agent user
        topo.agent = gw.agent_create(
            user=None,
            name=prefix,
            username=username,
            password=password,
            comment="benchmark; removed when the run ends",
        )
        topo.table = qs.queue_table_create(
            user=None,
            name=f"{prefix}_QT",
            sort_order="enq_time",
            comment="benchmark; dropped when the run ends",
        )
        worker = WorkerProcess(topo.agent.celery_queue, prefix.lower())
        hostname = worker.hostname
        bench = Run(prefix, conninfo, topo, worker, log)
        _start_agent(bench)
        log(f"  agent {prefix} RUNNING on {hostname}")
        for system in systems:
            _await_server(system, log)
            out.update(SYSTEM_WORKLOADS[system](bench, n))
    finally:
        _stop_agent(topo, worker)
        if worker is not None:
            worker.stop()
            with contextlib.suppress(Exception):
                forget_broker_queue(topo.agent.celery_queue)
        _drop(topo, hostname)
    ratios: dict[str, bool] = {}
    for key, (limit, _link_type) in WORKLOADS.items():
        if key in out and limit in out:
            out[f"{key}_ratio"] = round(out[key] / out[limit], 3)
            ratios[key] = out[f"{key}_ratio"] >= TARGET_RATIO
    out["targets_met"] = ratios
    if pending:
        out["pending"] = pending
    out["load_end"] = load_avg()
    return out
