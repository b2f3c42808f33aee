"""What every foreign-system driver offers the gateway runner (spec/gateway.md §1.2: "a set of
drivers, one per messaging system", each a client of its system).

A driver holds one link's connection(s). The runner calls it from one thread at a time. Every
call that talks to the foreign system raises :class:`ForeignError` when the system is down or
refuses (the job goes RETRY), and :class:`ConversionError` when one message cannot be put into
or read out of the system's native form (that message goes to the exception queue and the job
goes on). Nothing here touches PostgreSQL: the runner owns our side of every transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from core.storable import text_problem

# How a job on this system is delivered; shown on the link page with ``Guarantee.why``.
EXACTLY_ONCE = "EXACTLY_ONCE"
AT_LEAST_ONCE = "AT_LEAST_ONCE"


class ForeignError(Exception):
    """The foreign system is unreachable, refused the operation, or timed out."""

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message)
        self.field = field


class ConversionError(Exception):
    """One message cannot be converted; ``reason`` says which part and why."""


class PropertyError(ValueError):
    """A link property, option, or foreign queue name the system would reject."""

    def __init__(self, message: str, *, field: str):
        super().__init__(message)
        self.field = field


@dataclass
class GatewayMessage:
    """MGW's internal format (spec §1.14.1): a header like AQ's message properties, and a body.

    ``msgid`` is the source's id as text: our message id (outbound) or the foreign system's id
    when it has one (inbound). ``priority`` is AQ's (smaller is more urgent, default 1).
    ``expiration`` is seconds from now, None for never. ``headers`` hold the user properties,
    scalar values only (str, int, float, bool).
    """

    body: bytes
    msgid: str | None = None
    correlation: str = ""
    priority: int = 1
    expiration: float | None = None
    type_name: str = ""
    content_type: str = ""
    headers: dict[str, Any] = field(default_factory=dict)
    enq_time: datetime | None = None


@dataclass
class Received:
    """One message fetched from a foreign queue, not yet acknowledged.

    ``key`` is a stable identity the system gives again on redelivery (JetStream stream
    sequence, Redis entry id, AMQP message_id, MQTT 5 user property ``message-id``), or None:
    the runner records keys in its log in the same PostgreSQL transaction as the enqueue, and
    skips a redelivered key. ``conversion_error`` is set instead of ``message`` when the native
    message could not be read into the internal format; ``raw`` keeps the native body so the
    runner can publish it to the job's foreign exception queue unchanged.
    """

    key: str | None
    token: Any
    message: GatewayMessage | None
    raw: bytes
    conversion_error: str | None = None


@dataclass(frozen=True)
class Destination:
    """A registered foreign queue as the driver needs it."""

    provider_name: str
    domain: str  # "QUEUE" or "TOPIC"
    options: dict[str, str] = field(default_factory=dict)


class Driver:
    """Base class; one subclass per link type, registered in ``gateway.drivers.DRIVERS``."""

    link_type: ClassVar[str]
    # Properties: name -> (required, kind, default, help); kind is "str", "int", "bool" or
    # "secret". Validated by ``validate_properties``; secrets arrive decrypted in ``secret``.
    properties: ClassVar[dict[str, tuple[bool, str, Any, str]]] = {}
    # Link options (name/value) the driver understands: name -> help.
    link_options: ClassVar[dict[str, str]] = {}
    # Foreign-queue options: name -> help.
    queue_options: ClassVar[dict[str, str]] = {}
    # Job options with a counterpart in this system: name -> help.
    job_options: ClassVar[dict[str, str]] = {}
    domains: ClassVar[tuple[str, ...]] = ("QUEUE", "TOPIC")
    outbound_guarantee: ClassVar[tuple[str, str]] = (AT_LEAST_ONCE, "")
    inbound_guarantee: ClassVar[tuple[str, str]] = (AT_LEAST_ONCE, "")

    def __init__(
        self,
        *,
        properties: dict[str, Any],
        options: dict[str, str],
        secret: str | None,
        client_id: str,
        timeout: float = 5.0,
    ):
        self.props = properties
        self.options = options
        self.secret = secret
        self.client_id = client_id
        self.timeout = timeout

    # -- validation (no connection needed) --

    @classmethod
    def validate_properties(cls, properties: dict[str, Any]) -> dict[str, Any]:
        """Return the properties cleaned (types coerced, defaults filled); raise PropertyError
        naming the property for a missing, unknown or malformed one."""
        raise NotImplementedError

    @classmethod
    def validate_queue_name(cls, name: str, domain: str) -> None:
        """Raise PropertyError(field="provider_queue" or "domain") for a name or domain the
        system rejects."""
        raise NotImplementedError

    # -- connection --

    def test(self) -> str:
        """Connect, authenticate and return a one-line description of the server; raise
        ForeignError saying why not (refused, unknown host, bad credentials, timeout, TLS)."""
        raise NotImplementedError

    def keep_alive(self) -> None:
        """Called by the agent, between cycles, for a job with nothing to do: keep an idle
        connection alive where the client library answers the broker's heartbeats only while
        it is called (pika's BlockingConnection). Never raises; default nothing."""

    def close(self) -> None:
        raise NotImplementedError

    # -- outbound --

    def publish(
        self,
        dest: Destination,
        messages: list[GatewayMessage],
        *,
        dedupe_ids: list[str],
        log_record: dict[str, Any] | None,
    ) -> None:
        """Publish ``messages`` in order and return only once the system has them (publisher
        confirms, PUBACK/PUBCOMP, JetStream PubAck, EXEC reply). ``dedupe_ids`` are stable per
        message (the runner derives them from job and message id) for systems that de-duplicate.
        ``log_record``, when the system can store it atomically with the batch (AMQP channel
        transaction, Redis MULTI/EXEC), is written to the link's outbound log in the same
        foreign transaction. Raises ConversionError(index, reason) via ``BatchConversionError``
        before anything is sent when a message cannot be converted."""
        raise NotImplementedError

    def read_outbound_log(self, job_key: str) -> dict[str, Any] | None:
        """The last log record written for ``job_key`` by ``publish``, or None."""
        return None

    def clear_outbound_log(self, job_key: str) -> None:
        """Remove the job's log records (REMOVE_JOB cleanup)."""

    # -- inbound --

    def subscribe(self, source: Destination, subscription: str) -> None:
        """Create what the job needs to receive (durable consumer, consumer group, persistent
        session, bound queue); idempotent."""
        raise NotImplementedError

    def fetch(
        self, source: Destination, subscription: str, *, max_messages: int, timeout: float
    ) -> list[Received]:
        """Up to ``max_messages`` unacknowledged messages, waiting at most ``timeout`` seconds
        for the first; redeliveries of unacknowledged ones come first."""
        raise NotImplementedError

    def ack(self, source: Destination, subscription: str, received: list[Received]) -> None:
        """Acknowledge after the runner committed them in PostgreSQL."""
        raise NotImplementedError

    def unsubscribe(self, source: Destination, subscription: str) -> None:
        """Remove the durable consumer / group / session (REMOVE_JOB cleanup); raise
        ForeignError when the system is down."""
        raise NotImplementedError

    # -- exception queue on the foreign side (inbound jobs) --

    def publish_raw(self, dest: Destination, raw: bytes, *, reason: str) -> None:
        """Put a message that could not be converted into the foreign exception queue, body
        unchanged, with the reason as a header where the system has headers."""
        raise NotImplementedError


_TRUE = {"true", "yes", "y", "on", "1"}
_FALSE = {"false", "no", "n", "off", "0"}


def clean_properties(
    spec: dict[str, tuple[bool, str, Any, str]], given: dict[str, Any]
) -> dict[str, Any]:
    """Coerce ``given`` to the kinds in ``spec`` ("str", "int", "bool", "secret") and fill the
    defaults; PropertyError names the offending property. An empty string counts as absent, so
    a blank form field means the default. Every driver's ``validate_properties`` starts here."""
    unknown = sorted(set(given) - set(spec))
    if unknown:
        raise PropertyError(f"Unknown property {unknown[0]!r}.", field=unknown[0])
    out: dict[str, Any] = {}
    for name, (required, kind, default, _help) in spec.items():
        value = given.get(name)
        if isinstance(value, str) and not value.strip() and kind != "secret":
            value = None
        if value is None:
            if required:
                raise PropertyError(f"Property {name!r} is required.", field=name)
            if default is not None:
                out[name] = default
            continue
        if kind == "int":
            if isinstance(value, bool):
                raise PropertyError(f"{name} must be an integer.", field=name)
            try:
                out[name] = int(str(value).strip())
            except ValueError:
                raise PropertyError(
                    f"{name} must be an integer, not {value!r}.", field=name
                ) from None
        elif kind == "bool":
            text = str(value).strip().lower()
            if isinstance(value, bool):
                out[name] = value
            elif text in _TRUE or text in _FALSE:
                out[name] = text in _TRUE
            else:
                raise PropertyError(f"{name} must be TRUE or FALSE, not {value!r}.", field=name)
        else:
            if not isinstance(value, str):
                raise PropertyError(f"{name} must be text.", field=name)
            if problem := text_problem(value):
                raise PropertyError(problem, field=name)
            out[name] = value if kind == "secret" else value.strip()
    port = out.get("port")
    if port is not None and not 1 <= port <= 65535:
        raise PropertyError(f"port must be between 1 and 65535, not {port}.", field="port")
    if any(ch.isspace() for ch in str(out.get("host", ""))):
        raise PropertyError("host must not contain spaces.", field="host")
    if out.get("tls_ca_file") and not out.get("tls"):
        raise PropertyError("tls_ca_file needs tls set to true.", field="tls_ca_file")
    return out


class BatchConversionError(ConversionError):
    """``publish`` refused message ``index`` of the batch before sending any of it."""

    def __init__(self, index: int, reason: str):
        super().__init__(reason)
        self.index = index
        self.reason = reason
