"""AMQP 0-9-1 driver (RabbitMQ) on pika's BlockingConnection; docs/gateway/amqp.md has the
conversion table and the delivery guarantees.

One connection per driver, opened lazily and dropped on any connection-level error so the next
call reconnects. Channels: ``confirm`` (publisher confirms, pipelined), ``tx`` (channel
transaction for the outbound log queue), ``admin`` (declares; a failed passive declare closes
it, so it is reopened lazily), ``log`` (reading the log queue) and one per consumer.
"""

from __future__ import annotations

import json
import logging
import math
import socket
import ssl
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, NamedTuple

import pika
import pika.exceptions as pex
from pika.adapters.blocking_connection import BlockingChannel, BlockingConnection
from pika.adapters.utils.connection_workflow import AMQPConnectorStackTimeout
from pika.spec import Basic, BasicProperties

from gateway.drivers.base import (
    AT_LEAST_ONCE,
    EXACTLY_ONCE,
    BatchConversionError,
    Destination,
    Driver,
    ForeignError,
    GatewayMessage,
    PropertyError,
    Received,
    clean_properties,
)

logger = logging.getLogger(__name__)

# Header carrying the types AMQP/MQTT cannot say natively: {"key": "float"|"int"}.
TYPES_HEADER = "mgw-types"
REASON_HEADER = "mgw-exception-reason"
JOB_HEADER = "mgw-job"
SEQ_HEADER = "mgw-seq"
SUBSCRIPTION_PREFIX = "mgw."
INT64 = (-(2**63), 2**63 - 1)


# -- helpers shared with the MQTT driver ------------------------------------------------------


def encode_header_value(key: str, value: Any, types: dict[str, str]) -> str | int | bool:
    """A scalar header value as AMQP can carry it; floats (and ints beyond 64 bits) travel as
    text with their type recorded in ``types`` so they come back as the same Python type."""
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if INT64[0] <= value <= INT64[1]:
            return value
        types[key] = "int"
        return str(value)
    if isinstance(value, float):
        types[key] = "float"
        return repr(value)
    raise ValueError(f"header {key!r} is a {type(value).__name__}: only str, int, float and bool")


def decode_typed(headers: dict[str, Any], types_raw: Any) -> None:
    """Undo ``encode_header_value``'s text encoding in place, from the ``mgw-types`` header."""
    if types_raw is None:
        return
    if isinstance(types_raw, bytes):
        types_raw = types_raw.decode("utf-8")
    types = json.loads(types_raw)
    if not isinstance(types, dict):
        raise ValueError(f"{TYPES_HEADER} is not a JSON object")
    for key, kind in types.items():
        parse = {"float": float, "int": int, "bool": _to_bool}.get(kind)
        if parse is None:
            raise ValueError(f"{TYPES_HEADER}: unknown type {kind!r} for header {key!r}")
        if key in headers:
            headers[key] = parse(str(headers[key]))


def _to_bool(text: str) -> bool:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    raise ValueError(f"not a boolean: {text!r}")


def aq_to_amqp_priority(priority: int) -> int:
    """AQ: smaller is more urgent, default 1. AMQP: 0-9, larger is more urgent. ``2 - p``
    keeps the order, maps the default 1 to 1, and is its own inverse on AQ -7..2."""
    return min(9, max(0, 2 - priority))


def amqp_to_aq_priority(priority: int | None) -> int:
    return 1 if priority is None else 2 - priority


def _root_cause(exc: BaseException) -> BaseException:
    """pika nests the socket error inside AMQPConnectionError args; find the innermost."""
    seen = 0
    while seen < 8:
        seen += 1
        inner = getattr(exc, "exception", None)  # pika's connector phase errors
        if not isinstance(inner, BaseException):
            inner = next((a for a in exc.args if isinstance(a, BaseException)), None)
        if inner is None:
            inner = exc.__cause__ or exc.__context__
        if inner is None or inner is exc:
            return exc
        exc = inner
    return exc


