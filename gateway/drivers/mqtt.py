"""MQTT 3.1.1 / 5 driver (Mosquitto) on paho-mqtt 2.x with its network thread (loop_start);
docs/gateway/mqtt.md has the conversion table and the delivery guarantees.

Outbound: one clean-session client per driver, a batch published at once and then awaited
(PUBACK/PUBCOMP). Inbound: one persistent-session client per subscription, client id
``mgw.<subscription>``, manual acknowledgements after the runner's commit; messages arrive on
paho's thread and wait in a queue that ``fetch`` drains.
"""

from __future__ import annotations

import json
import logging
import math
import queue
import socket
import ssl
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode
from paho.mqtt.subscribeoptions import SubscribeOptions

from gateway.drivers.amqp import (
    REASON_HEADER,
    SUBSCRIPTION_PREFIX,
    TYPES_HEADER,
    decode_typed,
)
from gateway.drivers.base import (
    AT_LEAST_ONCE,
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

# MQTT 5 user properties the gateway reads back into internal fields.
MESSAGE_ID = "message-id"
TYPE_PROP = "mgw-type"
PRIORITY_PROP = "mgw-priority"
ENQ_TIME_PROP = "mgw-enq-time"
RESERVED = {MESSAGE_ID, TYPE_PROP, PRIORITY_PROP, ENQ_TIME_PROP, TYPES_HEADER}
SESSION_EXPIRY = 7 * 24 * 3600
# Subscriptions are made at QoS 1: with manual acks paho answers a QoS 2 PUBLISH with PUBREC
# at once, so a QoS 2 message not yet acknowledged is lost on a crash (see docs/gateway/mqtt.md).
SUBSCRIBE_QOS = 1


def _topic_errors(name: str, *, filter_ok: bool) -> str | None:
    """Why ``name`` is not a valid MQTT topic (filter_ok: a subscription filter), or None."""
    if not name:
        return "The MQTT topic is empty."
    if "\x00" in name:
        return "MQTT topics cannot contain NUL."
    if len(name.encode("utf-8")) > 65535:
        return "MQTT topics are at most 65535 bytes (UTF-8)."
    levels = name.split("/")
    if not filter_ok:
        if "+" in name or "#" in name:
            return "A destination topic cannot contain the wildcards + or #."
        if name.startswith("$"):
            return "Topics starting with $ are reserved for the broker."
        return None
    for i, level in enumerate(levels):
        if "#" in level and (level != "#" or i != len(levels) - 1):
            return "# must be a whole level and the last one (e.g. orders/#)."
        if "+" in level and level != "+":
            return "+ must be a whole level (e.g. orders/+/new)."
    return None


def _encode_user_value(key: str, value: Any, types: dict[str, str]) -> str:
    """User properties are strings: non-strings go as text, their type in ``mgw-types``."""
    if isinstance(value, bool):
        types[key] = "bool"
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        types[key] = "int"
        return str(value)
    if isinstance(value, float):
        types[key] = "float"
        return repr(value)
    raise ValueError(f"header {key!r} is a {type(value).__name__}: only str, int, float and bool")


class MqttToken(NamedTuple):
    """Received.token: paho's packet id and QoS, and the connection they belong to."""

    generation: int
    mid: int
    qos: int


@dataclass
class _Session:
    """One paho client and what its callbacks report."""

    client: mqtt.Client
    generation: int
    connected: threading.Event = field(default_factory=threading.Event)
    connack: ReasonCode | None = None
    session_present: bool = False
    lost: str | None = None
    inbox: queue.Queue[mqtt.MQTTMessage] = field(default_factory=queue.Queue)
    subacks: dict[int, list[ReasonCode]] = field(default_factory=dict)
    acked: threading.Condition = field(default_factory=threading.Condition)
    failed_publishes: dict[int, str] = field(default_factory=dict)
    subscribed: set[str] = field(default_factory=set)


class MqttDriver(Driver):
    link_type = "MQTT"
    properties = {
        "host": (True, "str", None, "Broker host name or address."),
        "port": (False, "int", 1883, "Broker port (8883 is the usual TLS port)."),
        "protocol": (False, "str", "5", "MQTT protocol version: 3.1.1 or 5."),
        "username": (False, "str", None, "User name; anonymous if empty."),
        "password": (False, "secret", None, "Password; stored encrypted."),
        "tls": (False, "bool", False, "Connect with TLS."),
        "tls_ca_file": (
            False,
            "str",
            None,
            "CA bundle (PEM) to verify the broker; system CAs if empty.",
        ),
        "tls_verify": (False, "bool", True, "Verify the broker's certificate and host name."),
        "keepalive": (False, "int", 30, "Keep-alive interval in seconds."),
        "client_id": (
            False,
            "str",
            None,
            "Prefix of the publishing client's id; default the agent's id. Subscriptions use "
            "mgw.<subscription>.",
        ),
    }
    link_options = {}
    queue_options = {
        "QoS": "Destinations: QoS of published messages, 0, 1 or 2 (default 2).",
        "Retain": "Destinations: publish with the retain flag, TRUE or FALSE (default FALSE).",
        "SessionExpiry": "Sources (MQTT 5): seconds the broker keeps the subscription's session "
        "while the agent is away (default 604800, 7 days).",
    }
    job_options = {}
    domains = ("TOPIC",)
    outbound_guarantee = (
        AT_LEAST_ONCE,
        "Each batch waits for PUBACK/PUBCOMP (QoS 2 is exactly once per hop), but MQTT has no "
        "transaction to hold a log record and paho keeps in-flight state in memory, so a crash "
        "before our commit re-sends the batch; the MQTT 5 message-id lets consumers de-duplicate.",
    )
    inbound_guarantee = (
        AT_LEAST_ONCE,
        "A persistent session subscribed at QoS 1, acknowledged only after the PostgreSQL "
        "commit, so unacknowledged messages are redelivered; redeliveries carrying an MQTT 5 "
        "message-id are skipped, others may be duplicated.",
    )

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._pub: _Session | None = None
        self._subs: dict[str, _Session] = {}
        self._generation = 0

    # -- validation --

    @classmethod
    def validate_properties(cls, properties: dict[str, Any]) -> dict[str, Any]:
        if properties.get("outbound_log_queue"):
            raise PropertyError(
                "MQTT has no transactions, so an outbound log queue could not be written "
                "atomically with a batch: leave it empty (delivery is at least once).",
                field="outbound_log_queue",
            )
        given = {k: v for k, v in properties.items() if k != "outbound_log_queue"}
        out = clean_properties(cls.properties, given)
        protocol = {"3.1.1": "3.1.1", "311": "3.1.1", "5": "5", "5.0": "5"}.get(
            str(out["protocol"]).strip()
        )
        if protocol is None:
            raise PropertyError(
                f"protocol must be 3.1.1 or 5, not {out['protocol']!r}.", field="protocol"
            )
        out["protocol"] = protocol
        if not 0 <= out["keepalive"] <= 65535:
            raise PropertyError("keepalive must be 0 to 65535 seconds.", field="keepalive")
        return out

    @classmethod
    def validate_queue_name(cls, name: str, domain: str) -> None:
        """A source may be a filter with wildcards, so wildcards pass here;
        ``validate_destination_name`` is the stricter rule for destinations."""
        if domain != "TOPIC":
            raise PropertyError(
                "MQTT has only topics: register the MQTT topic with domain TOPIC.", field="domain"
            )
        error = _topic_errors(name, filter_ok=True)
        if error:
            raise PropertyError(error, field="provider_queue")

    @classmethod
    def validate_destination_name(cls, name: str, domain: str) -> None:
        cls.validate_queue_name(name, domain)
        error = _topic_errors(name, filter_ok=False)
        if error:
            raise PropertyError(error, field="provider_queue")

    @staticmethod
    def destination_options(options: dict[str, str]) -> tuple[int, bool]:
        """(QoS, Retain) from the foreign queue's options; PropertyError names a bad one."""
        qos_text = str(options.get("QoS", "2")).strip()
        if qos_text not in ("0", "1", "2"):
            raise PropertyError(f"QoS must be 0, 1 or 2, not {qos_text!r}.", field="QoS")
        retain_text = str(options.get("Retain", "FALSE")).strip().upper()
        if retain_text not in ("TRUE", "FALSE"):
            raise PropertyError(
                f"Retain must be TRUE or FALSE, not {retain_text!r}.", field="Retain"
            )
        return int(qos_text), retain_text == "TRUE"

    # -- connection --

    @property
    def _v5(self) -> bool:
        return str(self.props.get("protocol", "5")) == "5"

    def _where(self) -> str:
        return f"MQTT broker {self.props.get('host')}:{self.props.get('port', 1883)}"

    def _reason(self, exc: BaseException) -> str:
        if isinstance(exc, ssl.SSLError | ssl.CertificateError):
            return f"TLS failed: {exc}"
        if isinstance(exc, ConnectionRefusedError):
            return "connection refused"
        if isinstance(exc, socket.gaierror):
            return f"unknown host {self.props.get('host')!r}"
        if isinstance(exc, TimeoutError):
            return f"timed out after {self.timeout:g} s"
        if isinstance(exc, FileNotFoundError):
            return f"TLS CA file not found: {self.props.get('tls_ca_file')}"
        return str(exc) or type(exc).__name__

    def _open(self, client_id: str, *, persistent: bool, expiry: int) -> _Session:
        """Connect a client and wait for CONNACK; ForeignError says why not."""
        self._generation += 1
        v5 = self._v5
        client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=client_id,
            clean_session=None if v5 else not persistent,
            protocol=mqtt.MQTTv5 if v5 else mqtt.MQTTv311,
            # Reconnection is ours (lazily, on the next call): an automatic one would race a
            # new client using the same id.
            reconnect_on_failure=False,
            manual_ack=persistent,
        )
        s = _Session(client=client, generation=self._generation)
        client.connect_timeout = self.timeout
        if self.props.get("username"):
            client.username_pw_set(self.props["username"], self.secret)
        try:
            if self.props.get("tls"):
                ctx = ssl.create_default_context(cafile=self.props.get("tls_ca_file") or None)
                if not self.props.get("tls_verify", True):
                    ctx.check_hostname = False
                    ctx.verify_mode = ssl.CERT_NONE
                client.tls_set_context(ctx)
        except (OSError, ssl.SSLError) as e:
            raise ForeignError(f"{self._where()}: {self._reason(e)}.") from e

        def on_connect(_c: Any, _u: Any, flags: Any, rc: ReasonCode, _p: Any) -> None:
            s.connack = rc
            s.session_present = bool(flags.session_present)
            s.connected.set()

        def on_disconnect(_c: Any, _u: Any, _f: Any, rc: ReasonCode, _p: Any) -> None:
            s.lost = str(rc)
            s.connected.set()  # wake a connect still waiting for CONNACK
            with s.acked:
                s.acked.notify_all()

        def on_message(_c: Any, _u: Any, message: mqtt.MQTTMessage) -> None:
            s.inbox.put(message)

        def on_subscribe(_c: Any, _u: Any, mid: int, codes: list[ReasonCode], _p: Any) -> None:
            with s.acked:
                s.subacks[mid] = codes
                s.acked.notify_all()

        def on_publish(_c: Any, _u: Any, mid: int, rc: ReasonCode, _p: Any) -> None:
            if rc.is_failure:
                s.failed_publishes[mid] = str(rc)

        client.on_connect = on_connect
        client.on_disconnect = on_disconnect
        client.on_message = on_message
        client.on_subscribe = on_subscribe
        client.on_unsubscribe = lambda *_a: None
        client.on_publish = on_publish
        props = None
        kwargs: dict[str, Any] = {}
        if v5:
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = expiry
            if persistent:
                props.ReceiveMaximum = 100  # bounds what waits unacknowledged in our queue
            kwargs["clean_start"] = not persistent
        try:
            client.connect(
                self.props["host"],
                int(self.props.get("port", 1883)),
                keepalive=int(self.props.get("keepalive", 30)),
                properties=props,
                **kwargs,
            )
        except (OSError, ssl.SSLError) as e:
            raise ForeignError(f"{self._where()}: {self._reason(e)}.") from e
        client.loop_start()
        if not s.connected.wait(self.timeout):
            self._close_session(s)
            raise ForeignError(f"{self._where()}: no CONNACK within {self.timeout:g} s.")
        if s.connack is None:
            self._close_session(s)
            raise ForeignError(
                f"{self._where()}: the server closed the connection before CONNACK "
                f"({s.lost}; not an MQTT {self.props.get('protocol', '5')} broker?)."
            )
        if s.connack.is_failure:
            self._close_session(s)
            raise ForeignError(f"{self._where()}: connection refused by the broker: {s.connack}.")
        return s

    def _close_session(self, s: _Session) -> None:
        try:
            s.client.disconnect()
        except Exception:  # already gone
            logger.debug("MQTT disconnect", exc_info=True)
        s.client.loop_stop()

    def _alive(self, s: _Session | None) -> bool:
        return s is not None and s.lost is None and s.client.is_connected()

    def _publisher(self) -> _Session:
        if not self._alive(self._pub):
            if self._pub is not None:
                self._close_session(self._pub)
                self._pub = None
            base = self.props.get("client_id") or self.client_id
            # Unique per driver: two drivers with one id would take each other's connection.
            self._pub = self._open(f"{base}.pub.{uuid.uuid4().hex[:8]}", persistent=False, expiry=0)
        return self._pub

    def test(self) -> str:
        self._publisher()
        return (
            f"MQTT broker at {self.props['host']}:{self.props.get('port', 1883)} "
            f"(protocol {self.props.get('protocol', '5')})"
        )

    def close(self) -> None:
        sessions = [*self._subs.values(), *([self._pub] if self._pub else [])]
        self._subs.clear()
        self._pub = None
        for s in sessions:
            self._close_session(s)

    # -- conversion --

    def _to_native(self, msg: GatewayMessage, message_id: str) -> Properties | None:
        types: dict[str, str] = {}
        user: list[tuple[str, str]] = []
        for key, value in msg.headers.items():
            if key in RESERVED:
                raise ValueError(f"header {key!r} is reserved by the gateway")
            user.append((str(key), _encode_user_value(str(key), value, types)))
        if msg.expiration is not None and math.isnan(msg.expiration):
            raise ValueError("expiration is NaN")
        if not self._v5:
            return None  # MQTT 3.1.1 carries the body only
        props = Properties(PacketTypes.PUBLISH)
        if message_id:
            user.append((MESSAGE_ID, message_id))
        if msg.type_name:
            user.append((TYPE_PROP, msg.type_name))
        if msg.priority != 1:
            user.append((PRIORITY_PROP, str(msg.priority)))
        if msg.enq_time is not None:
            enq = msg.enq_time if msg.enq_time.tzinfo else msg.enq_time.replace(tzinfo=UTC)
            user.append((ENQ_TIME_PROP, enq.isoformat()))
        if types:
            user.append((TYPES_HEADER, json.dumps(types, separators=(",", ":"))))
        if user:
            props.UserProperty = user
        if msg.content_type:
            props.ContentType = msg.content_type
        if msg.correlation:
            props.CorrelationData = msg.correlation.encode("utf-8")
        if msg.expiration is not None:
            # Whole seconds, rounded up; 0 would mean "no expiry" to some brokers.
            props.MessageExpiryInterval = max(1, math.ceil(msg.expiration))
        return props

    @staticmethod
    def _from_native(message: mqtt.MQTTMessage) -> tuple[str | None, GatewayMessage]:
        props = message.properties
        user: list[tuple[str, str]] = list(getattr(props, "UserProperty", None) or [])
        found = {k: v for k, v in user if k in RESERVED}
        headers = {k: v for k, v in user if k not in RESERVED}  # a repeated key: the last wins
        decode_typed(headers, found.get(TYPES_HEADER))
        correlation = getattr(props, "CorrelationData", None) or b""
        expiry = getattr(props, "MessageExpiryInterval", None)
        enq = found.get(ENQ_TIME_PROP)
        key = found.get(MESSAGE_ID)
        return key, GatewayMessage(
            body=bytes(message.payload),
            msgid=key,
            correlation=correlation.decode("utf-8", "backslashreplace"),
            priority=int(found.get(PRIORITY_PROP, 1)),
            expiration=float(expiry) if expiry is not None else None,
            type_name=found.get(TYPE_PROP, ""),
            content_type=getattr(props, "ContentType", None) or "",
            headers=headers,
            enq_time=datetime.fromisoformat(enq) if enq else None,
        )

    # -- outbound --

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
        native: list[tuple[bytes, Properties | None]] = []
        for i, (msg, dedupe) in enumerate(zip(messages, dedupe_ids, strict=True)):
            try:
                native.append((bytes(msg.body), self._to_native(msg, dedupe)))
            except (ValueError, TypeError) as e:
                raise BatchConversionError(i, str(e)) from e
        self._send(dest, native)

    def _send(self, dest: Destination, native: list[tuple[bytes, Properties | None]]) -> None:
        try:
            self.validate_destination_name(dest.provider_name, dest.domain)
            qos, retain = self.destination_options(dest.options)
        except PropertyError as e:
            raise ForeignError(
                f"Cannot publish to {dest.provider_name!r}: {e}", field=e.field
            ) from e
        if not native:
            return
        s = self._publisher()
        topic = dest.provider_name
        infos = [
            s.client.publish(topic, body, qos=qos, retain=retain, properties=props)
            for body, props in native
        ]
        # Everything is on its way: now wait once for the whole batch.
        deadline = time.monotonic() + self.timeout
        try:
            for info in infos:
                if info.rc == MQTTErrorCode.MQTT_ERR_NO_CONN:
                    raise RuntimeError("not connected")
                info.wait_for_publish(max(0.0, deadline - time.monotonic()))
                if not info.is_published():
                    raise TimeoutError
        except (RuntimeError, ValueError, TimeoutError) as e:
            # The session's in-flight messages die with it; the runner re-sends the batch.
            self._close_session(s)
            self._pub = None
            why = s.lost or (
                f"not acknowledged within {self.timeout:g} s"
                if isinstance(e, TimeoutError)
                else str(e)
            )
            raise ForeignError(f"{self._where()}: publish to {topic!r}: {why}.") from e
        failed = [s.failed_publishes.pop(i.mid) for i in infos if i.mid in s.failed_publishes]
        if failed:
            raise ForeignError(
                f"{self._where()}: publish to {topic!r}: the broker refused "
                f"{len(failed)} message(s): {failed[0]}."
            )

    # -- inbound --

    def _session(self, source: Destination, subscription: str) -> _Session:
        s = self._subs.get(subscription)
        if self._alive(s):
            return s  # type: ignore[return-value]
        if s is not None:
            self._close_session(s)
        expiry = int(source.options.get("SessionExpiry", SESSION_EXPIRY))
        s = self._open(SUBSCRIPTION_PREFIX + subscription, persistent=True, expiry=expiry)
        self._subs[subscription] = s
        return s

    def _subscribe(self, s: _Session, source: Destination) -> None:
        topic = source.provider_name
        if topic in s.subscribed:
            return
        if s.session_present and not self._v5:
            # MQTT 3.1.1 resends retained messages on every SUBSCRIBE; the session we resumed
            # already has the subscription.
            s.subscribed.add(topic)
            return
        # MQTT 5: retained messages only when the subscription is new (retain handling 1).
        if self._v5:
            rc, mid = s.client.subscribe(
                (topic, SubscribeOptions(qos=SUBSCRIBE_QOS, retainHandling=1))
            )
        else:
            rc, mid = s.client.subscribe(topic, SUBSCRIBE_QOS)
        if rc != MQTTErrorCode.MQTT_ERR_SUCCESS:
            raise ForeignError(f"{self._where()}: subscribe to {topic!r}: {mqtt.error_string(rc)}.")
        with s.acked:
            s.acked.wait_for(lambda: mid in s.subacks or s.lost is not None, self.timeout)
        codes = s.subacks.pop(mid, None)
        if codes is None:
            raise ForeignError(
                f"{self._where()}: subscribe to {topic!r}: "
                f"{s.lost or f'no SUBACK within {self.timeout:g} s'}."
            )
        if any(c.is_failure for c in codes):
            raise ForeignError(
                f"{self._where()}: the broker refused the subscription to {topic!r}: {codes[0]}."
            )
        s.subscribed.add(topic)

    def subscribe(self, source: Destination, subscription: str) -> None:
        self.validate_queue_name(source.provider_name, source.domain)
        self._subscribe(self._session(source, subscription), source)

    def fetch(
        self, source: Destination, subscription: str, *, max_messages: int, timeout: float
    ) -> list[Received]:
        s = self._session(source, subscription)
        self._subscribe(s, source)
        messages: list[mqtt.MQTTMessage] = []
        try:
            messages.append(s.inbox.get(timeout=max(0.0, timeout)))
        except queue.Empty:
            if s.lost is not None:
                raise ForeignError(f"{self._where()}: connection lost: {s.lost}.") from None
            return []
        # The rest of a batch normally follows at once: collect it only briefly.
        brief = time.monotonic() + min(0.05, max(timeout, 0.0))
        while len(messages) < max_messages:
            try:
                messages.append(s.inbox.get(timeout=max(0.0, brief - time.monotonic())))
            except queue.Empty:
                break
        out: list[Received] = []
        for m in messages:
            token = MqttToken(s.generation, m.mid, m.qos)
            try:
                key, message = self._from_native(m)
                out.append(Received(key, token, message, bytes(m.payload)))
            except (ValueError, TypeError) as e:
                out.append(Received(None, token, None, bytes(m.payload), conversion_error=str(e)))
        return out

    def ack(self, source: Destination, subscription: str, received: list[Received]) -> None:
        s = self._subs.get(subscription)
        if s is None:
            return  # the session was closed: the broker redelivers them
        for r in received:
            t = r.token
            if isinstance(t, MqttToken) and t.generation == s.generation and t.qos > 0:
                rc = s.client.ack(t.mid, t.qos)
                if rc != MQTTErrorCode.MQTT_ERR_SUCCESS:
                    raise ForeignError(
                        f"{self._where()}: acknowledge on {subscription!r}: "
                        f"{s.lost or mqtt.error_string(rc)}."
                    )

    def unsubscribe(self, source: Destination, subscription: str) -> None:
        s = self._subs.pop(subscription, None)
        if s is not None:
            self._close_session(s)
        # A clean start discards the persistent session (subscription and queued messages);
        # expiry 0 leaves nothing behind once we disconnect.
        s = self._open(SUBSCRIPTION_PREFIX + subscription, persistent=False, expiry=0)
        self._close_session(s)

    # -- foreign exception queue --

    def publish_raw(self, dest: Destination, raw: bytes, *, reason: str) -> None:
        props = None
        if self._v5:
            props = Properties(PacketTypes.PUBLISH)
            props.UserProperty = [(REASON_HEADER, reason)]
        self._send(dest, [(bytes(raw), props)])
