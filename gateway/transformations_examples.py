"""Example MGW transformations, registered in ``MGW_TRANSFORMATIONS``: ``fn(payload) -> payload``.
Outbound they run before the payload becomes the foreign body, inbound after the body became
our payload. An exception is a conversion failure: that message goes to the exception queue."""

from __future__ import annotations

from typing import Any


def envelope(payload: Any) -> Any:
    """Wrap the payload as {"data": payload}, the shape many consumers of a bus expect."""
    return {"data": payload}


def reject_poison(payload: Any) -> Any:
    """Refuse payloads marked {"poison": true}, pass the rest unchanged."""
    if isinstance(payload, dict) and payload.get("poison") is True:
        raise ValueError("payload is marked poison")
    return payload
