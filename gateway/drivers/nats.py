"""NATS JetStream driver (link type NATS), on nats-py.

nats-py is asyncio and the runner is synchronous, so each driver owns a private event loop in a
daemon thread; every public method submits one coroutine with ``run_coroutine_threadsafe`` and
waits at most about ``self.timeout`` for it. The connection lives on that loop between calls. It
is opened with nats-py's own reconnect switched off: a broken connection surfaces as a
``ForeignError`` at once (the job goes RETRY) and the next call connects again. Conversion rules
and guarantees: docs/gateway/nats.md.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import json
import math
import re
import socket
import ssl
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

# Absolute imports: this module is gateway.drivers.nats, the library is the top-level ``nats``.
import nats
import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from gateway.drivers.base import (
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

T = TypeVar("T")

# Headers JetStream itself interprets.
H_NATS_MSG_ID = "Nats-Msg-Id"
H_NATS_TTL = "Nats-TTL"
# Headers carrying the internal format (docs/gateway/nats.md has the table).
H_CONTENT_TYPE = "Content-Type"
H_MSGID = "MGW-Msg-Id"
H_CORRELATION = "MGW-Correlation-Id"
H_PRIORITY = "MGW-Priority"
H_EXPIRATION = "MGW-Expiration"
H_TYPE = "MGW-Type"
H_ENQ_TIME = "MGW-Enq-Time"
H_HEADER_TYPES = "MGW-Header-Types"
H_EXCEPTION_REASON = "MGW-Exception-Reason"

# RFC 7230 token, what nats-py accepts as a header name.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONSUMER_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_SCALAR_TYPES = {"int": int, "float": float, "bool": bool}
# HPUB framing around the header block ("NATS/1.0\r\n" ... "\r\n").
_HEADER_OVERHEAD = 12


def encode_header_value(value: Any) -> tuple[str, str | None]:
    """A scalar header as (text, type); type is None for str, else "int"/"float"/"bool"."""
    if isinstance(value, bool):  # before int: bool is an int subclass
        return ("true" if value else "false"), "bool"
    if isinstance(value, int):
        return str(value), "int"
    if isinstance(value, float):
        return repr(value), "float"
    if isinstance(value, str):
        return value, None
    raise TypeError(f"{type(value).__name__} is not a scalar (str, int, float, bool)")


def decode_header_value(text: str, type_name: str | None) -> Any:
    if type_name is None or type_name == "str":
        return text
    if type_name == "bool":
        if text not in ("true", "false"):
            raise ValueError(f"{text!r} is not a bool")
        return text == "true"
    if type_name not in _SCALAR_TYPES:
        raise ValueError(f"unknown header type {type_name!r}")
    return _SCALAR_TYPES[type_name](text)


def consumer_name(subscription: str) -> str:
    """A JetStream durable name for ``subscription``: [A-Za-z0-9_-], at most 48 characters; a
    hash suffix keeps two subscriptions that differ only in unsafe characters apart."""
    safe = _CONSUMER_UNSAFE.sub("_", subscription)
    if safe == subscription and 0 < len(safe) <= 48:
        return safe
    digest = hashlib.sha1(subscription.encode()).hexdigest()[:10]
    return f"{safe[:37] or 'mgw'}_{digest}"


def validate_subject(name: str, *, publish: bool) -> None:
    """NATS subject rules (PropertyError); where we publish (ForeignError, the runner's error
    for a destination the system refuses) wildcards are refused too."""
    if publish:
        try:
            validate_subject(name, publish=False)
        except PropertyError as exc:
            raise ForeignError(str(exc)) from None
        if "*" in name.split(".") or ">" in name.split("."):
            raise ForeignError(f"Cannot publish to the wildcard subject {name!r}.")
        return
    if not name or name != name.strip() or any(ch.isspace() or ord(ch) < 32 for ch in name):
        raise PropertyError(
            "A NATS subject is non-empty, without spaces or control characters.",
            field="provider_queue",
        )
    tokens = name.split(".")
    for i, token in enumerate(tokens):
        if token == "":
            raise PropertyError(f"Subject {name!r} has an empty token.", field="provider_queue")
        if token == ">" and i != len(tokens) - 1:
            raise PropertyError(
                f"Subject {name!r}: '>' may only be the last token.", field="provider_queue"
            )
        if token not in ("*", ">") and ("*" in token or ">" in token):
            raise PropertyError(
                f"Subject {name!r}: a wildcard must be a whole token.", field="provider_queue"
            )


@dataclass
class _Stream:
    name: str
    allow_msg_ttl: bool
    max_msg_size: int
    duplicate_window: float


class NatsDriver(Driver):
    link_type: ClassVar[str] = "NATS"
    properties: ClassVar[dict[str, tuple[bool, str, Any, str]]] = {
        "host": (True, "str", None, "NATS server host name or address."),
        "port": (False, "int", 4222, "NATS client port."),
        "username": (False, "str", "", "User name; leave empty for token or no authentication."),
        "password": (
            False,
            "secret",
            None,
            "Password for the user; with no user name it is sent as the connection token.",
        ),
        "tls": (False, "bool", False, "Connect with TLS (tls://)."),
        "tls_ca_file": (False, "str", "", "PEM file of the CA that signed the server certificate."),
        "tls_verify": (False, "bool", True, "Verify the server certificate and host name."),
        "client_id": (
            False,
            "str",
            "",
            "Connection name shown by the server; default the agent's.",
        ),
        "outbound_log_queue": (
            False,
            "str",
            "",
            "Not used: JetStream de-duplication (Nats-Msg-Id) makes an outbound log unnecessary.",
        ),
    }
    link_options: ClassVar[dict[str, str]] = {}
    queue_options: ClassVar[dict[str, str]] = {
        "Stream": "JetStream stream holding the subject; default: the stream that captures it.",
        "DeliverPolicy": "Inbound: 'all' (default) starts at the stream's first message, 'new' "
        "at messages published after the consumer is created.",
        "AckWait": "Inbound: seconds before an unacknowledged message is redelivered (default 30).",
    }
    job_options: ClassVar[dict[str, str]] = {}
    domains: ClassVar[tuple[str, ...]] = ("QUEUE", "TOPIC")
    outbound_guarantee: ClassVar[tuple[str, str]] = (
        EXACTLY_ONCE,
        "Every message carries a stable Nats-Msg-Id, so JetStream drops a re-sent batch within "
        "the stream's duplicate window (2 minutes by default).",
    )
    inbound_guarantee: ClassVar[tuple[str, str]] = (
        EXACTLY_ONCE,
        "A durable consumer redelivers until acknowledged, and the runner records each stream "
        "sequence with the enqueue in PostgreSQL and skips a redelivered one.",
    )

    def __init__(
        self,
        *,
        properties: dict[str, Any],
        options: dict[str, str],
        secret: str | None,
        client_id: str,
        timeout: float = 5.0,
    ):
        super().__init__(
            properties=properties,
            options=options,
            secret=secret,
            client_id=client_id,
            timeout=timeout,
        )
        self.host: str = properties["host"]
        self.port: int = int(properties.get("port") or 4222)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._nc: nats.NATS | None = None
        self._js: JetStreamContext | None = None
        self._streams: dict[tuple[str, str], _Stream] = {}
        self._subs: dict[tuple[str, str], JetStreamContext.PullSubscription] = {}

    # -- validation --

    @classmethod
    def validate_properties(cls, properties: dict[str, Any]) -> dict[str, Any]:
        return clean_properties(cls.properties, properties)

    @classmethod
    def validate_queue_name(cls, name: str, domain: str) -> None:
        if domain not in cls.domains:
            raise PropertyError(f"NATS has no domain {domain!r}.", field="domain")
        validate_subject(name, publish=False)

    # -- event loop plumbing --

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"

    def _run(self, coro: Coroutine[Any, Any, T], budget: float | None = None) -> T:
        """Run ``coro`` on the driver's loop; ForeignError after ``budget`` seconds (the
        coroutines bound their own network calls, this is the backstop)."""
        if self._loop is None or not self._loop.is_running():
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            self._thread = threading.Thread(target=serve, name=f"nats-{self.where}", daemon=True)
            self._thread.start()
            ready.wait()
            self._loop = loop
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        limit = (budget if budget is not None else self.timeout) + 1.0
        try:
            return future.result(timeout=limit)
        except concurrent.futures.TimeoutError:
            future.cancel()
            self._run_quiet(self._drop())
            raise ForeignError(f"NATS at {self.where}: timed out after {limit:g} s.") from None

    def _run_quiet(self, coro: Coroutine[Any, Any, None]) -> None:
        if self._loop is None:
            coro.close()
            return
        # Best effort: the connection is being thrown away anyway.
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=self.timeout)

    def _error(self, exc: BaseException, doing: str) -> ForeignError:
        return ForeignError(f"NATS at {self.where}: {doing} failed: {self._reason(exc)}")

    def _reason(self, exc: BaseException) -> str:
        # Order matters: TimeoutError and SSLError are OSError subclasses.
        if isinstance(exc, nats.js.errors.APIError):
            return f"JetStream refused: {exc.description} (code {exc.code}, error {exc.err_code})"
        if isinstance(exc, nats.errors.AuthorizationError):
            return "authorization failed (bad user name, password or token)"
        if isinstance(exc, TimeoutError | nats.errors.TimeoutError):
            return f"timed out after {self.timeout:g} s"
        if isinstance(exc, ssl.SSLError):
            return f"TLS handshake failed ({exc})"
        if isinstance(exc, ConnectionRefusedError):
            return "connection refused"
        if isinstance(exc, socket.gaierror):
            return f"unknown host ({exc})"
        if isinstance(exc, nats.errors.ConnectionClosedError | nats.errors.UnexpectedEOF):
            return "connection lost"
        if isinstance(exc, nats.js.errors.NoStreamResponseError):
            return "no JetStream stream answered (is JetStream enabled for this subject?)"
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__

    async def _drop(self) -> None:
        """Forget the connection; the next call connects again."""
        nc, self._nc, self._js = self._nc, None, None
        self._subs.clear()
        self._streams.clear()
        if nc is not None and not nc.is_closed:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(nc.close(), self.timeout)

    async def _connect(self) -> JetStreamContext:
        if self._nc is not None and self._nc.is_connected and self._js is not None:
            return self._js
        await self._drop()
        errors: list[BaseException] = []

        async def on_error(exc: Exception) -> None:
            errors.append(exc)

        username = self.props.get("username") or ""
        auth: dict[str, Any] = {}
        if username:
            auth = {"user": username, "password": self.secret or ""}
        elif self.secret:
            auth = {"token": self.secret}
        tls: ssl.SSLContext | None = None
        if self.props.get("tls"):
            tls = ssl.create_default_context(cafile=self.props.get("tls_ca_file") or None)
            if not self.props.get("tls_verify", True):
                tls.check_hostname = False
                tls.verify_mode = ssl.CERT_NONE
        scheme = "tls" if tls else "nats"
        nc = nats.NATS()
        try:
            await asyncio.wait_for(
                nc.connect(
                    f"{scheme}://{self.host}:{self.port}",
                    name=self.props.get("client_id") or self.client_id,
                    allow_reconnect=False,
                    # Two quick attempts at most, then NoServersError; we reconnect lazily.
                    max_reconnect_attempts=1,
                    reconnect_time_wait=0,
                    connect_timeout=max(1, math.ceil(self.timeout)),
                    error_cb=on_error,
                    tls=tls,
                    tls_hostname=self.host if tls else None,
                    **auth,
                ),
                self.timeout,
            )
        except Exception as exc:
            cause: BaseException = exc
            if isinstance(exc, nats.errors.NoServersError) and errors:
                cause = errors[-1]
            with contextlib.suppress(Exception):
                await asyncio.wait_for(nc.close(), 1)
            raise self._error(cause, "connect") from exc
        self._nc = nc
        self._js = nc.jetstream(timeout=self.timeout)
        return self._js

    async def _guard(self, coro: Coroutine[Any, Any, T], doing: str) -> T:
        """Await ``coro``; map library errors to ForeignError and drop a connection that broke
        (API refusals leave it alone)."""
        try:
            return await coro
        except (ForeignError, BatchConversionError):
            raise
        except nats.js.errors.APIError as exc:
            raise self._error(exc, doing) from exc
        except Exception as exc:
            await self._drop()
            raise self._error(exc, doing) from exc

    # -- connection --

    def test(self) -> str:
        async def go() -> str:
            js = await self._connect()
            assert self._nc is not None
            version = self._nc._server_info.get("version", "?")
            try:
                info = await js.account_info()
            except (nats.errors.NoRespondersError, nats.js.errors.ServiceUnavailableError) as exc:
                raise ForeignError(
                    f"NATS {version} at {self.where} answers, but JetStream is not enabled."
                ) from exc
            domain = f", domain {info.domain}" if info.domain else ""
            return (
                f"NATS {version} at {self.where}, JetStream enabled "
                f"({info.streams} streams{domain})"
            )

        return self._run(self._guard(go(), "test"))

    def close(self) -> None:
        if self._loop is None:
            return
        self._run_quiet(self._drop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=self.timeout)
        self._loop.close()
        self._loop = None
        self._thread = None

    async def _stream(self, dest: Destination) -> _Stream:
        """The stream that holds ``dest``'s subject (the Stream option, else looked up)."""
        named = dest.options.get("Stream", "")
        cache_key = (dest.provider_name, named)
        if cache_key in self._streams:
            return self._streams[cache_key]
        js = await self._connect()
        name = named
        if not name:
            try:
                name = await js.find_stream_name_by_subject(dest.provider_name)
            except nats.js.errors.NotFoundError:
                raise ForeignError(
                    f"NATS at {self.where}: no JetStream stream captures subject "
                    f"{dest.provider_name!r}."
                ) from None
        try:
            info = await js.stream_info(name)
        except nats.js.errors.NotFoundError:
            raise ForeignError(
                f"NATS at {self.where}: JetStream stream {name!r} not found."
            ) from None
        stream = _Stream(
            name=name,
            allow_msg_ttl=bool(info.config.allow_msg_ttl),
            max_msg_size=info.config.max_msg_size or -1,
            duplicate_window=info.config.duplicate_window or 0,
        )
        self._streams[cache_key] = stream
        return stream

    # -- outbound --

    def _to_native(
        self, msg: GatewayMessage, dedupe_id: str, stream: _Stream
    ) -> tuple[bytes, dict[str, str]]:
        """Raises ValueError with the reason when the message does not fit NATS."""
        headers: dict[str, str] = {}
        types: dict[str, str] = {}
        reserved = {h.lower() for h in (H_CONTENT_TYPE,)}
        for name, value in msg.headers.items():
            if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
                raise ValueError(f"header name {name!r} is not a NATS header name (RFC 7230 token)")
            lowered = name.lower()
            if lowered.startswith(("nats-", "mgw-")) or lowered in reserved:
                raise ValueError(f"header name {name!r} is reserved")
            try:
                text, type_name = encode_header_value(value)
            except TypeError as exc:
                raise ValueError(f"header {name!r}: {exc}") from None
            if text != text.strip() or "\r" in text or "\n" in text:
                raise ValueError(
                    f"header {name!r}: NATS header values cannot hold line breaks or "
                    "leading/trailing spaces"
                )
            headers[name] = text
            if type_name:
                types[name] = type_name
        for name, text in (
            (H_MSGID, msg.msgid or ""),
            (H_CORRELATION, msg.correlation),
            (H_TYPE, msg.type_name),
            (H_CONTENT_TYPE, msg.content_type),
        ):
            if text != text.strip() or "\r" in text or "\n" in text:
                raise ValueError(f"{name} cannot hold line breaks or leading/trailing spaces")
            if text:
                headers[name] = text
        if msg.priority != 1:
            headers[H_PRIORITY] = str(int(msg.priority))
        if msg.expiration is not None:
            headers[H_EXPIRATION] = repr(float(msg.expiration))
            if stream.allow_msg_ttl:
                # Server-side expiry (NATS 2.11+, stream AllowMsgTTL); at least 1 s.
                headers[H_NATS_TTL] = f"{max(1, math.ceil(msg.expiration))}s"
        if msg.enq_time is not None:
            headers[H_ENQ_TIME] = msg.enq_time.isoformat()
        if types:
            headers[H_HEADER_TYPES] = json.dumps(types, separators=(",", ":"), sort_keys=True)
        headers[H_NATS_MSG_ID] = dedupe_id
        size = len(msg.body) + _HEADER_OVERHEAD
        size += sum(len(k.encode()) + len(v.encode()) + 4 for k, v in headers.items())
        assert self._nc is not None
        limit = self._nc.max_payload
        if stream.max_msg_size > 0:
            limit = min(limit, stream.max_msg_size)
        if size > limit:
            raise ValueError(f"message of {size} bytes is larger than the limit of {limit} bytes")
        return msg.body, headers

    def publish(
        self,
        dest: Destination,
        messages: list[GatewayMessage],
        *,
        dedupe_ids: list[str],
        log_record: dict[str, Any] | None,
    ) -> None:
        # log_record is ignored: JetStream de-duplication by Nats-Msg-Id replaces the log.
        validate_subject(dest.provider_name, publish=True)
        if len(dedupe_ids) != len(messages):
            raise ValueError("one dedupe id per message")

        async def go() -> None:
            await self._connect()
            stream = await self._stream(dest)
            natives = []
            for index, (msg, dedupe_id) in enumerate(zip(messages, dedupe_ids, strict=True)):
                try:
                    natives.append(self._to_native(msg, dedupe_id, stream))
                except ValueError as exc:
                    raise BatchConversionError(index, str(exc)) from None
            await self._send(dest.provider_name, stream, natives)

        self._run(self._guard(go(), "publish"), budget=2 * self.timeout)

    async def _send(
        self, subject: str, stream: _Stream, natives: list[tuple[bytes, dict[str, str]]]
    ) -> None:
        """Pipeline the batch: publish all in order on the one connection (so the stream stores
        them in order), then await every PubAck together."""
        assert self._js is not None
        pending: list[asyncio.Future[Any]] = []
        try:
            for payload, headers in natives:
                pending.append(
                    await self._js.publish_async(
                        subject,
                        payload,
                        headers=headers,
                        stream=stream.name,
                        wait_stall=self.timeout,
                    )
                )
            await asyncio.wait_for(asyncio.gather(*pending), self.timeout)
        finally:
            for future in pending:
                if not future.done():
                    future.cancel()

    # -- inbound --

    def _consumer_config(self, source: Destination, name: str) -> ConsumerConfig:
        policy = (source.options.get("DeliverPolicy") or "all").strip().lower()
        if policy not in ("all", "new"):
            raise ForeignError(
                f"Queue option DeliverPolicy must be 'all' or 'new', not {policy!r}."
            )
        try:
            ack_wait = float(source.options.get("AckWait") or 30)
        except ValueError:
            raise ForeignError("Queue option AckWait must be a number of seconds.") from None
        if ack_wait <= 0:
            raise ForeignError("Queue option AckWait must be positive.")
        return ConsumerConfig(
            name=name,
            durable_name=name,
            deliver_policy=DeliverPolicy.ALL if policy == "all" else DeliverPolicy.NEW,
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=ack_wait,
            filter_subject=source.provider_name,
        )

    async def _ensure_consumer(self, source: Destination, subscription: str) -> tuple[str, str]:
        js = await self._connect()
        stream = await self._stream(source)
        name = consumer_name(subscription)
        try:
            await js.consumer_info(stream.name, name, timeout=self.timeout)
        except nats.js.errors.NotFoundError:
            await js.add_consumer(stream.name, config=self._consumer_config(source, name))
        return stream.name, name

    def subscribe(self, source: Destination, subscription: str) -> None:
        self._run(self._guard(self._ensure_consumer(source, subscription), "subscribe"))

    def fetch(
        self, source: Destination, subscription: str, *, max_messages: int, timeout: float
    ) -> list[Received]:
        async def go() -> list[Received]:
            await self._connect()
            stream = (await self._stream(source)).name
            name = consumer_name(subscription)
            sub = self._subs.get((stream, name))
            if sub is None:
                # Once per connection: make sure the consumer exists, then bind to it.
                await self._ensure_consumer(source, subscription)
                assert self._js is not None
                sub = await self._js.pull_subscribe_bind(consumer=name, stream=stream)
                self._subs[(stream, name)] = sub
            try:
                msgs = await sub.fetch(batch=max(1, max_messages), timeout=max(timeout, 0.05))
            except TimeoutError:  # nats-py's own TimeoutError subclasses it
                # Nothing came in time. A batch fetch raises the plain TimeoutError (asyncio's),
                # not nats-py's, when its no-wait probe's answer is read after the deadline (a
                # loaded machine: seen in CI), before it sends the waiting request: nothing was
                # pulled.
                return []
            return [self._received(stream, m) for m in msgs]

        return self._run(self._guard(go(), "fetch"), budget=timeout + 2 * self.timeout)

    def _received(self, stream: str, msg: Msg) -> Received:
        meta = msg.metadata
        key = f"{stream}:{meta.sequence.stream}"
        try:
            message = self._from_native(msg, meta.timestamp)
        except (ValueError, TypeError) as exc:
            return Received(
                key=key, token=msg, message=None, raw=msg.data, conversion_error=str(exc)
            )
        return Received(key=key, token=msg, message=message, raw=msg.data)

    @staticmethod
    def _from_native(msg: Msg, stored: datetime) -> GatewayMessage:
        headers = dict(msg.headers or {})
        types: dict[str, str] = {}
        if H_HEADER_TYPES in headers:
            types = json.loads(headers.pop(H_HEADER_TYPES))
            if not isinstance(types, dict):
                raise ValueError(f"{H_HEADER_TYPES} is not a JSON object")
        priority = int(headers.pop(H_PRIORITY, "1"))
        expiration: float | None = None
        if H_EXPIRATION in headers:
            # Relative to the publish time: what is left after the time spent in the stream.
            age = max(0.0, time.time() - stored.timestamp())
            expiration = max(0.0, float(headers.pop(H_EXPIRATION)) - age)
        enq_time = stored
        if H_ENQ_TIME in headers:
            enq_time = datetime.fromisoformat(headers.pop(H_ENQ_TIME))
        msgid = headers.pop(H_MSGID, None) or headers.get(H_NATS_MSG_ID) or None
        message = GatewayMessage(
            body=msg.data,
            msgid=msgid,
            correlation=headers.pop(H_CORRELATION, ""),
            priority=priority,
            expiration=expiration,
            type_name=headers.pop(H_TYPE, ""),
            content_type=headers.pop(H_CONTENT_TYPE, ""),
            enq_time=enq_time if enq_time.tzinfo else enq_time.replace(tzinfo=UTC),
        )
        for name, text in headers.items():
            if name.lower().startswith(("nats-", "mgw-")):
                continue  # JetStream's own headers, and MGW ones we do not know
            message.headers[name] = decode_header_value(text, types.get(name))
        return message

    def ack(self, source: Destination, subscription: str, received: list[Received]) -> None:
        if not received:
            return

        async def go() -> None:
            msgs: list[Msg] = [r.token for r in received if not r.token.is_acked]
            if not msgs:
                return
            for msg in msgs[:-1]:
                await msg.ack()
            # The server handles one connection's acks in order: a synchronous ack of the last
            # one returns after all of them reached JetStream.
            await msgs[-1].ack_sync(timeout=self.timeout)

        self._run(self._guard(go(), "ack"))

    def unsubscribe(self, source: Destination, subscription: str) -> None:
        async def go() -> None:
            js = await self._connect()
            try:
                stream = await self._stream(source)
            except ForeignError as exc:
                if "no JetStream stream" in str(exc) or "not found" in str(exc):
                    return  # nothing left to remove
                raise
            name = consumer_name(subscription)
            self._subs.pop((stream.name, name), None)
            with contextlib.suppress(nats.js.errors.NotFoundError):
                await js.delete_consumer(stream.name, name)

        self._run(self._guard(go(), "unsubscribe"))

    def publish_raw(self, dest: Destination, raw: bytes, *, reason: str) -> None:
        validate_subject(dest.provider_name, publish=True)
        # Header values cannot hold line breaks; nats-py strips the ends.
        reason = " ".join(reason.split())

        async def go() -> None:
            js = await self._connect()
            stream = await self._stream(dest)
            await js.publish(
                dest.provider_name,
                raw,
                timeout=self.timeout,
                stream=stream.name,
                headers={H_EXCEPTION_REASON: reason},
            )

        self._run(self._guard(go(), "publish_raw"))
