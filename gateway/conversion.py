"""Our messages ↔ MGW's internal format (spec §1.14.1, first and last stage of the two-stage
conversion; the drivers do internal ↔ native). docs/gateway/conversion.md has the table.

Our payloads are JSON. Outbound, a JSON string travels as its text (text/plain), anything else
as compact JSON (application/json). Inbound, a body declared JSON must parse; text/* stays a
string; an undeclared body is JSON when it parses and a string otherwise; a body that is not
UTF-8 cannot be held by our queues and is a conversion failure.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.drivers.base import ConversionError, GatewayMessage
from queues import engine

JSON = "application/json"
TEXT = "text/plain; charset=utf-8"


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


def payload_of(message: GatewayMessage) -> Any:
    try:
        text = message.body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConversionError(
            f"the body is not UTF-8 text ({len(message.body)} bytes, invalid at byte "
            f"{exc.start}); our queues hold JSON and text"
        ) from exc
    kind = (message.content_type or "").split(";")[0].strip().lower()
    if kind == JSON or kind.endswith("+json"):
        try:
            return json.loads(text)
        except ValueError as exc:
            raise ConversionError(f"the body is declared {kind} but is not JSON: {exc}") from exc
    if kind.startswith("text/"):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def inbound(
    message: GatewayMessage, payload: Any, *, preserve_id: bool, link: str
) -> engine.NewMessage:
    headers = dict(message.headers or {})
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
