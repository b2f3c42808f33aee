"""Example custom rule-based transformations, registered in ``AQ_TRANSFORMATIONS``.

A custom transformation is a callable ``fn(message) -> message | None`` (None discards the
message). It gets the message the rule was TRUE for, after row migration and the rule's
declarative transformations, and must return a new message rather than change the one it got.
These examples change row LCRs and pass every other message through unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from rules.lang.values import RowLCR

Transformation = Callable[[Any], Any]


def _map_column(column: str, fn: Callable[[Any], Any]) -> Transformation:
    """A transformation applying ``fn`` to one column in the old and new values of row LCRs."""

    def transformation(message: Any) -> Any:
        if not isinstance(message, RowLCR):
            return message
        changes: dict[str, Mapping[str, Any]] = {}
        for name in ("old_values", "new_values"):
            values = getattr(message, name)
            if column in values:
                changes[name] = {**values, column: fn(values[column])}
        return dataclasses.replace(message, **changes) if changes else message

    transformation.__name__ = f"{fn.__name__}_{column.lower()}"
    return transformation


def upper_column(column: str) -> Transformation:
    """Upper-case one text column (other values, NULL included, are left as they are)."""

    def upper(value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    return _map_column(column, upper)


def mask_column(column: str, *, keep: int = 4, mask: str = "*") -> Transformation:
    """Mask all but the last ``keep`` characters of one text column."""

    def masked(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        shown = value[-keep:] if keep > 0 else ""
        return mask * (len(value) - len(shown)) + shown

    return _map_column(column, masked)


# The registered instances (see console/settings.py AQ_TRANSFORMATIONS).
upper_last_name = upper_column("LAST_NAME")
mask_phone_number = mask_column("PHONE_NUMBER")
