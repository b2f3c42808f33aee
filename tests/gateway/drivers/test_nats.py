"""NATS JetStream driver against the real nats-server on 127.0.0.1:4222 (JetStream, no auth);
no database. Each test makes its own stream and deletes it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import nats
import nats.js.errors
import pytest
from nats.js import JetStreamContext

from gateway import aio
from gateway.drivers.base import (
    EXACTLY_ONCE,
    BatchConversionError,
    Destination,
    ForeignError,
    GatewayMessage,
    PropertyError,
    Received,
)
from gateway.drivers.nats import NatsDriver, consumer_name

HOST, PORT = "127.0.0.1", 4222


def _driver(port: int = PORT, **extra: Any) -> NatsDriver:
    props = NatsDriver.validate_properties({"host": HOST, "port": port, **extra})
    return NatsDriver(properties=props, options={}, secret=None, client_id="mgw-test", timeout=3)


def _admin(work: Callable[[JetStreamContext], Awaitable[Any]]) -> Any:
    """Run ``work`` with a plain nats-py JetStream context (setup and inspection)."""

    async def go() -> Any:
        nc = await nats.connect(f"nats://{HOST}:{PORT}")
        try:
            return await work(nc.jetstream(timeout=3))
        finally:
            await nc.close()

    return aio.run(go())


@pytest.fixture
def stream() -> Iterator[dict[str, str]]:
    """A stream ``mgwt_<tag>`` capturing ``mgwt.<tag>.>``, deleted afterwards."""
    tag = uuid.uuid4().hex[:10]
    names = {"stream": f"mgwt_{tag}", "subject": f"mgwt.{tag}.q", "exc": f"mgwt.{tag}.exc"}
    _admin(lambda js: js.add_stream(name=names["stream"], subjects=[f"mgwt.{tag}.>"]))
    yield names
    _admin(lambda js: js.delete_stream(names["stream"]))


@pytest.fixture
def driver() -> Iterator[NatsDriver]:
    d = _driver()
    yield d
    d.close()


def _stored(stream: str) -> int:
    async def work(js: JetStreamContext) -> int:
        return (await js.stream_info(stream)).state.messages

    return _admin(work)


def _fetch_all(d: NatsDriver, src: Destination, sub: str, n: int) -> list[Received]:
    got: list[Received] = []
    deadline = time.monotonic() + 5
    while len(got) < n and time.monotonic() < deadline:
        got += d.fetch(src, sub, max_messages=n - len(got), timeout=0.5)
    return got


# -- validation --


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"port": 4222}, "host"),
        ({"host": "h", "port": 0}, "port"),
        ({"host": "h", "port": 65536}, "port"),
        ({"host": "h", "port": "x"}, "port"),
        ({"host": "h", "tls": "maybe"}, "tls"),
        ({"host": "h", "vhost": "/"}, "vhost"),
        ({"host": "h", "tls_ca_file": "/ca.pem"}, "tls_ca_file"),
    ],
)
def test_bad_properties_name_the_field(given: dict, field: str) -> None:
    with pytest.raises(PropertyError) as e:
        NatsDriver.validate_properties(given)
    assert e.value.field == field


def test_properties_are_coerced_and_defaulted() -> None:
    cleaned = NatsDriver.validate_properties({"host": " nats1 ", "port": "4223", "tls": "true"})
    assert cleaned["host"] == "nats1"
    assert cleaned["port"] == 4223
    assert cleaned["tls"] is True
    assert cleaned["tls_verify"] is True
    assert NatsDriver.validate_properties({"host": "h"})["port"] == 4222
    assert NatsDriver.outbound_guarantee[0] == NatsDriver.inbound_guarantee[0] == EXACTLY_ONCE


def test_subject_rules() -> None:
    NatsDriver.validate_queue_name("orders.eu.>", "TOPIC")
    NatsDriver.validate_queue_name("orders.*.new", "QUEUE")
    for bad in ("", "a b", "a..b", "a.>.b", "a.b*", ".a"):
        with pytest.raises(PropertyError) as e:
            NatsDriver.validate_queue_name(bad, "QUEUE")
        assert e.value.field == "provider_queue"
    with pytest.raises(PropertyError) as e:
        NatsDriver.validate_queue_name("a", "FANOUT")
    assert e.value.field == "domain"


def test_consumer_names_are_safe_and_distinct() -> None:
    assert consumer_name("job_1") == "job_1"
    a, b = consumer_name("MGW.JOB 1"), consumer_name("MGW_JOB_1")
    assert a != b
    assert set(a) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
    assert len(consumer_name("x" * 300)) <= 48


# -- connection --


def test_test_describes_the_server(driver: NatsDriver) -> None:
    text = driver.test()
    assert text.startswith("NATS 2.")
    assert "127.0.0.1:4222, JetStream enabled" in text


def test_closed_port_is_a_clear_foreign_error() -> None:
    d = _driver(port=1)
    try:
        started = time.monotonic()
        with pytest.raises(ForeignError) as e:
            d.test()
        assert "127.0.0.1:1" in str(e.value)
        assert "connection refused" in str(e.value)
        assert time.monotonic() - started < 3
    finally:
        d.close()


def test_a_server_that_goes_away_and_comes_back_works_again(stream, tcp_proxy) -> None:
    proxy = tcp_proxy(PORT)
    d = _driver(port=proxy.port)
    dest = Destination(stream["subject"], "QUEUE")
    try:
        d.publish(dest, [GatewayMessage(body=b"1")], dedupe_ids=["d1"], log_record=None)
        proxy.stop()
        with pytest.raises(ForeignError) as e:
            d.publish(dest, [GatewayMessage(body=b"2")], dedupe_ids=["d2"], log_record=None)
        assert f"127.0.0.1:{proxy.port}" in str(e.value)
        proxy.start()
        d.publish(dest, [GatewayMessage(body=b"2")], dedupe_ids=["d2"], log_record=None)
        assert [r.raw for r in _fetch_all(d, dest, "s", 2)] == [b"1", b"2"]
    finally:
        d.close()


# -- outbound and inbound --


def test_round_trip_keeps_every_field_and_the_order(stream, driver: NatsDriver) -> None:
    dest = Destination(stream["subject"], "QUEUE")
    enq = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    first = GatewayMessage(
        body=b"\x00\xffbinary",
        msgid="m-1",
        correlation="corr-1",
        priority=3,
        expiration=600.0,
        type_name="ORDER",
        content_type="application/octet-stream",
        headers={"s": "text é", "i": 42, "f": 1.5, "b": True, "n": "42", "empty": ""},
        enq_time=enq,
    )
    batch = [first, *(GatewayMessage(body=f"m{i}".encode()) for i in range(2, 6))]
    driver.publish(dest, batch, dedupe_ids=[f"d{i}" for i in range(5)], log_record=None)
    driver.subscribe(dest, "job-1")
    got = _fetch_all(driver, dest, "job-1", 5)
    assert [r.raw for r in got] == [b"\x00\xffbinary", b"m2", b"m3", b"m4", b"m5"]
    assert [r.key for r in got] == [f"{stream['stream']}:{i}" for i in range(1, 6)]
    m = got[0].message
    assert m is not None
    assert (m.body, m.msgid, m.correlation, m.priority) == (first.body, "m-1", "corr-1", 3)
    assert (m.type_name, m.content_type, m.enq_time) == ("ORDER", first.content_type, enq)
    assert m.headers == first.headers
    assert type(m.headers["i"]) is int and type(m.headers["b"]) is bool
    assert m.expiration is not None and 590 < m.expiration <= 600
    plain = got[1].message
    assert plain is not None
    # Defaults come back as defaults; the dedupe id stands in for the missing message id.
    assert (plain.priority, plain.expiration, plain.headers, plain.msgid) == (1, None, {}, "d1")
    assert plain.enq_time is not None and plain.enq_time.tzinfo is not None
    driver.ack(dest, "job-1", got)


def test_a_republished_batch_is_stored_once(stream, driver: NatsDriver) -> None:
    dest = Destination(stream["subject"], "QUEUE")
    batch = [GatewayMessage(body=f"{i}".encode()) for i in range(3)]
    ids = ["job1:1", "job1:2", "job1:3"]
    driver.publish(dest, batch, dedupe_ids=ids, log_record=None)
    driver.publish(dest, batch, dedupe_ids=ids, log_record=None)  # the runner retried
    assert _stored(stream["stream"]) == 3
    assert driver.read_outbound_log("job1") is None


def test_a_large_batch_is_pipelined_in_order(stream, driver: NatsDriver) -> None:
    dest = Destination(stream["subject"], "QUEUE", {"Stream": stream["stream"]})
    batch = [GatewayMessage(body=str(i).encode()) for i in range(500)]
    started = time.monotonic()
    driver.publish(dest, batch, dedupe_ids=[f"p{i}" for i in range(500)], log_record=None)
    assert time.monotonic() - started < 2  # 500 serial round trips would not be this quick
    got = _fetch_all(driver, dest, "bulk", 500)
    assert [int(r.raw) for r in got] == list(range(500))


def test_a_subject_without_a_stream_is_a_foreign_error(driver: NatsDriver) -> None:
    dest = Destination(f"nostream.{uuid.uuid4().hex}", "QUEUE")
    with pytest.raises(ForeignError, match="no JetStream stream captures subject"):
        driver.publish(dest, [GatewayMessage(body=b"x")], dedupe_ids=["x"], log_record=None)
    with pytest.raises(ForeignError, match="wildcard"):
        driver.publish(
            Destination("a.*", "TOPIC"),
            [GatewayMessage(body=b"x")],
            dedupe_ids=["x"],
            log_record=None,
        )


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (GatewayMessage(body=b"x", headers={"list": [1, 2]}), "not a scalar"),
        (GatewayMessage(body=b"x", headers={"bad name": "v"}), "not a NATS header name"),
        (GatewayMessage(body=b"x", headers={"Nats-Msg-Id": "v"}), "reserved"),
        (GatewayMessage(body=b"x", headers={"k": "two\nlines"}), "line breaks"),
        (GatewayMessage(body=b"x" * (1024 * 1024 + 1)), "larger than the limit"),
    ],
)
def test_an_unconvertible_message_refuses_the_whole_batch(
    stream, driver: NatsDriver, bad: GatewayMessage, reason: str
) -> None:
    dest = Destination(stream["subject"], "QUEUE")
    batch = [GatewayMessage(body=b"ok"), bad, GatewayMessage(body=b"ok")]
    with pytest.raises(BatchConversionError) as e:
        driver.publish(dest, batch, dedupe_ids=["a", "b", "c"], log_record=None)
    assert e.value.index == 1
    assert reason in e.value.reason
    assert _stored(stream["stream"]) == 0


def test_unacked_messages_come_back_with_the_same_key_and_acked_ones_do_not(
    stream, driver: NatsDriver
) -> None:
    dest = Destination(stream["subject"], "QUEUE", {"AckWait": "1"})
    driver.publish(
        dest,
        [GatewayMessage(body=b"a"), GatewayMessage(body=b"b")],
        dedupe_ids=["a", "b"],
        log_record=None,
    )
    driver.subscribe(dest, "redeliver")
    first = _fetch_all(driver, dest, "redeliver", 2)
    assert len(first) == 2
    assert driver.fetch(dest, "redeliver", max_messages=2, timeout=0.2) == []  # not yet
    time.sleep(1.2)  # past AckWait
    again = _fetch_all(driver, dest, "redeliver", 2)
    assert [r.key for r in again] == [r.key for r in first]
    driver.ack(dest, "redeliver", again)
    time.sleep(1.2)
    assert driver.fetch(dest, "redeliver", max_messages=2, timeout=0.3) == []


def test_a_fetch_whose_empty_answer_is_read_after_its_timeout_returns_nothing(
    stream, driver: NatsDriver
) -> None:
    """The client's loop starved between the no-wait probe and reading the server's "no
    messages" answer (a loaded machine): nats-py then raises asyncio's TimeoutError, not its own,
    and the fetch must still answer "nothing" rather than fail the link. The stall is made on the
    client's own loop, after the probe has reached the real server and its answer has come back."""
    dest = Destination(stream["subject"], "QUEUE")
    driver.subscribe(dest, "late")
    assert driver.fetch(dest, "late", max_messages=1, timeout=0.3) == []  # binds the consumer
    nc = driver._nc
    assert nc is not None
    real = nc.publish

    async def stalled(subject: str, payload: bytes = b"", reply: str = "", headers: Any = None):
        await real(subject, payload, reply, headers)
        if subject.startswith("$JS.API.CONSUMER.MSG.NEXT."):
            await nc.flush()  # the probe answered: its "no messages" is queued for the fetch
            time.sleep(0.5)  # past the fetch's timeout, holding the loop

    nc.publish = stalled  # type: ignore[method-assign]
    try:
        # More than one: nats-py's batch fetch probes without waiting first (a fetch of one
        # sends only the waiting request, and times it from after sending).
        assert driver.fetch(dest, "late", max_messages=2, timeout=0.3) == []
    finally:
        nc.publish = real  # type: ignore[method-assign]
    driver.publish(dest, [GatewayMessage(body=b"after")], dedupe_ids=["x"], log_record=None)
    assert [r.raw for r in _fetch_all(driver, dest, "late", 1)] == [b"after"]