class DeliveryToken(NamedTuple):
    """Received.token: the delivery tag and the consumer channel it belongs to (tags are per
    channel; an ack for a channel that has since closed is dropped: the broker redelivers)."""

    epoch: int
    delivery_tag: int


@dataclass
class _Confirms:
    """Publisher-confirm bookkeeping for the pipelined publish on the confirm channel."""

    selected: bool = False
    next_tag: int = 1
    outstanding: set[int] = field(default_factory=set)
    nacked: int = 0
    returned: list[str] = field(default_factory=list)
    closed: BaseException | None = None


@dataclass
class _Consumer:
    channel: BlockingChannel
    queue: str
    epoch: int
    buffer: deque[tuple[Basic.Deliver, BasicProperties, bytes]] = field(default_factory=deque)
    unacked: set[int] = field(default_factory=set)


class AmqpDriver(Driver):
    link_type = "AMQP"
    properties = {
        "host": (True, "str", None, "Broker host name or address."),
        "port": (False, "int", 5672, "Broker port (5671 is the usual TLS port)."),
        "virtual_host": (False, "str", "/", "RabbitMQ virtual host."),
        "username": (False, "str", "guest", "User name (SASL PLAIN)."),
        "password": (False, "secret", None, "Password; stored encrypted."),
        "tls": (False, "bool", False, "Connect with TLS."),
        "tls_ca_file": (
            False,
            "str",
            None,
            "CA bundle (PEM) to verify the broker; system CAs if empty.",
        ),
        "tls_verify": (False, "bool", True, "Verify the broker's certificate and host name."),
        "heartbeat": (False, "int", 30, "AMQP heartbeat in seconds (0 disables)."),
        "client_id": (
            False,
            "str",
            None,
            "Connection name shown by the broker; default the agent's id.",
        ),
        "outbound_log_queue": (
            False,
            "str",
            None,
            "Durable queue for outbound log records; when set, each batch is published in a "
            "channel transaction with its log record (exactly once).",
        ),
    }
    link_options = {}
    queue_options = {
        "RoutingKey": "TOPIC destinations: routing key of published messages (default empty).",
        "BindingKey": "TOPIC sources: binding key of the subscription queue (default #).",
    }
    job_options = {}
    domains = ("QUEUE", "TOPIC")
    outbound_guarantee = (
        EXACTLY_ONCE,
        "EXACTLY_ONCE with an outbound log queue (batch and log record in one channel "
        "transaction; RabbitMQ makes it atomic across queues only if the broker does not crash "
        "mid-commit), AT_LEAST_ONCE otherwise (publisher confirms, stable message_id).",
    )
    inbound_guarantee = (
        AT_LEAST_ONCE,
        "Messages are acknowledged only after the PostgreSQL commit, so a crash redelivers "
        "them; the runner skips a redelivered message_id, which makes it exactly once for "
        "messages that carry one (all that MGW publishes), at least once for the others.",
    )

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._conn: BlockingConnection | None = None
        self._channels: dict[str, BlockingChannel] = {}
        self._confirms = _Confirms()
        self._consumers: dict[tuple[str, str, str], _Consumer] = {}
        self._epoch = 0
        self._log_declared = False
        self._tx_returned: list[int] = []
        self._checked_at = 0.0

    # -- validation --

    @classmethod
    def validate_properties(cls, properties: dict[str, Any]) -> dict[str, Any]:
        out = clean_properties(cls.properties, properties)
        if out["heartbeat"] < 0:
            raise PropertyError("heartbeat must be 0 or more seconds.", field="heartbeat")
        if len(out["virtual_host"].encode()) > 255:
            raise PropertyError("virtual_host is longer than 255 bytes.", field="virtual_host")
        if out.get("outbound_log_queue"):
            try:
                cls.validate_queue_name(out["outbound_log_queue"], "QUEUE")
            except PropertyError as e:
                raise PropertyError(str(e), field="outbound_log_queue") from None
        return out

    @classmethod
    def validate_queue_name(cls, name: str, domain: str) -> None:
        if domain not in cls.domains:
            raise PropertyError(f"Domain must be QUEUE or TOPIC, not {domain!r}.", field="domain")
        what = "queue" if domain == "QUEUE" else "exchange"
        if not name:
            raise PropertyError(f"The AMQP {what} name is empty.", field="provider_queue")
        if len(name.encode("utf-8")) > 255:
            raise PropertyError(
                f"AMQP {what} names are at most 255 bytes (UTF-8).", field="provider_queue"
            )
        # amq.* queues are server-named (exclusive, transient); amq.* exchanges such as
        # amq.topic are predeclared and fine to publish to and bind from.
        if domain == "QUEUE" and name.startswith("amq."):
            raise PropertyError(
                "AMQP queue names starting with 'amq.' are reserved for the broker.",
                field="provider_queue",
            )

    # -- connection --

    def _where(self) -> str:
        return f"AMQP broker {self.props.get('host')}:{self.props.get('port', 5672)}"

    def _parameters(self) -> pika.ConnectionParameters:
        p = self.props
        ssl_options = None
        if p.get("tls"):
            ctx = ssl.create_default_context(cafile=p.get("tls_ca_file") or None)
            if not p.get("tls_verify", True):
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            ssl_options = pika.SSLOptions(ctx, server_hostname=p["host"])
        return pika.ConnectionParameters(
            host=p["host"],
            port=int(p.get("port", 5672)),
            virtual_host=p.get("virtual_host", "/"),
            credentials=pika.PlainCredentials(p.get("username") or "guest", self.secret or ""),
            heartbeat=int(p.get("heartbeat", 30)),
            ssl_options=ssl_options,
            connection_attempts=1,
            socket_timeout=self.timeout,
            stack_timeout=self.timeout,
            blocked_connection_timeout=self.timeout,
            client_properties={"connection_name": p.get("client_id") or self.client_id},
        )

    def _reason(self, exc: BaseException) -> str:
        """A one-line cause a person can act on."""
        p = self.props
        if isinstance(exc, pex.ProbableAuthenticationError | pex.AuthenticationError):
            return f"authentication failed for user {p.get('username') or 'guest'!r}"
        if isinstance(exc, pex.ProbableAccessDeniedError):
            return f"access to virtual host {p.get('virtual_host', '/')!r} refused"
        if isinstance(exc, pex.IncompatibleProtocolError):
            return "the server does not speak AMQP 0-9-1"
        root = _root_cause(exc)
        if isinstance(root, ssl.SSLError | ssl.CertificateError):
            return f"TLS failed: {root}"
        if isinstance(root, ConnectionRefusedError):
            return "connection refused"
        if isinstance(root, socket.gaierror):
            return f"unknown host {p.get('host')!r}"
        if isinstance(root, TimeoutError | AMQPConnectorStackTimeout):
            return f"timed out after {self.timeout:g} s"
        if isinstance(exc, pex.ConnectionBlockedTimeout):
            return "the broker blocked the connection (resource alarm) for too long"
        if isinstance(root, FileNotFoundError):
            return f"TLS CA file not found: {p.get('tls_ca_file')}"
        return str(root) or type(root).__name__

    def _serviced(self) -> bool:
        """Whether the connection is open after answering what the broker sent (heartbeats
        above all: a BlockingConnection answers them only while it processes events), at most
        once a second; a connection found broken is dropped."""
        if self._conn is None or not self._conn.is_open:
            return False
        if time.monotonic() - self._checked_at < 1.0:
            return True
        try:
            self._conn.process_data_events(0)
        except (pex.AMQPError, OSError):
            self._drop()
            return False
        self._checked_at = time.monotonic()
        return True

    def keep_alive(self) -> None:
        # Without it an idle link missed its heartbeats: RabbitMQ closed the connection after
        # twice the heartbeat, and the next message found it gone (pika logged ERRORs).
        self._serviced()

    def _connection(self) -> BlockingConnection:
        # The broker may have dropped a connection idle for long (nothing is in flight now):
        # notice it here and reconnect quietly.
        if self._serviced():
            assert self._conn is not None
            return self._conn
        self._drop()
        try:
            self._conn = pika.BlockingConnection(self._parameters())
        except (pex.AMQPError, OSError, ssl.SSLError) as e:
            raise ForeignError(f"{self._where()}: {self._reason(e)}.") from e
        self._epoch += 1
        self._checked_at = time.monotonic()
        return self._conn

    def _drop(self) -> None:
        """Forget the connection (closing it when possible: the broker requeues unacked)."""
        conn, self._conn = self._conn, None
        self._channels.clear()
        self._consumers.clear()
        self._confirms = _Confirms()
        self._log_declared = False
        if conn is not None and conn.is_open:
            try:
                conn.close()
            except Exception:  # already broken: nothing more to do
                logger.debug("closing a broken AMQP connection", exc_info=True)

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        """Turn pika's errors into ForeignError naming the broker and what we were doing."""
        try:
            yield
        except pex.ChannelClosedByBroker as e:
            # The channel is gone, the connection is fine; the next call reopens the channel.
            text = e.reply_text if e.reply_code != 404 else f"not found ({e.reply_text})"
            raise ForeignError(f"{self._where()}: {action}: {text}.") from e
        except (pex.AMQPError, OSError) as e:
            self._drop()
            raise ForeignError(f"{self._where()}: {action}: {self._reason(e)}.") from e

    def _channel(self, kind: str) -> BlockingChannel:
        conn = self._connection()
        ch = self._channels.get(kind)
        if ch is not None and ch.is_open:
            return ch
        ch = conn.channel()
        if kind == "tx":
            ch.tx_select()
            ch.add_on_return_callback(lambda *_a: self._tx_returned.append(1))
        elif kind == "confirm":
            self._confirms = state = _Confirms()
            # pika's BlockingChannel waits for each confirm in basic_publish (one round trip
            # and, for persistent messages, one fsync per message); driving the underlying
            # channel lets a whole batch be in flight and waits once.
            impl = ch._impl
            impl.add_on_return_callback(self._on_return)
            impl.add_on_close_callback(self._on_confirm_close)

            def selected(_frame: Any) -> None:
                state.selected = True
                self._wake()

            impl.confirm_delivery(ack_nack_callback=self._on_confirm, callback=selected)
            self._wait(lambda: state.selected or state.closed is not None, "confirm.select")
        self._channels[kind] = ch
        return ch

    def _wake(self) -> None:
        # Ends the current process_data_events wait early (a ready event).
        if self._conn is not None and self._conn.is_open:
            self._conn.call_later(0, lambda: None)

    def _on_confirm(self, frame: Any) -> None:
        m = frame.method
        c = self._confirms
        if isinstance(m, Basic.Nack):
            c.nacked += 1
        if m.multiple:
            c.outstanding = {t for t in c.outstanding if t > m.delivery_tag}
        else:
            c.outstanding.discard(m.delivery_tag)
        if not c.outstanding:
            self._wake()

    def _on_return(self, _ch: Any, method: Basic.Return, _props: Any, _body: bytes) -> None:
        self._confirms.returned.append(
            f"{method.reply_text} (exchange {method.exchange!r}, routing key {method.routing_key!r})"
        )

    def _on_confirm_close(self, _ch: Any, reason: BaseException) -> None:
        self._confirms.closed = reason
        self._wake()

    def _wait(self, done: Callable[[], bool], action: str, timeout: float | None = None) -> bool:
        """Process I/O until ``done()`` or the timeout; False on timeout."""
        assert self._conn is not None
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self._conn.process_data_events(time_limit=remaining)
        return True

    def test(self) -> str:
        with self._guard("connect"):
            conn = self._connection()
            server = conn._impl.server_properties or {}
        product = server.get("product", "AMQP server")
        version = server.get("version", "")
        product = product.decode() if isinstance(product, bytes) else product
        version = version.decode() if isinstance(version, bytes) else version
        return (
            f"{product} {version} at {self.props['host']}:{self.props.get('port', 5672)} "
            f"vhost {self.props.get('virtual_host', '/')}"
        ).replace("  ", " ")

    def close(self) -> None:
        self._drop()

    # -- conversion --

    def _to_native(self, msg: GatewayMessage, message_id: str) -> BasicProperties:
        types: dict[str, str] = {}
        headers: dict[str, Any] = {}
        for key, value in msg.headers.items():
            if key == TYPES_HEADER:
                raise ValueError(f"header {key!r} is reserved by the gateway")
            if len(str(key).encode()) > 255:
                raise ValueError(f"header name {key[:40]!r}... is longer than 255 bytes")
            headers[str(key)] = encode_header_value(str(key), value, types)
        if types:
            headers[TYPES_HEADER] = json.dumps(types, separators=(",", ":"))
        for name, text in (
            ("content_type", msg.content_type),
            ("correlation", msg.correlation),
            ("type_name", msg.type_name),
            ("message id", message_id),
        ):
            if text and len(text.encode()) > 255:
                raise ValueError(f"{name} is longer than AMQP's 255-byte short string")
        expiration = None
        if msg.expiration is not None:
            if math.isnan(msg.expiration):
                raise ValueError("expiration is NaN")
            expiration = str(max(0, round(msg.expiration * 1000)))
        timestamp = None
        if msg.enq_time is not None:
            enq = msg.enq_time if msg.enq_time.tzinfo else msg.enq_time.replace(tzinfo=UTC)
            timestamp = int(enq.timestamp())
        return BasicProperties(
            content_type=msg.content_type or None,
            delivery_mode=2,
            priority=aq_to_amqp_priority(msg.priority),
            correlation_id=msg.correlation or None,
            expiration=expiration,
            message_id=message_id or None,
            timestamp=timestamp,
            type=msg.type_name or None,
            headers=headers or None,
        )

    @staticmethod
    def _from_native(props: BasicProperties, body: bytes) -> GatewayMessage:
        headers: dict[str, Any] = {}
        for key, value in (props.headers or {}).items():
            if key == TYPES_HEADER or value is None:
                continue
            if isinstance(value, bytes):
                value = value.decode("utf-8")  # UnicodeDecodeError -> conversion error
            elif isinstance(value, Decimal):
                value = float(value)
            elif isinstance(value, datetime):
                value = value.replace(tzinfo=value.tzinfo or UTC).isoformat()
            elif isinstance(value, list | dict):
                # e.g. RabbitMQ's x-death: kept readable, as JSON text.
                value = json.dumps(value, default=str, separators=(",", ":"))
            headers[key] = value
        decode_typed(headers, (props.headers or {}).get(TYPES_HEADER))
        expiration = None
        if props.expiration:
            expiration = int(props.expiration) / 1000
        return GatewayMessage(
            body=body,
            msgid=props.message_id,
            correlation=props.correlation_id or "",
            priority=amqp_to_aq_priority(props.priority),
            expiration=expiration,
            type_name=props.type or "",
            content_type=props.content_type or "",
            headers=headers,
            enq_time=datetime.fromtimestamp(props.timestamp, UTC) if props.timestamp else None,
        )

    # -- outbound --

    @staticmethod
    def _route(dest: Destination) -> tuple[str, str]:
        """(exchange, routing key): QUEUE via the default exchange, TOPIC to the exchange."""
        if dest.domain == "QUEUE":
            return "", dest.provider_name
        return dest.provider_name, dest.options.get("RoutingKey", "")

    def _unroutable(self, dest: Destination) -> str:
        if dest.domain == "QUEUE":
            return f"queue {dest.provider_name!r} does not exist (message unroutable)"
        return (
            f"no queue is bound to exchange {dest.provider_name!r} for routing key "
            f"{dest.options.get('RoutingKey', '')!r} (message unroutable)"
        )

    def publish(
        self,
        dest: Destination,
        messages: list[GatewayMessage],
        *,
        dedupe_ids: list[str],
        log_record: dict[str, Any] | None,
    ) -> None:
        if len(dedupe_ids) != len(messages):
            raise ValueError("publish needs one dedupe id per message")
        native: list[tuple[bytes, BasicProperties]] = []
        for i, (msg, dedupe) in enumerate(zip(messages, dedupe_ids, strict=True)):
            try:
                native.append((bytes(msg.body), self._to_native(msg, dedupe)))
            except (ValueError, TypeError) as e:
                raise BatchConversionError(i, str(e)) from e
        if not native and log_record is None:
            return
        if self.props.get("outbound_log_queue") and log_record is not None:
            self._publish_tx(dest, native, log_record)
        else:
            self._publish_confirmed(dest, native, f"publish to {dest.provider_name!r}")

    def _publish_confirmed(
        self, dest: Destination, native: list[tuple[bytes, BasicProperties]], action: str
    ) -> None:
        exchange, routing_key = self._route(dest)
        with self._guard(action):
            ch = self._channel("confirm")
            c = self._confirms
            c.returned.clear()
            c.nacked = 0
            for body, props in native:
                ch._impl.basic_publish(exchange, routing_key, body, props, mandatory=True)
                c.outstanding.add(c.next_tag)
                c.next_tag += 1
            done = self._wait(lambda: not c.outstanding or c.closed is not None, action)
            if c.closed is not None:
                self._channels.pop("confirm", None)
                reason = c.closed
                if isinstance(reason, pex.ChannelClosedByBroker) and reason.reply_code == 404:
                    raise ForeignError(
                        f"{self._where()}: {action}: exchange {exchange!r} not found."
                    )
                raise ForeignError(f"{self._where()}: {action}: channel closed ({reason}).")
            if not done:
                # Confirms may still arrive for this batch: start afresh next time.
                self._drop()
                raise ForeignError(
                    f"{self._where()}: {action}: no publisher confirm within {self.timeout:g} s."
                )
        if c.returned:
            raise ForeignError(f"{self._where()}: {action}: {self._unroutable(dest)}.")
        if c.nacked:
            raise ForeignError(
                f"{self._where()}: {action}: the broker refused {c.nacked} message(s)."
            )

    def _check_exists(self, dest: Destination) -> None:
        """Passive declare on the admin channel (a 404 closes it; it is reopened next time)."""
        what = "queue" if dest.domain == "QUEUE" else "exchange"
        try:
            with self._guard(f"check {what} {dest.provider_name!r}"):
                admin = self._channel("admin")
                if dest.domain == "QUEUE":
                    admin.queue_declare(dest.provider_name, passive=True)
                else:
                    admin.exchange_declare(dest.provider_name, passive=True)
        except ForeignError as e:
            cause = e.__cause__
            if isinstance(cause, pex.ChannelClosedByBroker) and cause.reply_code == 404:
                raise ForeignError(
                    f"{self._where()}: {what} {dest.provider_name!r} does not exist "
                    f"in virtual host {self.props.get('virtual_host', '/')!r}."
                ) from cause
            raise

    def _log_queue(self) -> str:
        name = self.props["outbound_log_queue"]
        if not self._log_declared:
            self._channel("admin").queue_declare(name, durable=True)
            self._log_declared = True
        return name

    def _publish_tx(
        self,
        dest: Destination,
        native: list[tuple[bytes, BasicProperties]],
        log_record: dict[str, Any],
    ) -> None:
        if "job" not in log_record:
            raise ValueError("log_record needs a 'job' key")
        job = str(log_record["job"])
        exchange, routing_key = self._route(dest)
        # RabbitMQ reports unroutable messages only at commit, too late to roll back: check
        # that the destination exists first.
        self._check_exists(dest)
        action = f"transaction to {dest.provider_name!r}"
        with self._guard(action):
            log_queue = self._log_queue()
            ch = self._channel("tx")
            self._tx_returned.clear()
            try:
                # Keep one record per job: take this job's older records in the same
                # transaction (acks and requeues of the others apply at commit).
                others: list[int] = []
                while True:
                    method, props, _body = ch.basic_get(log_queue, auto_ack=False)
                    if method is None:
                        break
                    if str((props.headers or {}).get(JOB_HEADER)) == job:
                        ch.basic_ack(method.delivery_tag)
                    else:
                        others.append(method.delivery_tag)
                for tag in others:
                    ch.basic_nack(tag, requeue=True)
                for body, props in native:
                    ch.basic_publish(exchange, routing_key, body, props, mandatory=True)
                ch.basic_publish(
                    "",
                    log_queue,
                    json.dumps(log_record, default=str).encode(),
                    BasicProperties(
                        delivery_mode=2,
                        content_type="application/json",
                        headers={JOB_HEADER: job, SEQ_HEADER: time.time_ns()},
                    ),
                )
                ch.tx_commit()
            except BaseException:
                # Nothing committed; a fresh tx channel next time (rollback may fail too).
                self._channels.pop("tx", None)
                if ch.is_open:
                    try:
                        ch.close()
                    except Exception:
                        logger.debug("closing tx channel", exc_info=True)
                raise
            self._conn.process_data_events(0)  # type: ignore[union-attr]
        if self._tx_returned:
            # Only a TOPIC exchange without a matching binding gets here (queues are checked).
            logger.warning(
                "%s: %s: %d message(s) committed but unroutable: %s",
                self._where(),
                action,
                len(self._tx_returned),
                self._unroutable(dest),
            )

    def _scan_log(
        self, job: str
    ) -> tuple[BlockingChannel, list[tuple[int, int, bytes]], list[int]]:
        """Take every log record (unacked) on the log channel: (this job's (seq, tag, body)),
        (all tags)."""
        ch = self._channel("log")
        mine: list[tuple[int, int, bytes]] = []
        tags: list[int] = []
        while True:
            method, props, body = ch.basic_get(self.props["outbound_log_queue"], auto_ack=False)
            if method is None:
                break
            tags.append(method.delivery_tag)
            h = props.headers or {}
            if str(h.get(JOB_HEADER)) == job:
                mine.append((int(h.get(SEQ_HEADER) or 0), method.delivery_tag, body))
        return ch, mine, tags

    def read_outbound_log(self, job_key: str) -> dict[str, Any] | None:
        if not self.props.get("outbound_log_queue"):
            return None
        with self._guard("read the outbound log"):
            self._log_queue()
            ch, mine, tags = self._scan_log(str(job_key))
            if tags:
                # Put everything back where it was (classic queues keep the position).
                ch.basic_nack(tags[-1], multiple=True, requeue=True)
        if not mine:
            return None
        return json.loads(max(mine)[2])

    def clear_outbound_log(self, job_key: str) -> None:
        if not self.props.get("outbound_log_queue"):
            return
        with self._guard("clear the outbound log"):
            self._log_queue()
            ch, mine, tags = self._scan_log(str(job_key))
            remove = {tag for _seq, tag, _body in mine}
            for tag in tags:
                if tag in remove:
                    ch.basic_ack(tag)
                else:
                    ch.basic_nack(tag, requeue=True)

    # -- inbound --

    @staticmethod
    def _source_queue(source: Destination, subscription: str) -> str:
        if source.domain == "QUEUE":
            return source.provider_name
        return SUBSCRIPTION_PREFIX + subscription

    def subscribe(self, source: Destination, subscription: str) -> None:
        if source.domain == "QUEUE":
            self._check_exists(source)
            return
        queue = self._source_queue(source, subscription)
        if len(queue.encode()) > 255:
            raise ForeignError(f"Subscription queue name {queue!r} is longer than 255 bytes.")
        self._check_exists(source)
        with self._guard(f"subscribe {queue!r} to exchange {source.provider_name!r}"):
            admin = self._channel("admin")
            admin.queue_declare(queue, durable=True)
            admin.queue_bind(queue, source.provider_name, source.options.get("BindingKey", "#"))

    def _consumer(self, source: Destination, subscription: str, prefetch: int) -> _Consumer:
        key = (source.domain, source.provider_name, subscription)
        conn = self._connection()
        cons = self._consumers.get(key)
        if cons is not None and cons.channel.is_open:
            return cons
        queue = self._source_queue(source, subscription)
        ch = conn.channel()
        # Two batches ahead of our acks: the next batch is already here while the runner
        # commits this one (acks still come only after our commit).
        ch.basic_qos(prefetch_count=2 * prefetch)
        cons = _Consumer(channel=ch, queue=queue, epoch=self._epoch * 100_000 + ch.channel_number)

        def on_message(
            _ch: Any, method: Basic.Deliver, props: BasicProperties, body: bytes
        ) -> None:
            cons.buffer.append((method, props, body))
            cons.unacked.add(method.delivery_tag)

        try:
            ch.basic_consume(queue, on_message, auto_ack=False)
        except pex.ChannelClosedByBroker as e:
            if e.reply_code == 404:
                hint = "" if source.domain == "QUEUE" else " (not subscribed?)"
                raise ForeignError(f"{self._where()}: queue {queue!r} does not exist{hint}.") from e
            raise
        self._consumers[key] = cons
        return cons

    def fetch(
        self, source: Destination, subscription: str, *, max_messages: int, timeout: float
    ) -> list[Received]:
        queue = self._source_queue(source, subscription)
        with self._guard(f"consume from {queue!r}"):
            cons = self._consumer(source, subscription, max_messages)
            self._wait(lambda: bool(cons.buffer), "consume", timeout=timeout)
            # The rest of the batch is normally already on the wire: collect it briefly.
            brief = time.monotonic() + min(0.05, max(timeout, 0))
            while len(cons.buffer) < max_messages and time.monotonic() < brief:
                before = len(cons.buffer)
                self._conn.process_data_events(time_limit=brief - time.monotonic())  # type: ignore[union-attr]
                if len(cons.buffer) == before:
                    break
        out: list[Received] = []
        while cons.buffer and len(out) < max_messages:
            method, props, body = cons.buffer.popleft()
            token = DeliveryToken(cons.epoch, method.delivery_tag)
            try:
                message = self._from_native(props, body)
                out.append(Received(props.message_id, token, message, body))
            except (ValueError, TypeError) as e:
                out.append(Received(props.message_id, token, None, body, conversion_error=str(e)))
        return out

    def ack(self, source: Destination, subscription: str, received: list[Received]) -> None:
        if not received:
            return
        key = (source.domain, source.provider_name, subscription)
        cons = self._consumers.get(key)
        with self._guard(f"acknowledge on {self._source_queue(source, subscription)!r}"):
            if cons is None or not cons.channel.is_open:
                # The channel closed since the fetch: the broker has requeued them already.
                return
            tags = sorted(
                r.token.delivery_tag
                for r in received
                if isinstance(r.token, DeliveryToken) and r.token.epoch == cons.epoch
            )
            if not tags:
                return
            top = tags[-1]
            if {t for t in cons.unacked if t <= top} == set(tags):
                cons.channel.basic_ack(top, multiple=True)  # one frame for the batch
            else:
                for tag in tags:
                    cons.channel.basic_ack(tag)
            cons.unacked.difference_update(tags)

    def unsubscribe(self, source: Destination, subscription: str) -> None:
        key = (source.domain, source.provider_name, subscription)
        cons = self._consumers.pop(key, None)
        with self._guard(f"unsubscribe {subscription!r}"):
            if cons is not None and cons.channel.is_open:
                cons.channel.close()
            if source.domain == "TOPIC":
                self._channel("admin").queue_delete(self._source_queue(source, subscription))
            else:
                self._connection()  # report a broker that is down

    # -- foreign exception queue --

    def publish_raw(self, dest: Destination, raw: bytes, *, reason: str) -> None:
        props = BasicProperties(delivery_mode=2, headers={REASON_HEADER: reason})
        self._publish_confirmed(dest, [(bytes(raw), props)], f"publish to {dest.provider_name!r}")
