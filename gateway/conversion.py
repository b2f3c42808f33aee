"""Our messages ↔ MGW's internal format (spec §1.14.1, first and last stage of the two-stage
conversion; the drivers do internal ↔ native). docs/gateway/conversion.md has the table.

Our payloads are JSON. Outbound, a JSON string travels as its text (text/plain), anything else
as compact JSON (application/json). Inbound, a body declared JSON must parse; text/* stays a
string; an undeclared body is JSON when it parses and a string otherwise; a body that is not
UTF-8 cannot be held by our queues and is a conversion failure.
"""

from __future__ import annotations

import json
import math
from typing import Any

from gateway.drivers.base import ConversionError, GatewayMessage
from queues import engine

JSON = "application/json"
TEXT = "text/plain; charset=utf-8"

# MGW's conversion failure codes (spec §4.5) as this gateway reports them, in the agent log's
# code column, the job's last error and the exception queue's copy.
PAYLOAD_NOT_SUPPORTED = "720"  # outbound: the foreign system cannot carry this message
TRANSFORMATION_TYPE = "721"  # a transformation's result cannot be converted or does not fit
TRANSFORMATION_FAILED = "722"  # a transformation raised
CONVERSION_NOT_SUPPORTED = "724"  # inbound: the foreign message does not fit our queue


def body_of(payload: Any) -> tuple[bytes, str]:
    if isinstance(payload, str):
        return payload.encode("utf-8"), TEXT
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8"), JSON


def outbound(message: engine.DequeuedMessage, payload: Any, *, preserve_id: bool) -> GatewayMessage:
    """One dequeued message (``payload`` already transformed) in the internal format."""
    body, content_type = body_of(payload)
    return GatewayMessage(
        body=body,
        msgid=str(message.id) if preserve_id else None,
        correlation=message.correlation,
        priority=message.priority,
        type_name=message.type_name,
        content_type=content_type,
        headers=dict(message.headers or {}),
        enq_time=message.enq_time,
    )


def _refuse_constant(name: str) -> Any:
    raise ConversionError(f"the body holds {name}, which JSON (and our queues) cannot")


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def _loads(text: str) -> Any:
    value = json.loads(text, parse_constant=_refuse_constant)
    # A number too large for a double parses as inf; PostgreSQL's jsonb refuses it.
    if not _finite(value):
        raise ConversionError("the body holds a number too large for JSON")
    return value


def payload_of(message: GatewayMessage) -> Any:
    try:
        text = message.body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConversionError(
            f"the body is not UTF-8 text ({len(message.body)} bytes, invalid at byte "
            f"{exc.start}); our queues hold JSON and text"
        ) from exc
    if "\x00" in text:
        raise ConversionError("the body holds a NUL character, which our queues cannot store")
    kind = (message.content_type or "").split(";")[0].strip().lower()
    if kind == JSON or kind.endswith("+json"):
        try:
            return _loads(text)
        except ValueError as exc:
            raise ConversionError(f"the body is declared {kind} but is not JSON: {exc}") from exc
    if kind.startswith("text/"):
        return text
    try:
        return _loads(text)
    except (ValueError, ConversionError):
        return text  # undeclared and not (storable) JSON: the text itself


def inbound(
    message: GatewayMessage, payload: Any, *, preserve_id: bool, link: str
) -> engine.NewMessage:
    headers = dict(message.headers or {})
    # PostgreSQL's text and jsonb cannot hold NUL (a JSON "\u0000" escape included).
    for what, value in (("payload", payload), ("headers", headers)):
        if "\\u0000" in json.dumps(value):
            raise ConversionError(
                f"the {what} holds a NUL character, which our queues cannot store"
            )
    if preserve_id and message.msgid:
        headers["mgw_foreign_msgid"] = message.msgid
    return engine.NewMessage(
        payload=payload,
        priority=message.priority,
        expiration=message.expiration,
        correlation=message.correlation or "",
        sender=f"MGW@{link}"[:128],
        headers=headers,
        type_name=message.type_name or "",
    )
