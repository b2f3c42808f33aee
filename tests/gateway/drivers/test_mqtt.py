"""MQTT driver against the real Mosquitto on 127.0.0.1:1883 (anonymous); no database."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from gateway.drivers.base import (
    BatchConversionError,
    Destination,
    ForeignError,
    GatewayMessage,
    PropertyError,
)
from gateway.drivers.mqtt import MqttDriver

HOST, PORT = "127.0.0.1", 1883


def _driver(**extra: object) -> MqttDriver:
    props = MqttDriver.validate_properties({"host": HOST, "port": PORT, **extra})
    return MqttDriver(properties=props, options={}, secret=None, client_id="mgw-test", timeout=5)


@pytest.fixture
def topic() -> str:
    return f"mgw-test/{uuid.uuid4().hex[:10]}"


@pytest.fixture
def sub() -> Iterator[str]:
    """A subscription name whose persistent session is ended afterwards."""
    name = f"s{uuid.uuid4().hex[:10]}"
    yield name
    for protocol in ("5", "3.1.1"):
        d = _driver(protocol=protocol)
        d.unsubscribe(Destination("x", "TOPIC"), name)
        d.close()


def _fetch_all(d: MqttDriver, src: Destination, sub: str, n: int) -> list:
    got: list = []
    for _ in range(20):
        if len(got) >= n:
            break
        got += d.fetch(src, sub, max_messages=n - len(got), timeout=3)
    return got


def _session_present(client_id: str) -> bool:
    """Connect as ``client_id`` without a clean start and report whether a session existed."""
    seen: dict[str, bool] = {}
    done = threading.Event()
    c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)

    def on_connect(_c, _u, flags, _rc, _p) -> None:
        seen["present"] = flags.session_present
        done.set()

    c.on_connect = on_connect
    props = Properties(PacketTypes.CONNECT)
    props.SessionExpiryInterval = 0  # and leave nothing behind
    c.connect(HOST, PORT, clean_start=False, properties=props)
    c.loop_start()
    assert done.wait(5)
    c.disconnect()
    c.loop_stop()
    return seen["present"]


# -- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({}, "host"),
        ({"host": "h", "port": 65536}, "port"),
        ({"host": "h", "protocol": "4"}, "protocol"),
        ({"host": "h", "keepalive": 70000}, "keepalive"),
        ({"host": "h", "tls_verify": "sometimes"}, "tls_verify"),
        ({"host": "h", "virtual_host": "/"}, "virtual_host"),
        ({"host": "h", "outbound_log_queue": "log"}, "outbound_log_queue"),
    ],
)
def test_bad_properties_name_the_field(given: dict, field: str) -> None:
    with pytest.raises(PropertyError) as e:
        MqttDriver.validate_properties(given)
    assert e.value.field == field


def test_properties_are_coerced_and_defaulted() -> None:
    p = MqttDriver.validate_properties({"host": "broker", "protocol": "3.1.1", "tls": False})
    assert p == {
        "host": "broker",
        "port": 1883,
        "protocol": "3.1.1",
        "tls": False,
        "tls_verify": True,
        "keepalive": 30,
    }
    assert MqttDriver.validate_properties({"host": "b", "protocol": "5.0"})["protocol"] == "5"


def test_topic_names() -> None:
    MqttDriver.validate_queue_name("orders/+/new", "TOPIC")
    MqttDriver.validate_queue_name("orders/#", "TOPIC")
    MqttDriver.validate_destination_name("orders/eu/new", "TOPIC")
    with pytest.raises(PropertyError, match="only topics") as e:
        MqttDriver.validate_queue_name("orders", "QUEUE")
    assert e.value.field == "domain"
    for name in ("orders/#/x", "orders/a+", ""):
        with pytest.raises(PropertyError) as e:
            MqttDriver.validate_queue_name(name, "TOPIC")
        assert e.value.field == "provider_queue"
    for name in ("orders/+", "orders/#", "$SYS/x"):
        with pytest.raises(PropertyError) as e:
            MqttDriver.validate_destination_name(name, "TOPIC")
        assert e.value.field == "provider_queue"


# -- connection ------------------------------------------------------------------------------


def test_test_connects_and_a_closed_port_is_clear() -> None:
    d = _driver()
    try:
        assert d.test() == "MQTT broker at 127.0.0.1:1883 (protocol 5)"
    finally:
        d.close()
    closed = _driver(port=1)
    with pytest.raises(ForeignError, match=r"127\.0\.0\.1:1: connection refused"):
        closed.test()
    amqp = _driver(port=5672)  # something that is not MQTT
    with pytest.raises(ForeignError, match=r"127\.0\.0\.1:5672"):
        amqp.test()


# -- outbound -> inbound ---------------------------------------------------------------------


def test_mqtt5_round_trip_keeps_every_field_and_the_order(topic, sub) -> None:
    src = Destination(topic, "TOPIC")
    d = _driver()
    try:
        d.subscribe(src, sub)
        full = GatewayMessage(
            body=b"\x00\xffbody",
            msgid="m1",
            correlation="corr-1",
            priority=-3,
            expiration=9.2,
            type_name="ORDER_T",
            content_type="application/json",
            headers={"s": "text", "n": 42, "f": 0.1 + 0.2, "yes": True, "txt": "true"},
            enq_time=datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC),
        )
        batch = [full] + [GatewayMessage(body=b"%d" % i) for i in range(1, 10)]
        d.publish(src, batch, dedupe_ids=[f"J:{i}" for i in range(10)], log_record={"job": "J"})
        got = _fetch_all(d, src, sub, 10)
        assert [r.key for r in got] == [f"J:{i}" for i in range(10)]
        m = got[0].message
        assert m.body == got[0].raw == b"\x00\xffbody"
        assert m.msgid == "J:0"
        assert m.correlation == "corr-1"
        assert m.priority == -3
        assert m.expiration is not None and 9 <= m.expiration <= 10  # whole seconds, rounded up
        assert m.type_name == "ORDER_T"
        assert m.content_type == "application/json"
        assert m.headers == {"s": "text", "n": 42, "f": 0.1 + 0.2, "yes": True, "txt": "true"}
        assert type(m.headers["yes"]) is bool and type(m.headers["f"]) is float
        assert m.enq_time == datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
        plain = got[1].message
        assert (plain.priority, plain.expiration, plain.headers, plain.enq_time) == (
            1,
            None,
            {},
            None,
        )
        assert [r.message.body for r in got[1:]] == [b"%d" % i for i in range(1, 10)]
        d.ack(src, sub, got)
    finally:
        d.close()


def test_mqtt311_carries_the_body_only(topic, sub) -> None:
    src = Destination(topic, "TOPIC")
    d = _driver(protocol="3.1.1")
    try:
        d.subscribe(src, sub)
        d.publish(
            src,
            [GatewayMessage(body=b"hello", correlation="c", headers={"a": 1}, priority=0)],
            dedupe_ids=["k"],
            log_record=None,
        )
        [r] = _fetch_all(d, src, sub, 1)
        assert r.key is None
        assert r.message == GatewayMessage(body=b"hello")
        d.ack(src, sub, [r])
    finally:
        d.close()


def test_bad_destinations_and_non_scalar_headers_send_nothing(topic, sub) -> None:
    src = Destination(topic, "TOPIC")
    d = _driver()
    try:
        d.subscribe(src, sub)
        with pytest.raises(BatchConversionError) as e:
            d.publish(
                src,
                [GatewayMessage(body=b"ok"), GatewayMessage(body=b"x", headers={"d": {"a": 1}})],
                dedupe_ids=["1", "2"],
                log_record=None,
            )
        assert e.value.index == 1 and "'d'" in e.value.reason and "dict" in e.value.reason
        with pytest.raises(BatchConversionError, match="reserved"):
            d.publish(
                src,
                [GatewayMessage(body=b"x", headers={"message-id": "forged"})],
                dedupe_ids=["1"],
                log_record=None,
            )
        with pytest.raises(ForeignError, match="wildcards") as fe:
            d.publish(
                Destination(topic + "/#", "TOPIC"),
                [GatewayMessage(body=b"x")],
                dedupe_ids=["1"],
                log_record=None,
            )
        assert fe.value.field == "provider_queue"
        with pytest.raises(ForeignError, match="QoS must be 0, 1 or 2"):
            d.publish(
                Destination(topic, "TOPIC", {"QoS": "3"}),
                [GatewayMessage(body=b"x")],
                dedupe_ids=["1"],
                log_record=None,
            )
        assert d.fetch(src, sub, max_messages=5, timeout=0.3) == []
    finally:
        d.close()


def test_unacked_messages_come_back_to_a_new_driver_and_acked_ones_do_not(topic, sub) -> None:
    src = Destination(topic + "/+", "TOPIC")  # a filter with a wildcard
    dest = Destination(topic + "/a", "TOPIC", {"QoS": "2"})
    d = _driver()
    d.subscribe(src, sub)
    d.publish(
        dest,
        [GatewayMessage(body=b"%d" % i) for i in range(4)],
        dedupe_ids=[f"k{i}" for i in range(4)],
        log_record=None,
    )
    got = _fetch_all(d, src, sub, 4)
    assert [r.key for r in got] == ["k0", "k1", "k2", "k3"]
    d.ack(src, sub, got[:2])
    d.close()  # k2 and k3 not acknowledged
    again = _driver()
    try:
        back = _fetch_all(again, src, sub, 2)
        assert [r.key for r in back] == ["k2", "k3"]
        assert [r.message.body for r in back] == [b"2", b"3"]
        again.ack(src, sub, back)
        # Published while nobody is connected: the persistent session keeps it.
        again.close()
        d2 = _driver()
        d2.publish(dest, [GatewayMessage(body=b"later")], dedupe_ids=["k4"], log_record=None)
        d2.close()
        again = _driver()
        [late] = _fetch_all(again, src, sub, 1)
        assert (late.key, late.message.body) == ("k4", b"later")
        again.ack(src, sub, [late])
        assert again.fetch(src, sub, max_messages=5, timeout=0.3) == []
    finally:
        again.close()


def test_unsubscribe_ends_the_persistent_session(topic, sub) -> None:
    src = Destination(topic, "TOPIC")
    d = _driver()
    d.subscribe(src, sub)
    d.close()
    d = _driver()
    try:
        d.publish(
            src, [GatewayMessage(body=b"kept for the session")], dedupe_ids=["1"], log_record=None
        )
        d.unsubscribe(src, sub)
    finally:
        d.close()
    assert _session_present("mgw." + sub) is False


def test_publish_raw_keeps_the_body_and_gives_the_reason(topic, sub) -> None:
    src = Destination(topic, "TOPIC")
    d = _driver()
    try:
        d.subscribe(src, sub)
        d.publish_raw(
            Destination(topic, "TOPIC", {"QoS": "1"}), b"\xff\xfe raw", reason="bad priority"
        )
        [r] = _fetch_all(d, src, sub, 1)
        assert r.raw == b"\xff\xfe raw"
        assert r.message.headers == {"mgw-exception-reason": "bad priority"}
        d.ack(src, sub, [r])
    finally:
        d.close()


def test_native_mqtt5_message_without_gateway_properties(topic, sub) -> None:
    src = Destination(topic, "TOPIC")
    d = _driver()
    try:
        d.subscribe(src, sub)
        c = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
        c.connect(HOST, PORT)
        c.loop_start()
        props = Properties(PacketTypes.PUBLISH)
        props.UserProperty = [("colour", "red"), ("mgw-types", "{not json")]
        c.publish(topic, b"native", qos=1, properties=props).wait_for_publish(5)
        c.publish(topic, b"second", qos=1).wait_for_publish(5)
        c.disconnect()
        c.loop_stop()
        bad, ok = _fetch_all(d, src, sub, 2)
        assert bad.message is None and bad.raw == b"native" and bad.conversion_error
        assert ok.key is None and ok.message == GatewayMessage(body=b"second")
        d.ack(src, sub, [bad, ok])
    finally:
        d.close()


def test_a_dropped_connection_is_reopened_on_the_next_call(topic, sub) -> None:
    import socket
    import time

    src = Destination(topic, "TOPIC")
    d = _driver()
    try:
        d.subscribe(src, sub)
        d.publish(src, [GatewayMessage(body=b"1")], dedupe_ids=["1"], log_record=None)
        d._pub.client.socket().shutdown(socket.SHUT_RDWR)  # the network goes away
        d._subs[sub].client.socket().shutdown(socket.SHUT_RDWR)
        time.sleep(0.2)
        d.publish(src, [GatewayMessage(body=b"2")], dedupe_ids=["2"], log_record=None)
        got = _fetch_all(d, src, sub, 2)
        assert [r.key for r in got] == ["1", "2"]  # "1" redelivered to the resumed session
        d.ack(src, sub, got)
    finally:
        d.close()
