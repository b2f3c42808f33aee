"""Redis Streams driver (link type REDIS), on redis-py's synchronous client.

A stream key is a foreign queue; each message is one entry whose fields carry the internal
format. redis-py's pool reconnects by itself on the next command after a broken connection;
its automatic retries are switched off so a call never takes more than about ``self.timeout``
and never silently re-sends a transaction whose EXEC may have been applied. Conversion rules and
guarantees: docs/gateway/redis.md.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any, ClassVar

# Absolute import: this module is gateway.drivers.redis, the library is the top-level ``redis``.
import redis
import redis.exceptions
from redis.backoff import NoBackoff
from redis.retry import Retry

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
from gateway.drivers.nats import decode_header_value, encode_header_value

F_BODY = "body"
F_CONTENT_TYPE = "content_type"
F_MSGID = "msgid"
F_CORRELATION = "correlation"
F_PRIORITY = "priority"
F_EXPIRATION = "expiration"
F_TYPE = "type"
F_ENQ_TIME = "enq_time"
F_HEADER_TYPES = "mgw_types"
F_EXCEPTION_REASON = "mgw_exception_reason"
HEADER_PREFIX = "h:"
_RESERVED = {
    F_BODY,
    F_CONTENT_TYPE,
    F_MSGID,
    F_CORRELATION,
    F_PRIORITY,
    F_EXPIRATION,
    F_TYPE,
    F_ENQ_TIME,
    F_HEADER_TYPES,
}
# Redis's default proto-max-bulk-len, used when CONFIG GET is not allowed.
_DEFAULT_MAX_BULK = 512 * 1024 * 1024


def _entry_time(entry_id: str) -> datetime:
    """Redis entry ids start with the server's clock in milliseconds at XADD."""
    return datetime.fromtimestamp(int(entry_id.split("-")[0]) / 1000, UTC)


