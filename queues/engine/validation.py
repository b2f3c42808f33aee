"""Payload validation: the message-kind shapes and a typed queue's JSON Schema."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from core.storable import clean_json_text, encode_json, json_problems, seconds_problem
from queues.engine.types import DDL_LCR, ROW_LCR, USER, InvalidMessage, NewMessage, QueueInfo

_ROW_LCR_SCHEMA = {
    "type": "object",
    "required": ["source_database_name", "command_type", "object_owner", "object_name"],
    "properties": {
        "source_database_name": {"type": "string", "minLength": 1},
        "command_type": {
            "enum": ["INSERT", "UPDATE", "DELETE", "LOB WRITE", "LOB TRIM", "LOB ERASE"]
        },
        "object_owner": {"type": "string", "minLength": 1},
        "object_name": {"type": "string", "minLength": 1},
        "tag": {"type": ["string", "null"], "pattern": "^([0-9A-Fa-f]{2})*$"},
        "transaction_id": {"type": ["string", "null"]},
        "old_values": {"type": "object"},
        "new_values": {"type": "object"},
    },
}
_DDL_LCR_SCHEMA = {
    "type": "object",
    "required": ["source_database_name", "command_type", "object_type", "ddl_text"],
    "properties": {
        "source_database_name": {"type": "string", "minLength": 1},
        "command_type": {"type": "string", "minLength": 1},
        "object_type": {"type": "string", "minLength": 1},
        "object_owner": {"type": ["string", "null"]},
        "object_name": {"type": ["string", "null"]},
        "base_table_owner": {"type": ["string", "null"]},
        "base_table_name": {"type": ["string", "null"]},
        "ddl_text": {"type": "string"},
        "tag": {"type": ["string", "null"], "pattern": "^([0-9A-Fa-f]{2})*$"},
    },
}


@lru_cache(maxsize=512)
def _validator(schema_json: str) -> Draft202012Validator:
    schema = json.loads(schema_json)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def schema_check(schema: Any) -> None:
    """Raise InvalidMessage naming ``payload_schema`` if ``schema`` is not a valid JSON Schema."""
    try:
        _validator(json.dumps(schema, sort_keys=True))
    except SchemaError as exc:
        raise InvalidMessage(
            f"Not a valid JSON Schema: {exc.message}", field="payload_schema"
        ) from exc


TAG_MAX_BYTES = 2000  # Oracle's Streams tag is RAW(2000)
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2})*\Z")


def tag_problem(tag: Any, *, field: str = "tag") -> None:
    """Raise InvalidMessage naming ``field`` unless ``tag`` is a Streams tag as hexadecimal text:
    an even number of hex digits, at most 2000 bytes (an empty one is NULL)."""
    if type(tag) is not str or not _HEX.match(tag):
        raise InvalidMessage(
            "A tag is hexadecimal text (RAW): an even number of digits 0-9, A-F, such as 1F02.",
            field=field,
        )
    if len(tag) > 2 * TAG_MAX_BYTES:
        raise InvalidMessage(
            f"A tag holds at most {TAG_MAX_BYTES} bytes ({2 * TAG_MAX_BYTES} hex digits).",
            field=field,
        )


def _path(prefix: str, parts: Iterable[Any]) -> str:
    out = prefix
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _json_text(value: Any, field: str) -> str:
    """``value``'s JSON text once PostgreSQL can store it, or InvalidMessage naming the place.
    The fast check judges most values from their text; the rest are walked, then encoded, which
    also catches what is no JSON at all (a set, a Decimal, a datetime from a Python caller; an
    integer of more digits than Python will print) before the enqueue's own encoding would."""
    if (text := clean_json_text(value)) is not None:
        return text
    if problems := json_problems(value, field, limit=1):
        path, message = next(iter(problems.items()))
        raise InvalidMessage(message, field=path)
    try:
        return encode_json(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidMessage(f"Not JSON: {exc}.", field=field) from exc


def _at(position: int | None, name: str) -> str:
    """A message field's name in an error: ``messages[2].payload`` in a batch, else ``payload``.
    Built only when an error needs it (validation runs for every message of every batch)."""
    return name if position is None else f"messages[{position}].{name}"


# A tuple, not a set: an unhashable kind from a caller is refused, not a TypeError.
_KINDS = (USER, ROW_LCR, DDL_LCR)


def validate_message(queue: QueueInfo, msg: NewMessage, *, position: int | None = None) -> str:
    """Check one message against the queue's payload type and the message-kind shapes; return
    the payload's JSON text (the enqueue sends it as it is)."""
    if msg.kind not in _KINDS:
        raise InvalidMessage(f"Unknown message kind {msg.kind!r}.", field=_at(position, "kind"))
    # The common message (no expiration, no delay, no text properties, no tag) skips those
    # checks, each group behind one test: validation runs for every message of every batch.
    delay, expiration = msg.delay, msg.expiration
    if delay or expiration is not None:
        if expiration is not None and expiration < 0:
            raise InvalidMessage(
                "Expiration cannot be negative.", field=_at(position, "expiration")
            )
        if delay and delay < 0:
            raise InvalidMessage("Delay cannot be negative.", field=_at(position, "delay"))
        for name, seconds in (("delay", delay), ("expiration", expiration)):
            if seconds and (message := seconds_problem(seconds)):
                raise InvalidMessage(message, field=_at(position, name))
    # Whatever the caller (API, page, facade, gateway, Spark): only what PostgreSQL can store.
    payload_text = _json_text(msg.payload, _at(position, "payload"))
    if msg.headers:
        _json_text(msg.headers, _at(position, "headers"))
    if msg.correlation or msg.sender or msg.type_name or msg.recipients:
        for name, value in (
            ("correlation", msg.correlation),
            ("sender", msg.sender),
            ("type_name", msg.type_name),
            ("recipients", msg.recipients),
        ):
            if value and (
                problems := json_problems(
                    list(value) if name == "recipients" else value,
                    _at(position, name),
                    limit=1,
                )
            ):
                path, message = next(iter(problems.items()))
                raise InvalidMessage(message, field=path)
    if msg.tag is not None:
        tag_problem(msg.tag, field=_at(position, "tag"))
    priority = msg.priority
    # type() first: the common plain int skips both isinstance calls.
    if type(priority) is not int and (isinstance(priority, bool) or not isinstance(priority, int)):
        raise InvalidMessage("Priority must be an integer.", field=_at(position, "priority"))
    if not -(2**31) <= priority < 2**31:
        raise InvalidMessage("Priority is out of range.", field=_at(position, "priority"))
    if len(msg.correlation) > 128:  # unconditional, as before: a non-str correlation fails here
        raise InvalidMessage("At most 128 characters.", field=_at(position, "correlation"))
    if msg.kind == USER and queue.payload_schema is None:
        return payload_text  # nothing to check the payload against
    schemas: list[Any] = []
    if msg.kind == ROW_LCR:
        schemas.append(_ROW_LCR_SCHEMA)
    elif msg.kind == DDL_LCR:
        schemas.append(_DDL_LCR_SCHEMA)
    if queue.payload_type.upper() != "ANY" and queue.payload_schema is not None:
        if (
            msg.kind == USER
            and msg.type_name
            and msg.type_name.upper() != queue.payload_type.upper()
        ):
            raise InvalidMessage(
                f"Queue {queue.name} takes payloads of type {queue.payload_type}, "
                f"not {msg.type_name}.",
                field=_at(position, "type_name"),
            )
        if msg.kind == USER:
            schemas.append(queue.payload_schema)
    for schema in schemas:
        validator = _validator(json.dumps(schema, sort_keys=True))
        error = next(iter(sorted(validator.iter_errors(msg.payload), key=lambda e: e.path)), None)
        if error is not None:
            raise InvalidMessage(
                error.message, field=_path(_at(position, "payload"), error.absolute_path)
            )
    return payload_text
