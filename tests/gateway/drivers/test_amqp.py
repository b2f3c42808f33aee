"""AMQP driver against the real RabbitMQ on 127.0.0.1:5672 (guest/guest); no database."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pika
import pytest

from gateway.drivers.amqp import AmqpDriver, amqp_to_aq_priority, aq_to_amqp_priority
from gateway.drivers.base import (
    BatchConversionError,
    Destination,
    ForeignError,
    GatewayMessage,
    PropertyError,
)

HOST, PORT = "127.0.0.1", 5672


def _props(**extra: object) -> dict:
    return AmqpDriver.validate_properties({"host": HOST, "port": PORT, **extra})


def _driver(**extra: object) -> AmqpDriver:
    return AmqpDriver(
        properties=_props(**extra), options={}, secret="guest", client_id="mgw-test", timeout=5
    )


@pytest.fixture
def admin() -> Iterator[pika.adapters.blocking_connection.BlockingChannel]:
    """A plain pika channel to create and inspect what the tests need."""
    conn = pika.BlockingConnection(
        pika.ConnectionParameters(HOST, PORT, credentials=pika.PlainCredentials("guest", "guest"))
    )
    yield conn.channel()
    conn.close()


@pytest.fixture
def names(admin) -> Iterator[dict[str, str]]:
    """Unique queue and exchange names, deleted afterwards."""
    tag = uuid.uuid4().hex[:10]
    n = {
        "queue": f"t.q.{tag}",
        "exchange": f"t.x.{tag}",
        "log": f"t.log.{tag}",
        "sub": f"sub{tag}",
        "exc": f"t.exc.{tag}",
    }
    admin.queue_declare(n["queue"], durable=True)
    admin.queue_declare(n["exc"], durable=True)
    admin.exchange_declare(n["exchange"], "topic", durable=True)
    yield n
    for q in (n["queue"], n["log"], n["exc"], "mgw." + n["sub"]):
        admin.queue_delete(q)
    admin.exchange_delete(n["exchange"])


def _full_message(i: int = 0) -> GatewayMessage:
    return GatewayMessage(
        body=b"\x00body-%d\xff" % i,
        msgid=f"m{i}",
        correlation=f"corr-{i}",
        priority=0,
        expiration=30.5,
        type_name="ORDER_T",
        content_type="application/octet-stream",
        headers={"s": "text", "n": 42, "big": 2**70, "f": 0.1 + 0.2, "yes": True, "no": False},
        enq_time=datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC),
    )


def _fetch_all(d: AmqpDriver, src: Destination, sub: str, n: int, timeout: float = 3) -> list:
    got: list = []
    for _ in range(20):
        if len(got) >= n:
            break
        got += d.fetch(src, sub, max_messages=n - len(got), timeout=timeout)
    return got


# -- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({}, "host"),
        ({"host": "h", "port": 0}, "port"),
        ({"host": "h", "port": 70000}, "port"),
        ({"host": "h", "port": "abc"}, "port"),
        ({"host": "h", "tls": "maybe"}, "tls"),
        ({"host": "h", "colour": "red"}, "colour"),
        ({"host": "h", "heartbeat": -1}, "heartbeat"),
        ({"host": "h", "outbound_log_queue": "amq.log"}, "outbound_log_queue"),
    ],
)
def test_bad_properties_name_the_field(given: dict, field: str) -> None:
    with pytest.raises(PropertyError) as e:
        AmqpDriver.validate_properties(given)
    assert e.value.field == field


def test_properties_are_coerced_and_defaulted() -> None:
    p = AmqpDriver.validate_properties({"host": " rabbit ", "port": "5671", "tls": "TRUE"})
    assert p["host"] == "rabbit"
    assert p["port"] == 5671
    assert p["tls"] is True
    assert p["tls_verify"] is True
    assert p["virtual_host"] == "/"
    assert p["heartbeat"] == 30
    assert "outbound_log_queue" not in p


def test_queue_names() -> None:
    AmqpDriver.validate_queue_name("orders", "QUEUE")
    AmqpDriver.validate_queue_name("amq.topic", "TOPIC")
    for name, domain, field in [
        ("amq.gen-x", "QUEUE", "provider_queue"),
        ("", "QUEUE", "provider_queue"),
        ("é" * 128, "QUEUE", "provider_queue"),
        ("orders", "STREAM", "domain"),
    ]:
        with pytest.raises(PropertyError) as e:
            AmqpDriver.validate_queue_name(name, domain)
        assert e.value.field == field


def test_priority_mapping_keeps_order_and_the_default() -> None:
    assert aq_to_amqp_priority(1) == 1
    assert amqp_to_aq_priority(1) == 1
    assert amqp_to_aq_priority(None) == 1
    assert [aq_to_amqp_priority(p) for p in (-9, -7, 0, 1, 2, 50)] == [9, 9, 2, 1, 0, 0]
    for p in range(-7, 3):
        assert amqp_to_aq_priority(aq_to_amqp_priority(p)) == p


# -- connection ------------------------------------------------------------------------------


def test_test_describes_the_server() -> None:
    d = _driver()
    try:
        text = d.test()
    finally:
        d.close()
    assert text.startswith("RabbitMQ ")
    assert "at 127.0.0.1:5672 vhost /" in text


def test_closed_port_and_bad_password_are_clear() -> None:
    d = AmqpDriver(
        properties=AmqpDriver.validate_properties({"host": HOST, "port": 1}),
        options={},
        secret="guest",
        client_id="t",
        timeout=2,
    )
    with pytest.raises(ForeignError, match=r"127\.0\.0\.1:1: connection refused"):
        d.test()
    bad = AmqpDriver(properties=_props(), options={}, secret="wrong", client_id="t", timeout=2)
    with pytest.raises(ForeignError, match="authentication failed for user 'guest'"):
        bad.test()
    vhost = _driver(virtual_host="no-such-vhost")
    with pytest.raises(ForeignError, match="virtual host 'no-such-vhost'"):
        vhost.test()


# -- outbound -> inbound ---------------------------------------------------------------------


def test_queue_round_trip_keeps_every_field_and_the_order(names) -> None:
    dest = Destination(names["queue"], "QUEUE")
    pub, sub = _driver(), _driver()
    try:
        msgs = [_full_message(i) for i in range(5)]
        msgs[1] = GatewayMessage(body=b"plain")  # defaults round-trip too
        pub.publish(dest, msgs, dedupe_ids=[f"job1:{i}" for i in range(5)], log_record=None)
        got = _fetch_all(sub, dest, "s", 5)
        assert [r.key for r in got] == [f"job1:{i}" for i in range(5)]
        first = got[0].message
        assert first.body == b"\x00body-0\xff" == got[0].raw
        assert first.msgid == "job1:0"
        assert first.correlation == "corr-0"
        assert first.priority == 0
        assert first.expiration == 30.5
        assert first.type_name == "ORDER_T"
        assert first.content_type == "application/octet-stream"
        assert first.headers == {
            "s": "text",
            "n": 42,
            "big": 2**70,
            "f": 0.1 + 0.2,
            "yes": True,
            "no": False,
        }
        assert type(first.headers["f"]) is float and type(first.headers["yes"]) is bool
        assert first.enq_time == datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)  # AMQP: seconds
        plain = got[1].message
        assert (plain.body, plain.priority, plain.expiration, plain.headers) == (
            b"plain",
            1,
            None,
            {},
        )
        assert (plain.correlation, plain.type_name, plain.content_type) == ("", "", "")
        assert plain.enq_time is None
        sub.ack(dest, "s", got)
    finally:
        pub.close()
        sub.close()


def test_native_amqp_message_is_read(names, admin) -> None:
    """What a plain AMQP producer sends: priority absent, typed and odd headers."""
    admin.basic_publish(
        "",
        names["queue"],
        b"hi",
        pika.BasicProperties(
            headers={"count": 3, "nested": {"a": 1}, "raw": b"bytes"}, priority=9, expiration="1500"
        ),
    )
    d = _driver()
    try:
        [r] = _fetch_all(d, Destination(names["queue"], "QUEUE"), "s", 1)
        assert r.key is None and r.message.msgid is None
        assert r.message.priority == -7
        assert r.message.expiration == 1.5
        assert r.message.headers == {"count": 3, "nested": '{"a":1}', "raw": "bytes"}
        d.ack(Destination(names["queue"], "QUEUE"), "s", [r])
    finally:
        d.close()


def test_topic_publishes_with_routing_key_and_subscription_receives(names) -> None:
    src = Destination(names["exchange"], "TOPIC", {"BindingKey": "orders.*"})
    dest = Destination(names["exchange"], "TOPIC", {"RoutingKey": "orders.new"})
    other = Destination(names["exchange"], "TOPIC", {"RoutingKey": "invoices.new"})
    d = _driver()
    try:
        d.subscribe(src, names["sub"])
        d.subscribe(src, names["sub"])  # idempotent
        d.publish(
            dest,
            [GatewayMessage(body=b"a"), GatewayMessage(body=b"b")],
            dedupe_ids=["1", "2"],
            log_record=None,
        )
        # No binding matches: publisher confirms report it as unroutable.
        with pytest.raises(ForeignError, match=r"no queue is bound to exchange .* 'invoices\.new'"):
            d.publish(other, [GatewayMessage(body=b"c")], dedupe_ids=["3"], log_record=None)
        got = _fetch_all(d, src, names["sub"], 2)
        assert [r.message.body for r in got] == [b"a", b"b"]
        d.ack(src, names["sub"], got)
        assert d.fetch(src, names["sub"], max_messages=5, timeout=0.2) == []
        d.unsubscribe(src, names["sub"])
    finally:
        d.close()
    check = _driver()
    try:
        with pytest.raises(ForeignError, match=f"queue 'mgw.{names['sub']}' does not exist"):
            check.fetch(src, names["sub"], max_messages=1, timeout=0.1)
    finally:
        check.close()


def test_missing_queue_or_exchange_is_a_foreign_error(names) -> None:
    d = _driver()
    try:
        missing = Destination("t.missing." + uuid.uuid4().hex, "QUEUE")
        with pytest.raises(ForeignError, match=r"queue 't\.missing\..*' does not exist"):
            d.publish(missing, [GatewayMessage(body=b"x")], dedupe_ids=["1"], log_record=None)
        with pytest.raises(ForeignError, match=r"'t\.missing\..*' does not exist"):
            d.fetch(missing, "s", max_messages=1, timeout=0.1)
        with pytest.raises(ForeignError, match="exchange 'nope-x' not found"):
            d.publish(
                Destination("nope-x", "TOPIC"),
                [GatewayMessage(body=b"x")],
                dedupe_ids=["1"],
                log_record=None,
            )
        with pytest.raises(ForeignError, match="exchange 'nope-x' does not exist"):
            d.subscribe(Destination("nope-x", "TOPIC"), "s")
        # The driver recovers on the same connection after those channel errors.
        dest = Destination(names["queue"], "QUEUE")
        d.publish(dest, [GatewayMessage(body=b"ok")], dedupe_ids=["ok"], log_record=None)
        [r] = _fetch_all(d, dest, "s", 1)
        assert r.message.body == b"ok"
    finally:
        d.close()


def test_non_scalar_header_refuses_the_batch_before_sending(names, admin) -> None:
    dest = Destination(names["queue"], "QUEUE")
    d = _driver()
    try:
        batch = [GatewayMessage(body=b"ok"), GatewayMessage(body=b"bad", headers={"l": [1, 2]})]
        with pytest.raises(BatchConversionError) as e:
            d.publish(dest, batch, dedupe_ids=["1", "2"], log_record=None)
        assert e.value.index == 1
        assert "'l'" in e.value.reason and "list" in e.value.reason
    finally:
        d.close()
    assert admin.queue_declare(names["queue"], passive=True).method.message_count == 0


def test_unacked_messages_come_back_with_the_same_key_and_acked_ones_do_not(names) -> None:
    dest = Destination(names["queue"], "QUEUE")
    d = _driver()
    d.publish(
        dest,
        [GatewayMessage(body=b"%d" % i) for i in range(6)],
        dedupe_ids=[f"k{i}" for i in range(6)],
        log_record=None,
    )
    first = _fetch_all(d, dest, "s", 3)
    assert [r.key for r in first] == ["k0", "k1", "k2"]
    d.ack(dest, "s", first)
    second = _fetch_all(d, dest, "s", 3)
    assert [r.key for r in second] == ["k3", "k4", "k5"]
    d.close()  # not acked: the broker requeues them
    again = _driver()
    try:
        back = _fetch_all(again, dest, "s", 3)
        assert [r.key for r in back] == ["k3", "k4", "k5"]
        assert [r.message.body for r in back] == [b"3", b"4", b"5"]
        again.ack(dest, "s", back)
        assert again.fetch(dest, "s", max_messages=10, timeout=0.3) == []
    finally:
        again.close()


def test_partial_ack_leaves_the_rest_unacked(names) -> None:
    dest = Destination(names["queue"], "QUEUE")
    d = _driver()
    d.publish(
        dest,
        [GatewayMessage(body=b"%d" % i) for i in range(3)],
        dedupe_ids=["a", "b", "c"],
        log_record=None,
    )
    got = _fetch_all(d, dest, "s", 3)
    d.ack(dest, "s", [got[1]])  # not a prefix: acknowledged one by one
    d.close()
    again = _driver()
    try:
        assert [r.key for r in _fetch_all(again, dest, "s", 2)] == ["a", "c"]
    finally:
        again.close()


def test_transactional_publish_writes_one_log_record_per_job(names, admin) -> None:
    dest = Destination(names["queue"], "QUEUE")
    d = _driver(outbound_log_queue=names["log"])
    try:
        assert d.read_outbound_log("J1") is None
        d.publish(
            dest,
            [GatewayMessage(body=b"1")],
            dedupe_ids=["J1:1"],
            log_record={"job": "J1", "last": 1},
        )
        d.publish(
            dest,
            [GatewayMessage(body=b"2"), GatewayMessage(body=b"3")],
            dedupe_ids=["J1:2", "J1:3"],
            log_record={"job": "J1", "last": 3},
        )
        d.publish(
            dest,
            [GatewayMessage(body=b"x")],
            dedupe_ids=["J2:1"],
            log_record={"job": "J2", "last": 1},
        )
        assert d.read_outbound_log("J1") == {"job": "J1", "last": 3}
        assert d.read_outbound_log("J2") == {"job": "J2", "last": 1}
        # Reading is not destructive, and older records of a job were removed in the tx.
        assert d.read_outbound_log("J1") == {"job": "J1", "last": 3}
        assert admin.queue_declare(names["log"], passive=True).method.message_count == 2
        assert admin.queue_declare(names["queue"], passive=True).method.message_count == 4
        with pytest.raises(ForeignError, match="does not exist"):
            d.publish(
                Destination("t.none." + uuid.uuid4().hex, "QUEUE"),
                [GatewayMessage(body=b"z")],
                dedupe_ids=["J1:9"],
                log_record={"job": "J1", "last": 9},
            )
        assert d.read_outbound_log("J1") == {"job": "J1", "last": 3}
        d.clear_outbound_log("J1")
        assert d.read_outbound_log("J1") is None
        assert d.read_outbound_log("J2") == {"job": "J2", "last": 1}
        got = _fetch_all(d, dest, "s", 4)
        assert [r.key for r in got] == ["J1:1", "J1:2", "J1:3", "J2:1"]
        assert got[0].message.priority == 1
    finally:
        d.close()


def test_publish_raw_keeps_the_body_and_gives_the_reason(names) -> None:
    dest = Destination(names["exc"], "QUEUE")
    d = _driver()
    try:
        d.publish_raw(dest, b"\xff\xfe not utf8", reason="bad header 'x-death'")
        [r] = _fetch_all(d, dest, "s", 1)
        assert r.raw == b"\xff\xfe not utf8"
        assert r.message.headers == {"mgw-exception-reason": "bad header 'x-death'"}
    finally:
        d.close()


def test_a_batch_is_pipelined_and_ordered(names) -> None:
    dest = Destination(names["queue"], "QUEUE")
    d = _driver()
    try:
        ids = [f"b{i}" for i in range(300)]
        for start in range(0, 300, 100):
            d.publish(
                dest,
                [GatewayMessage(body=i.encode()) for i in ids[start : start + 100]],
                dedupe_ids=ids[start : start + 100],
                log_record=None,
            )
        got: list = []
        while len(got) < 300:
            batch = d.fetch(dest, "s", max_messages=100, timeout=2)
            assert batch, "messages missing"
            d.ack(dest, "s", batch)
            got += batch
        assert [r.key for r in got] == ids
    finally:
        d.close()


def test_a_dropped_connection_is_reopened_on_the_next_call(names) -> None:
    import socket

    dest = Destination(names["queue"], "QUEUE")
    d = _driver()
    try:
        d.publish(dest, [GatewayMessage(body=b"1")], dedupe_ids=["1"], log_record=None)
        d._conn._impl._transport._sock.shutdown(socket.SHUT_RDWR)  # the network goes away
        try:
            d.publish(dest, [GatewayMessage(body=b"2")], dedupe_ids=["2"], log_record=None)
        except ForeignError as e:
            assert "127.0.0.1:5672" in str(e)
            d.publish(dest, [GatewayMessage(body=b"2")], dedupe_ids=["2"], log_record=None)
        assert [r.key for r in _fetch_all(d, dest, "s", 2)] == ["1", "2"]
    finally:
        d.close()


def _idle(d: AmqpDriver, seconds: float, *, keep_alive: bool) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if keep_alive:
            d.keep_alive()  # what the agent calls for a job with nothing to do
        time.sleep(0.25)


@pytest.mark.parametrize("keep_alive", [True, False], ids=["kept_alive", "left_alone"])
def test_an_idle_link_keeps_its_connection_when_kept_alive(names, caplog, keep_alive) -> None:
    """A BlockingConnection answers heartbeats only while it is called: left alone past twice
    the heartbeat, RabbitMQ closes it (and pika logs ERRORs when it finds out); kept alive, the
    same connection carries the next message."""
    dest = Destination(names["queue"], "QUEUE")
    d = _driver(heartbeat=1)
    try:
        d.publish(dest, [GatewayMessage(body=b"1")], dedupe_ids=["1"], log_record=None)
        first = d._conn
        _idle(d, 4.5, keep_alive=keep_alive)
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger="pika"):
            d.publish(dest, [GatewayMessage(body=b"2")], dedupe_ids=["2"], log_record=None)
        assert (d._conn is first) is keep_alive
        assert bool(caplog.records) is not keep_alive
        assert [r.key for r in _fetch_all(d, dest, "s", 2)] == ["1", "2"]
    finally:
        d.close()