def test_deliver_policy_new_skips_what_was_there(stream, driver: NatsDriver) -> None:
    dest = Destination(stream["subject"], "TOPIC", {"DeliverPolicy": "new"})
    driver.publish(dest, [GatewayMessage(body=b"old")], dedupe_ids=["o"], log_record=None)
    driver.subscribe(dest, "fresh")
    driver.subscribe(dest, "fresh")  # idempotent
    driver.publish(dest, [GatewayMessage(body=b"new")], dedupe_ids=["n"], log_record=None)
    assert [r.raw for r in _fetch_all(driver, dest, "fresh", 1)] == [b"new"]


def test_unsubscribe_deletes_the_consumer(stream, driver: NatsDriver) -> None:
    dest = Destination(stream["subject"], "QUEUE")
    driver.subscribe(dest, "gone")

    async def consumers(js: JetStreamContext) -> list[str]:
        return [c.name for c in await js.consumers_info(stream["stream"])]

    assert _admin(consumers) == ["gone"]
    driver.unsubscribe(dest, "gone")
    assert _admin(consumers) == []
    driver.unsubscribe(dest, "gone")  # already gone: still fine


def test_native_message_without_gateway_headers(stream, driver: NatsDriver) -> None:
    async def work(js: JetStreamContext) -> None:
        await js.publish(stream["subject"], b"plain", headers={"X-Site": "eu"})
        await js.publish(stream["subject"], b"bad", headers={"MGW-Priority": "high"})

    _admin(work)
    src = Destination(stream["subject"], "QUEUE")
    got = _fetch_all(driver, src, "native", 2)
    m = got[0].message
    assert m is not None
    assert (m.body, m.msgid, m.priority, m.headers) == (b"plain", None, 1, {"X-Site": "eu"})
    assert got[1].message is None
    assert got[1].conversion_error and "high" in got[1].conversion_error
    assert got[1].raw == b"bad"
    assert got[1].key == f"{stream['stream']}:2"


def test_publish_raw_keeps_the_body_and_gives_the_reason(stream, driver: NatsDriver) -> None:
    exc = Destination(stream["exc"], "QUEUE")
    driver.publish_raw(exc, b"\x01raw", reason="bad priority\nheader")

    async def read(js: JetStreamContext) -> Any:
        return await js.get_msg(stream["stream"], 1)

    raw = _admin(read)
    assert raw.data == b"\x01raw"
    assert raw.headers["MGW-Exception-Reason"] == "bad priority header"
    assert "Nats-Msg-Id" not in raw.headers
