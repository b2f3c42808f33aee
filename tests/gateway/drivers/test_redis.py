"""Redis Streams driver against the real Redis on 127.0.0.1:6379 (no auth), database 9; no
PostgreSQL. Each test uses keys with its own prefix and deletes them."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import redis

from gateway.drivers.base import (
    AT_LEAST_ONCE,
    EXACTLY_ONCE,
    BatchConversionError,
    Destination,
    ForeignError,
    GatewayMessage,
    PropertyError,
    Received,
)
from gateway.drivers.redis import RedisDriver

HOST, PORT, DB = "127.0.0.1", 6379, 9


@pytest.fixture
def admin() -> Iterator[redis.Redis]:
    r = redis.Redis(host=HOST, port=PORT, db=DB)
    yield r
    r.close()


@pytest.fixture
def keys(admin: redis.Redis) -> Iterator[dict[str, str]]:
    """Unique key names for this test, deleted afterwards."""
    tag = uuid.uuid4().hex[:10]
    names = {"stream": f"mgwt:{tag}:q", "log": f"mgwt:{tag}:log", "exc": f"mgwt:{tag}:exc"}
    yield names
    admin.delete(*admin.keys(f"mgwt:{tag}:*") or ["-"])


def _driver(keys: dict[str, str] | None = None, port: int = PORT, **extra: Any) -> RedisDriver:
    props = {"host": HOST, "port": port, "db": DB, **extra}
    if keys is not None:
        props.setdefault("outbound_log_queue", keys["log"])
    return RedisDriver(
        properties=RedisDriver.validate_properties(props),
        options={},
        secret=None,
        client_id="mgw-test",
        timeout=3,
    )


@pytest.fixture
def driver(keys: dict[str, str]) -> Iterator[RedisDriver]:
    d = _driver(keys)
    yield d
    d.close()


def _fetch_all(d: RedisDriver, src: Destination, sub: str, n: int) -> list[Received]:
    got: list[Received] = []
    deadline = time.monotonic() + 5
    while len(got) < n and time.monotonic() < deadline:
        got += d.fetch(src, sub, max_messages=n - len(got), timeout=0.5)
    return got


# -- validation --


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"port": 6379}, "host"),
        ({"host": "h", "port": 0}, "port"),
        ({"host": "h", "port": 70000}, "port"),
        ({"host": "h", "db": -1}, "db"),
        ({"host": "h", "db": "one"}, "db"),
        ({"host": "h", "tls_verify": "perhaps"}, "tls_verify"),
        ({"host": "h", "sentinel": "x"}, "sentinel"),
        ({"host": "h", "outbound_log_queue": "a log"}, "outbound_log_queue"),
    ],
)
def test_bad_properties_name_the_field(given: dict, field: str) -> None:
    with pytest.raises(PropertyError) as e:
        RedisDriver.validate_properties(given)
    assert e.value.field == field


def test_properties_are_coerced_and_defaulted() -> None:
    cleaned = RedisDriver.validate_properties({"host": "r1", "db": "3", "tls": "false"})
    assert (cleaned["port"], cleaned["db"], cleaned["tls"], cleaned["tls_verify"]) == (
        6379,
        3,
        False,
        True,
    )
    assert RedisDriver.inbound_guarantee[0] == EXACTLY_ONCE


def test_stream_key_rules() -> None:
    RedisDriver.validate_queue_name("orders:{eu}:new", "QUEUE")
    for bad in ("", "a b", "tab\there", "x" * 513):
        with pytest.raises(PropertyError) as e:
            RedisDriver.validate_queue_name(bad, "TOPIC")
        assert e.value.field == "provider_queue"
    with pytest.raises(PropertyError) as e:
        RedisDriver.validate_queue_name("a", "FANOUT")
    assert e.value.field == "domain"


# -- connection --


def test_test_describes_the_server(driver: RedisDriver) -> None:
    assert driver.test().startswith("Redis 7.")
    assert driver.test().endswith("at 127.0.0.1:6379 db 9")


def test_closed_port_is_a_clear_foreign_error() -> None:
    d = _driver(port=1)
    started = time.monotonic()
    with pytest.raises(ForeignError) as e:
        d.test()
    assert "127.0.0.1:1" in str(e.value)
    assert "connection refused" in str(e.value)
    assert time.monotonic() - started < 2  # no silent retries
    d.close()


def test_a_server_that_goes_away_and_comes_back_works_again(keys, tcp_proxy) -> None:
    proxy = tcp_proxy(PORT)
    d = _driver(keys, port=proxy.port)
    dest = Destination(keys["stream"], "QUEUE")
    try:
        d.publish(dest, [GatewayMessage(body=b"1")], dedupe_ids=["1"], log_record=None)
        proxy.stop()
        with pytest.raises(ForeignError) as e:
            d.publish(dest, [GatewayMessage(body=b"2")], dedupe_ids=["2"], log_record=None)
        assert f"127.0.0.1:{proxy.port}" in str(e.value)
        proxy.start()
        d.publish(dest, [GatewayMessage(body=b"2")], dedupe_ids=["2"], log_record=None)
        assert [r.raw for r in _fetch_all(d, dest, "s", 2)] == [b"1", b"2"]
    finally:
        d.close()


# -- outbound and inbound --


def test_round_trip_keeps_every_field_and_the_order(keys, driver: RedisDriver) -> None:
    dest = Destination(keys["stream"], "QUEUE")
    enq = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    first = GatewayMessage(
        body=b"\x00\xffbinary",
        msgid="m-1",
        correlation="corr-1",
        priority=0,
        expiration=600.0,
        type_name="ORDER",
        content_type="application/octet-stream",
        headers={"s": " two\nlines ", "i": -7, "f": 0.1, "b": False, "n": "42", "body": "x"},
        enq_time=enq,
    )
    batch = [first, *(GatewayMessage(body=f"m{i}".encode()) for i in range(2, 6))]
    driver.publish(dest, batch, dedupe_ids=list("abcde"), log_record=None)
    driver.subscribe(dest, "job-1")
    got = _fetch_all(driver, dest, "job-1", 5)
    assert [r.raw for r in got] == [b"\x00\xffbinary", b"m2", b"m3", b"m4", b"m5"]
    ids = [e[0].decode() for e in driver._client().xrange(keys["stream"])]
    assert [r.key for r in got] == [f"{keys['stream']}:{i}" for i in ids]
    m = got[0].message
    assert m is not None
    assert (m.body, m.msgid, m.correlation, m.priority) == (first.body, "m-1", "corr-1", 0)
    assert (m.type_name, m.content_type, m.enq_time) == ("ORDER", first.content_type, enq)
    assert m.headers == first.headers
    assert type(m.headers["i"]) is int and type(m.headers["b"]) is bool
    assert m.expiration is not None and 590 < m.expiration <= 600
    plain = got[1].message
    assert plain is not None
    assert (plain.priority, plain.expiration, plain.headers, plain.msgid) == (1, None, {}, None)
    assert plain.enq_time is not None and abs(time.time() - plain.enq_time.timestamp()) < 60
    driver.ack(dest, "job-1", got)


def test_the_log_record_is_written_with_the_batch_and_can_be_cleared(
    keys, driver: RedisDriver, admin: redis.Redis
) -> None:
    dest = Destination(keys["stream"], "QUEUE")
    record = {"job": "JOB_A", "last_msgid": "m-2", "count": 2}
    batch = [GatewayMessage(body=b"1"), GatewayMessage(body=b"2")]
    driver.publish(dest, batch, dedupe_ids=["1", "2"], log_record=record)
    assert admin.xlen(keys["stream"]) == 2
    assert driver.read_outbound_log("JOB_A") == record
    assert json.loads(admin.hget(keys["log"], "JOB_A")) == record
    assert driver.read_outbound_log("JOB_B") is None
    driver.clear_outbound_log("JOB_A")
    assert driver.read_outbound_log("JOB_A") is None


@pytest.mark.parametrize("broken", ["stream", "log"])
def test_no_log_record_when_the_transaction_cannot_apply(
    keys, driver: RedisDriver, admin: redis.Redis, broken: str
) -> None:
    admin.set(keys[broken], "not a stream or hash")  # XADD/HSET would fail inside EXEC
    dest = Destination(keys["stream"], "QUEUE")
    with pytest.raises(ForeignError, match="is a string"):
        driver.publish(
            dest, [GatewayMessage(body=b"1")], dedupe_ids=["1"], log_record={"job": "JOB_A"}
        )
    assert admin.get(keys[broken]) == b"not a stream or hash"
    other = keys["log"] if broken == "stream" else keys["stream"]
    assert not admin.exists(other)  # neither the entry nor the log record


def test_without_a_log_key_the_guarantee_is_at_least_once(keys) -> None:
    d = _driver(None)
    assert d.outbound_guarantee[0] == AT_LEAST_ONCE
    assert RedisDriver.outbound_guarantee[0] == EXACTLY_ONCE
    d.publish(
        Destination(keys["stream"], "QUEUE"),
        [GatewayMessage(body=b"1")],
        dedupe_ids=["1"],
        log_record={"job": "J"},
    )
    assert d.read_outbound_log("J") is None
    d.close()


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (GatewayMessage(body=b"x", headers={"list": [1]}), "not a scalar"),
        (GatewayMessage(body=b"x", headers={"none": None}), "not a scalar"),
        (GatewayMessage(body=b"x" * 11), "larger than the server's proto-max-bulk-len"),
    ],
)
def test_an_unconvertible_message_refuses_the_whole_batch(
    keys, driver: RedisDriver, admin: redis.Redis, bad: GatewayMessage, reason: str
) -> None:
    driver._max_bulk = 10  # as if the server's proto-max-bulk-len were 10 bytes
    batch = [GatewayMessage(body=b"ok"), GatewayMessage(body=b"ok"), bad]
    with pytest.raises(BatchConversionError) as e:
        driver.publish(
            Destination(keys["stream"], "QUEUE"), batch, dedupe_ids=list("abc"), log_record=None
        )
    assert e.value.index == 2
    assert reason in e.value.reason
    assert not admin.exists(keys["stream"])


def test_max_len_trims_the_stream(keys, driver: RedisDriver, admin: redis.Redis) -> None:
    dest = Destination(keys["stream"], "QUEUE", {"MaxLen": "10"})
    batch = [GatewayMessage(body=str(i).encode()) for i in range(1000)]
    driver.publish(dest, batch, dedupe_ids=[str(i) for i in range(1000)], log_record=None)
    assert admin.xlen(keys["stream"]) < 1000
    last = admin.xrevrange(keys["stream"], count=1)[0][1][b"body"]
    assert last == b"999"


def test_pending_entries_come_back_first_to_the_same_consumer(keys) -> None:
    dest = Destination(keys["stream"], "QUEUE")
    crashed = _driver(keys)
    crashed.subscribe(dest, "sub")
    crashed.publish(
        dest,
        [GatewayMessage(body=b"a"), GatewayMessage(body=b"b")],
        dedupe_ids=["a", "b"],
        log_record=None,
    )
    first = _fetch_all(crashed, dest, "sub", 2)
    crashed.close()  # the runner died before acknowledging
    restarted = _driver(keys)  # a new driver object, same consumer name
    try:
        restarted.publish(dest, [GatewayMessage(body=b"c")], dedupe_ids=["c"], log_record=None)
        again = restarted.fetch(dest, "sub", max_messages=2, timeout=0.5)
        assert [r.key for r in again] == [r.key for r in first]  # redeliveries before "c"
        restarted.ack(dest, "sub", again)
        rest = restarted.fetch(dest, "sub", max_messages=5, timeout=0.5)
        assert [r.raw for r in rest] == [b"c"]
        restarted.ack(dest, "sub", rest)
        assert restarted.fetch(dest, "sub", max_messages=5, timeout=0.2) == []
    finally:
        restarted.close()


def test_idle_entries_of_a_dead_consumer_are_claimed(keys) -> None:
    dest = Destination(keys["stream"], "QUEUE", {"ClaimIdle": "0.2"})
    dead = _driver(keys, client_id="agent-1")
    dead.subscribe(dest, "sub")
    dead.publish(dest, [GatewayMessage(body=b"a")], dedupe_ids=["a"], log_record=None)
    taken = _fetch_all(dead, dest, "sub", 1)
    dead.close()
    other = _driver(keys, client_id="agent-2")
    try:
        assert other.fetch(dest, "sub", max_messages=1, timeout=0.05) == []  # not idle yet
        time.sleep(0.3)
        claimed = other.fetch(dest, "sub", max_messages=1, timeout=0.05)
        assert [r.key for r in claimed] == [taken[0].key]
    finally:
        other.close()


def test_fetch_waits_at_most_the_timeout(keys, driver: RedisDriver) -> None:
    src = Destination(keys["stream"], "QUEUE", {"StartFrom": "$"})
    driver.subscribe(src, "sub")
    started = time.monotonic()
    assert driver.fetch(src, "sub", max_messages=10, timeout=0.4) == []
    assert 0.35 < time.monotonic() - started < 1.5


def test_start_from_new_skips_what_was_there(keys, driver: RedisDriver) -> None:
    src = Destination(keys["stream"], "TOPIC", {"StartFrom": "$"})
    driver.publish(src, [GatewayMessage(body=b"old")], dedupe_ids=["o"], log_record=None)
    driver.subscribe(src, "fresh")
    driver.subscribe(src, "fresh")  # idempotent
    driver.publish(src, [GatewayMessage(body=b"new")], dedupe_ids=["n"], log_record=None)
    assert [r.raw for r in _fetch_all(driver, src, "fresh", 1)] == [b"new"]


def test_unsubscribe_destroys_the_group(keys, driver: RedisDriver, admin: redis.Redis) -> None:
    src = Destination(keys["stream"], "QUEUE")
    driver.subscribe(src, "gone")
    assert [g["name"] for g in admin.xinfo_groups(keys["stream"])] == [b"gone"]
    driver.unsubscribe(src, "gone")
    assert admin.xinfo_groups(keys["stream"]) == []
    driver.unsubscribe(Destination(keys["exc"], "QUEUE"), "never")  # no stream: fine


def test_native_entries_without_gateway_fields(
    keys, driver: RedisDriver, admin: redis.Redis
) -> None:
    admin.xadd(keys["stream"], {"temperature": "21.5", "site": "eu"})
    admin.xadd(keys["stream"], {"body": b"x", "priority": "high"})
    got = _fetch_all(driver, Destination(keys["stream"], "QUEUE"), "native", 2)
    m = got[0].message
    assert m is not None
    assert (m.body, m.priority) == (b"", 1)
    assert m.headers == {"temperature": "21.5", "site": "eu"}
    assert json.loads(got[0].raw) == {"temperature": "21.5", "site": "eu"}
    assert got[1].message is None
    assert got[1].conversion_error and "high" in got[1].conversion_error
    assert got[1].raw == b"x"


def test_publish_raw_keeps_the_body_and_gives_the_reason(
    keys, driver: RedisDriver, admin: redis.Redis
) -> None:
    driver.publish_raw(Destination(keys["exc"], "QUEUE"), b"\x01raw", reason="bad priority")
    [(_id, fields)] = admin.xrange(keys["exc"])
    assert fields == {b"body": b"\x01raw", b"mgw_exception_reason": b"bad priority"}
