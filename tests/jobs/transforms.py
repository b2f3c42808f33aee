"""Custom transformations the propagation tests register in AQ_TRANSFORMATIONS."""

from __future__ import annotations

import dataclasses
from typing import Any

from rules.lang.values import UserMessage


def explode_on_poison(message: Any) -> Any:
    """Fails on a payload marked poison; passes everything else on with a stamp."""
    payload = message.payload
    if isinstance(payload, dict) and payload.get("poison"):
        raise ValueError("poisoned payload")
    if isinstance(message, UserMessage) and isinstance(payload, dict):
        if payload.get("drop_id"):  # breaks a typed destination's schema
            return dataclasses.replace(
                message, payload={k: v for k, v in payload.items() if k != "id"}
            )
        return dataclasses.replace(message, payload={**payload, "stamped": True})
    return message


def tag_first(message: Any) -> Any:
    """Marks which rule's transformation ran (the Spark job test of "first TRUE rule")."""
    return dataclasses.replace(message, payload={**message.payload, "by": "first"})


def tag_second(message: Any) -> Any:
    return dataclasses.replace(message, payload={**message.payload, "by": "second"})