class RedisDriver(Driver):
    link_type: ClassVar[str] = "REDIS"
    properties: ClassVar[dict[str, tuple[bool, str, Any, str]]] = {
        "host": (True, "str", None, "Redis server host name or address."),
        "port": (False, "int", 6379, "Redis port."),
        "db": (False, "int", 0, "Database number (0 and up)."),
        "username": (False, "str", "", "ACL user name; empty for the default user."),
        "password": (False, "secret", None, "Password (AUTH)."),
        "tls": (False, "bool", False, "Connect with TLS."),
        "tls_ca_file": (False, "str", "", "PEM file of the CA that signed the server certificate."),
        "tls_verify": (False, "bool", True, "Verify the server certificate and host name."),
        "client_id": (
            False,
            "str",
            "",
            "Connection name and consumer name in every group; default the agent's client id.",
        ),
        "outbound_log_queue": (
            False,
            "str",
            "",
            "Hash key written in the same MULTI/EXEC as each outbound batch (exactly-once); "
            "empty gives at-least-once.",
        ),
    }
    link_options: ClassVar[dict[str, str]] = {}
    queue_options: ClassVar[dict[str, str]] = {
        "MaxLen": "Outbound: trim the stream to about this many entries (XADD MAXLEN ~); "
        "default no trimming.",
        "StartFrom": "Inbound: '0' (default) reads the whole stream, '$' only entries added "
        "after the consumer group is created.",
        "ClaimIdle": "Inbound: seconds after which entries a dead consumer left unacknowledged "
        "are claimed (XAUTOCLAIM); default 60.",
    }
    job_options: ClassVar[dict[str, str]] = {}
    domains: ClassVar[tuple[str, ...]] = ("QUEUE", "TOPIC")
    outbound_guarantee: ClassVar[tuple[str, str]] = (
        EXACTLY_ONCE,
        "With outbound_log_queue set, the batch and its log record are one MULTI/EXEC, so after "
        "a crash the log says whether the batch went out (without it: at-least-once).",
    )
    inbound_guarantee: ClassVar[tuple[str, str]] = (
        EXACTLY_ONCE,
        "Entries stay pending in the consumer group until XACK, and the runner records each "
        "entry id with the enqueue in PostgreSQL and skips a redelivered one.",
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
        self.port: int = int(properties.get("port") or 6379)
        self.db: int = int(properties.get("db") or 0)
        self.consumer: str = properties.get("client_id") or client_id
        self.log_key: str = properties.get("outbound_log_queue") or ""
        if not self.log_key:
            self.outbound_guarantee = (
                AT_LEAST_ONCE,
                "No outbound_log_queue: after a crash the runner cannot tell whether the last "
                "batch was added, and sends it again.",
            )
        self._redis: redis.Redis | None = None
        self._max_bulk: int | None = None

    # -- validation --

    @classmethod
    def validate_properties(cls, properties: dict[str, Any]) -> dict[str, Any]:
        cleaned = clean_properties(cls.properties, properties)
        if cleaned["db"] < 0:
            raise PropertyError("Property 'db' must be 0 or more.", field="db")
        if cleaned["outbound_log_queue"]:
            try:
                cls._check_key(cleaned["outbound_log_queue"])
            except PropertyError as exc:
                raise PropertyError(str(exc), field="outbound_log_queue") from None
        return cleaned

    @classmethod
    def validate_queue_name(cls, name: str, domain: str) -> None:
        if domain not in cls.domains:
            raise PropertyError(f"Redis Streams has no domain {domain!r}.", field="domain")
        cls._check_key(name)

    @staticmethod
    def _check_key(name: str) -> None:
        # Redis keys are binary-safe; we keep to what an administrator can type and read.
        if not name or len(name.encode()) > 512:
            raise PropertyError("A stream key is 1 to 512 bytes.", field="provider_queue")
        if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in name):
            raise PropertyError(
                "A stream key has no spaces or control characters.", field="provider_queue"
            )

    # -- connection --

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"

    def _client(self) -> redis.Redis:
        if self._redis is None:
            tls = bool(self.props.get("tls"))
            verify = bool(self.props.get("tls_verify", True))
            self._redis = redis.Redis(
                host=self.host,
                port=self.port,
                db=self.db,
                username=self.props.get("username") or None,
                password=self.secret or None,
                client_name=self.consumer,
                socket_timeout=self.timeout,
                socket_connect_timeout=self.timeout,
                # No silent retries: a retried EXEC could add a batch twice.
                retry=Retry(NoBackoff(), 0),
                protocol=2,
                ssl=tls,
                ssl_ca_certs=(self.props.get("tls_ca_file") or None) if tls else None,
                ssl_cert_reqs="required" if verify else "none",
                ssl_check_hostname=verify and tls,
            )
        return self._redis

    def _error(self, exc: Exception, doing: str) -> ForeignError:
        # Order matters: AuthenticationError and TimeoutError are ConnectionError subclasses.
        if isinstance(exc, redis.exceptions.AuthenticationError):
            reason = "authentication failed (bad user name or password)"
        elif isinstance(exc, redis.exceptions.TimeoutError):
            reason = f"timed out after {self.timeout:g} s"
        elif isinstance(exc, redis.exceptions.ConnectionError):
            text = str(exc)
            if "refused" in text.lower():
                reason = "connection refused"
            elif "ssl" in text.lower() or "certificate" in text.lower():
                reason = f"TLS failed ({text})"
            else:
                reason = text or "connection lost"
        elif isinstance(exc, redis.exceptions.ResponseError):
            reason = f"Redis refused: {exc}"
        else:
            reason = f"{type(exc).__name__}: {exc}"
        return ForeignError(f"Redis at {self.where} db {self.db}: {doing} failed: {reason}")

    def test(self) -> str:
        try:
            info = self._client().info("server")
        except redis.exceptions.RedisError as exc:
            raise self._error(exc, "test") from exc
        version = str(info.get("redis_version", "0"))
        major, minor, *_ = (int(p) if p.isdigit() else 0 for p in (version + ".0.0").split("."))
        if (major, minor) < (6, 2):
            raise ForeignError(
                f"Redis {version} at {self.where} is too old: the driver needs 6.2 or later "
                "(XAUTOCLAIM)."
            )
        return f"Redis {version} at {self.where} db {self.db}"

    def close(self) -> None:
        if self._redis is not None:
            self._redis.close()
            self._redis.connection_pool.disconnect()
            self._redis = None

    # -- outbound --

    def _max_bulk_len(self, r: redis.Redis) -> int:
        if self._max_bulk is None:
            try:
                value = r.config_get("proto-max-bulk-len").get("proto-max-bulk-len")
                self._max_bulk = int(value) if value else _DEFAULT_MAX_BULK
            except redis.exceptions.ResponseError:  # CONFIG disabled (managed Redis)
                self._max_bulk = _DEFAULT_MAX_BULK
        return self._max_bulk

    @staticmethod
    def _to_native(msg: GatewayMessage, max_bulk: int) -> dict[str, bytes | str]:
        """Raises ValueError with the reason when the message does not fit an entry."""
        if len(msg.body) > max_bulk:
            raise ValueError(
                f"body of {len(msg.body)} bytes is larger than the server's proto-max-bulk-len "
                f"of {max_bulk} bytes"
            )
        fields: dict[str, bytes | str] = {F_BODY: msg.body}
        for name, text in (
            (F_CONTENT_TYPE, msg.content_type),
            (F_MSGID, msg.msgid or ""),
            (F_CORRELATION, msg.correlation),
            (F_TYPE, msg.type_name),
        ):
            if text:
                fields[name] = text
        if msg.priority != 1:
            fields[F_PRIORITY] = str(int(msg.priority))
        if msg.expiration is not None:
            fields[F_EXPIRATION] = repr(float(msg.expiration))
        if msg.enq_time is not None:
            fields[F_ENQ_TIME] = msg.enq_time.isoformat()
        types: dict[str, str] = {}
        for name, value in msg.headers.items():
            if not isinstance(name, str) or not name:
                raise ValueError(f"header name {name!r} must be non-empty text")
            try:
                text, type_name = encode_header_value(value)
            except TypeError as exc:
                raise ValueError(f"header {name!r}: {exc}") from None
            fields[HEADER_PREFIX + name] = text
            if type_name:
                types[name] = type_name
        if types:
            fields[F_HEADER_TYPES] = json.dumps(types, separators=(",", ":"), sort_keys=True)
        return fields

    def publish(
        self,
        dest: Destination,
        messages: list[GatewayMessage],
        *,
        dedupe_ids: list[str],
        log_record: dict[str, Any] | None,
    ) -> None:
        # dedupe_ids are not used: Redis 7 has no idempotent XADD; the log record does that job.
        stream = dest.provider_name
        maxlen = self._maxlen(dest)
        try:
            r = self._client()
            max_bulk = self._max_bulk_len(r)
        except redis.exceptions.RedisError as exc:
            raise self._error(exc, "publish") from exc
        natives = []
        for index, msg in enumerate(messages):
            try:
                natives.append(self._to_native(msg, max_bulk))
            except ValueError as exc:
                raise BatchConversionError(index, str(exc)) from None
        log_key = self.log_key if log_record is not None else ""
        try:
            with r.pipeline(transaction=True) as pipe:
                if log_key:
                    # A command failing inside EXEC does not undo the others, so make sure none
                    # can (WRONGTYPE) before MULTI; WATCH turns a concurrent change into an
                    # aborted EXEC instead of a log record for a batch that is not there.
                    pipe.watch(stream, log_key)
                    for key, wanted in ((stream, b"stream"), (log_key, b"hash")):
                        found = pipe.type(key)
                        if found not in (b"none", wanted):
                            raise ForeignError(
                                f"Redis at {self.where} db {self.db}: key {key!r} is a "
                                f"{found.decode()}, not a {wanted.decode()}."
                            )
                    pipe.multi()
                for fields in natives:
                    pipe.xadd(stream, fields, maxlen=maxlen, approximate=True)
                if log_key:
                    assert log_record is not None
                    pipe.hset(log_key, str(log_record["job"]), json.dumps(log_record, default=str))
                pipe.execute()
        except redis.exceptions.WatchError as exc:
            raise ForeignError(
                f"Redis at {self.where} db {self.db}: publish failed: {stream!r} or "
                f"{log_key!r} changed during the transaction; nothing was added."
            ) from exc
        except redis.exceptions.RedisError as exc:
            raise self._error(exc, "publish") from exc

    def _maxlen(self, dest: Destination) -> int | None:
        value = (dest.options.get("MaxLen") or "").strip()
        if not value:
            return None
        try:
            maxlen = int(value)
        except ValueError:
            raise ForeignError("Queue option MaxLen must be a whole number.") from None
        if maxlen < 1:
            raise ForeignError("Queue option MaxLen must be at least 1.")
        return maxlen

    def read_outbound_log(self, job_key: str) -> dict[str, Any] | None:
        if not self.log_key:
            return None
        try:
            raw = self._client().hget(self.log_key, job_key)
        except redis.exceptions.RedisError as exc:
            raise self._error(exc, "read_outbound_log") from exc
        return None if raw is None else json.loads(raw)

    def clear_outbound_log(self, job_key: str) -> None:
        if not self.log_key:
            return
        try:
            self._client().hdel(self.log_key, job_key)
        except redis.exceptions.RedisError as exc:
            raise self._error(exc, "clear_outbound_log") from exc

    # -- inbound --

    def subscribe(self, source: Destination, subscription: str) -> None:
        start = (source.options.get("StartFrom") or "0").strip()
        if start not in ("0", "$"):
            raise ForeignError("Queue option StartFrom must be '0' or '$'.")
        try:
            self._client().xgroup_create(
                source.provider_name, subscription, id=start, mkstream=True
            )
        except redis.exceptions.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):  # the group exists: nothing to do
                raise self._error(exc, "subscribe") from exc
        except redis.exceptions.RedisError as exc:
            raise self._error(exc, "subscribe") from exc

    def fetch(
        self, source: Destination, subscription: str, *, max_messages: int, timeout: float
    ) -> list[Received]:
        try:
            return self._fetch(source, subscription, max(1, max_messages), timeout)
        except redis.exceptions.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise self._error(exc, "fetch") from exc
        except redis.exceptions.RedisError as exc:
            raise self._error(exc, "fetch") from exc
        # The group is gone (stream deleted or never subscribed): create it, as subscribe does.
        self.subscribe(source, subscription)
        try:
            return self._fetch(source, subscription, max(1, max_messages), timeout)
        except redis.exceptions.RedisError as exc:
            raise self._error(exc, "fetch") from exc

    def _fetch(
        self, source: Destination, subscription: str, count: int, timeout: float
    ) -> list[Received]:
        r = self._client()
        stream = source.provider_name
        entries: list[tuple[bytes, dict[bytes, bytes] | None]] = []
        seen: set[bytes] = set()

        def take(batch: list[Any]) -> None:
            for entry_id, fields in batch:
                if entry_id not in seen:
                    seen.add(entry_id)
                    entries.append((entry_id, fields))

        # 1. Our own pending entries (delivered before a crash, never acknowledged) come first.
        for _name, batch in r.xreadgroup(subscription, self.consumer, {stream: "0"}, count=count):
            take(batch)
        # 2. Entries another consumer of the group left idle too long (it died): claim them.
        if len(entries) < count:
            _cursor, claimed, *_deleted = r.xautoclaim(
                stream,
                subscription,
                self.consumer,
                min_idle_time=int(self._claim_idle(source) * 1000),
                start_id="0-0",
                count=count - len(entries),
            )
            take(claimed)
        # 3. New entries; block for the first one only when there is nothing to return yet.
        if len(entries) < count:
            block_ms = int(min(timeout, self.timeout) * 1000)
            block = None if entries or block_ms <= 0 else block_ms  # BLOCK 0 would be forever
            for _name, batch in (
                r.xreadgroup(
                    subscription,
                    self.consumer,
                    {stream: ">"},
                    count=count - len(entries),
                    block=block,
                )
                or []
            ):
                take(batch)
        received = []
        trimmed = []
        for entry_id, fields in entries:
            if not fields:
                trimmed.append(entry_id)  # trimmed away (MaxLen) while pending: nothing to read
                continue
            received.append(self._received(stream, entry_id.decode(), fields))
        if trimmed:
            r.xack(stream, subscription, *trimmed)
        return received

    def _claim_idle(self, source: Destination) -> float:
        try:
            value = float(source.options.get("ClaimIdle") or 60)
        except ValueError:
            raise ForeignError("Queue option ClaimIdle must be a number of seconds.") from None
        if value < 0:
            raise ForeignError("Queue option ClaimIdle must not be negative.")
        return value

    def _received(self, stream: str, entry_id: str, fields: dict[bytes, bytes]) -> Received:
        key = f"{stream}:{entry_id}"
        raw = fields.get(F_BODY.encode())
        if raw is None:
            # Not one of ours: the raw form of a field-only entry is its fields as JSON.
            raw = json.dumps(
                {k.decode(errors="replace"): v.decode(errors="replace") for k, v in fields.items()}
            ).encode()
        try:
            message = self._from_native(entry_id, fields)
        except (ValueError, TypeError, UnicodeDecodeError) as exc:
            return Received(
                key=key, token=entry_id, message=None, raw=raw, conversion_error=str(exc)
            )
        return Received(key=key, token=entry_id, message=message, raw=raw)

    @staticmethod
    def _from_native(entry_id: str, raw_fields: dict[bytes, bytes]) -> GatewayMessage:
        body = raw_fields.get(F_BODY.encode(), b"")
        fields = {k.decode(): v.decode() for k, v in raw_fields.items() if k != F_BODY.encode()}
        types = json.loads(fields.get(F_HEADER_TYPES, "{}"))
        if not isinstance(types, dict):
            raise ValueError(f"field {F_HEADER_TYPES} is not a JSON object")
        stored = _entry_time(entry_id)
        expiration: float | None = None
        if F_EXPIRATION in fields:
            # Relative to XADD: what is left after the time spent in the stream.
            age = max(0.0, time.time() - stored.timestamp())
            expiration = max(0.0, float(fields[F_EXPIRATION]) - age)
        enq_time = datetime.fromisoformat(fields[F_ENQ_TIME]) if F_ENQ_TIME in fields else stored
        message = GatewayMessage(
            body=body,
            msgid=fields.get(F_MSGID) or None,
            correlation=fields.get(F_CORRELATION, ""),
            priority=int(fields.get(F_PRIORITY, "1")),
            expiration=expiration,
            type_name=fields.get(F_TYPE, ""),
            content_type=fields.get(F_CONTENT_TYPE, ""),
            enq_time=enq_time if enq_time.tzinfo else enq_time.replace(tzinfo=UTC),
        )
        for name, text in fields.items():
            if name.startswith(HEADER_PREFIX):
                header = name[len(HEADER_PREFIX) :]
                message.headers[header] = decode_header_value(text, types.get(header))
            elif name not in _RESERVED:
                message.headers[name] = text  # a foreign producer's own field
        return message

    def ack(self, source: Destination, subscription: str, received: list[Received]) -> None:
        if not received:
            return
        try:
            # One XACK with every id: a single round trip, applied atomically.
            self._client().xack(source.provider_name, subscription, *[r.token for r in received])
        except redis.exceptions.RedisError as exc:
            raise self._error(exc, "ack") from exc

    def unsubscribe(self, source: Destination, subscription: str) -> None:
        try:
            self._client().xgroup_destroy(source.provider_name, subscription)
        except redis.exceptions.ResponseError as exc:
            if "requires the key to exist" not in str(exc):  # no stream, so no group either
                raise self._error(exc, "unsubscribe") from exc
        except redis.exceptions.RedisError as exc:
            raise self._error(exc, "unsubscribe") from exc

    def publish_raw(self, dest: Destination, raw: bytes, *, reason: str) -> None:
        try:
            self._client().xadd(
                dest.provider_name,
                {F_BODY: raw, F_EXCEPTION_REASON: reason},
                maxlen=self._maxlen(dest),
                approximate=True,
            )
        except redis.exceptions.RedisError as exc:
            raise self._error(exc, "publish_raw") from exc
