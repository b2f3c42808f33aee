"""Row migration for subset rules (spec/rules.md §3.5.4).

When a subset rule in a positive rule set is TRUE, its action context names the operation the row
LCR must carry from then on: an UPDATE that satisfies the INSERT rule (old row outside the subset,
new row inside) becomes an INSERT, one that satisfies the DELETE rule becomes a DELETE, anything
else passes unchanged. Migration never runs for negative rule sets; callers only reach here on a
positive hit.

Works on plain mappings (``{"command_type", "old_values", "new_values", ...}``, the message JSON
shape) and on row-LCR objects with those attributes (dataclasses are copied with ``replace``).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any, Protocol, TypeVar, runtime_checkable

from rules.lang.generators import ROW_SUBSET_ACTION, SubsettingOperation


@runtime_checkable
class RowChange(Protocol):
    """What migration needs of a row LCR."""

    command_type: str
    old_values: Mapping[str, Any]
    new_values: Mapping[str, Any]


L = TypeVar("L", bound="RowChange | Mapping[str, Any]")

# Operations a subset rule of each kind can fire on (§3.5.2: the command-type test of each rule).
_FIRES_ON = {
    SubsettingOperation.INSERT: frozenset({"INSERT", "UPDATE"}),
    SubsettingOperation.UPDATE: frozenset({"UPDATE"}),
    SubsettingOperation.DELETE: frozenset({"DELETE", "UPDATE"}),
}


class MigrationError(ValueError):
    """The LCR could not have satisfied the subset rule that is said to have fired."""


def subsetting_operation_of(
    action_context: Mapping[str, Any] | None = None, subsetting_operation: str | None = None
) -> SubsettingOperation | None:
    """The row-migration operation a rule carries, or None for rules that are not subset rules."""
    value = (action_context or {}).get(ROW_SUBSET_ACTION) or subsetting_operation
    if value is None or value == "":
        return None
    try:
        return SubsettingOperation(str(value).upper())
    except ValueError:
        raise MigrationError(f"Unknown subsetting operation {value!r}.") from None


def _get(lcr: Any, name: str) -> Any:
    return lcr.get(name) if isinstance(lcr, Mapping) else getattr(lcr, name)


def _with(lcr: L, **changes: Any) -> L:
    if isinstance(lcr, Mapping):
        return {**lcr, **changes}  # type: ignore[return-value]
    if dataclasses.is_dataclass(lcr) and not isinstance(lcr, type):
        return dataclasses.replace(lcr, **changes)
    out = copy.copy(lcr)
    for key, value in changes.items():
        setattr(out, key, value)
    return out


def row_migration(
    lcr: L,
    *,
    action_context: Mapping[str, Any] | None = None,
    subsetting_operation: str | None = None,
) -> L:
    """The row LCR to pass on after the subset rule with this action context (or subsetting
    operation) was TRUE for ``lcr``. The input is never modified.

    - UPDATE + INSERT rule → INSERT whose new values are the whole new row: the old
      (supplementally logged) values overlaid with the changed new values; no old values.
    - UPDATE + DELETE rule → DELETE carrying the old row; no new values.
    - Everything else (INSERT rule on an INSERT, UPDATE rule, DELETE rule on a DELETE, rules
      that are not subset rules) → the LCR unchanged.
    """
    operation = subsetting_operation_of(action_context, subsetting_operation)
    if operation is None:
        return lcr
    command = str(_get(lcr, "command_type") or "").upper()
    if command not in _FIRES_ON[operation]:
        raise MigrationError(
            f"A {operation} subset rule cannot be TRUE for a {command or 'command-less'} row LCR."
        )
    if command != "UPDATE" or operation is SubsettingOperation.UPDATE:
        return lcr
    old = dict(_get(lcr, "old_values") or {})
    new = dict(_get(lcr, "new_values") or {})
    if operation is SubsettingOperation.INSERT:
        # The destination does not have the row yet, so the INSERT needs every column: the
        # unchanged ones are only in the old values (hence the supplemental logging of §3.5.5).
        return _with(lcr, command_type="INSERT", old_values={}, new_values={**old, **new})
    return _with(lcr, command_type="DELETE", old_values=old, new_values={})
