"""Rule-based transformations (spec/rules.md §4, §7.3): what happens to a message after a rule in
a positive rule set is TRUE for it.

**Declarative** transformations (DBMS_STREAMS_ADM.KEEP_COLUMNS, DELETE_COLUMN, RENAME_COLUMN,
ADD_COLUMN, RENAME_TABLE, RENAME_SCHEMA) change row LCRs only; they hang on DML rules. Several on
one rule run in Oracle's default order (keep → delete → rename column → add → rename table →
rename schema) unless step numbers say otherwise: lower steps first, equal steps in the default
order, and each step sees the result of the previous one.

Semantics chosen where Oracle's documentation is silent or would raise (one odd message must
never stop a client, the same stance as the condition language):

- ``value_type`` ``OLD`` / ``NEW`` / ``*`` scopes column transformations to the old values, the
  new values or both. ADD COLUMN defaults to ``NEW`` (Oracle's default); the others to ``*``.
- ADD COLUMN only fills a value list the command carries: INSERT carries new values, DELETE old
  values, UPDATE both; other commands (LOB operations) whichever lists are non-empty. So an
  ``OLD`` add on an INSERT is a no-op rather than inventing old values an INSERT cannot have.
- ADD COLUMN leaves a column the list already carries untouched, and RENAME COLUMN leaves a list
  alone when it already carries the target name: neither silently overwrites data (Oracle's
  ``LCR$_ROW_RECORD.ADD_COLUMN``/``RENAME_COLUMN`` raise there).
- DELETE COLUMN / RENAME COLUMN of a column the LCR lacks is a no-op.
- Column transformations may be scoped to one table (``table``, ``OWNER.NAME``): they then touch
  only row LCRs of that table, judged by the object the LCR named when the rule fired, so a
  RENAME TABLE ordered first does not switch off the column steps of its own rule. RENAME TABLE
  and RENAME SCHEMA apply when the LCR (as it is at that step) names ``from_…``.
- Names are Oracle identifiers: unquoted names are upper-cased, ``"quoted"`` ones kept exactly
  (:func:`identifier`). Declaratives built with :func:`declarative` hold canonical names.

**Custom** transformations are Python callables, ``fn(message) -> message | None``, named in a
registry (the ``AQ_TRANSFORMATIONS`` setting: name → dotted path). :func:`resolve` imports only
paths the registry holds, never a path a user typed. Returning None discards the message (Oracle's
one-to-many capture form discards on an empty result; for the one-to-one form we choose the same).

Every function returns a new LCR (or the same object when nothing changed) and never mutates its
input. Pure Python, no Django: the same code runs in web, Celery and Spark processes.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from rules.lang.values import RowLCR, column_name

__all__ = [
    "ADD_COLUMN",
    "COLUMN_TYPES",
    "DEFAULT_ORDER",
    "DELETE_COLUMN",
    "KEEP_COLUMNS",
    "PARAMETERS",
    "RENAME_COLUMN",
    "RENAME_SCHEMA",
    "RENAME_TABLE",
    "STORED_FIELDS",
    "VALUE_TYPES",
    "CustomFunction",
    "Declarative",
    "TransformationError",
    "apply_declarative",
    "declarative",
    "identifier",
    "is_row_lcr",
    "ordered",
    "qualified_table",
    "resolve",
    "transform_row",
]

KEEP_COLUMNS = "KEEP COLUMNS"
DELETE_COLUMN = "DELETE COLUMN"
RENAME_COLUMN = "RENAME COLUMN"
ADD_COLUMN = "ADD COLUMN"
RENAME_TABLE = "RENAME TABLE"
RENAME_SCHEMA = "RENAME SCHEMA"

# Oracle's default execution order (rules.choices.DeclarativeType lists the same, in this order).
DEFAULT_ORDER: tuple[str, ...] = (
    KEEP_COLUMNS,
    DELETE_COLUMN,
    RENAME_COLUMN,
    ADD_COLUMN,
    RENAME_TABLE,
    RENAME_SCHEMA,
)
_RANK = {t: i for i, t in enumerate(DEFAULT_ORDER)}
COLUMN_TYPES = frozenset({KEEP_COLUMNS, DELETE_COLUMN, RENAME_COLUMN, ADD_COLUMN})
VALUE_TYPES = ("OLD", "NEW", "*")
_LISTS = {"OLD": ("old_values",), "NEW": ("new_values",), "*": ("old_values", "new_values")}
# The value lists each command carries (ADD COLUMN never invents a list the command lacks).
_CARRIED = {
    "INSERT": ("new_values",),
    "DELETE": ("old_values",),
    "UPDATE": ("old_values", "new_values"),
}

# The parameters each declarative type takes (DBMS_STREAMS_ADM's names); others are refused.
_PARAMS: dict[str, tuple[str, ...]] = {
    KEEP_COLUMNS: ("column_list", "value_type"),
    DELETE_COLUMN: ("column_name", "value_type"),
    RENAME_COLUMN: ("from_column_name", "to_column_name", "value_type"),
    ADD_COLUMN: ("column_name", "column_value", "value_type"),
    RENAME_TABLE: ("from_table_name", "to_table_name"),
    RENAME_SCHEMA: ("from_schema_name", "to_schema_name"),
}
PARAMETERS = (
    "column_list",
    "column_name",
    "column_value",
    "from_column_name",
    "to_column_name",
    "from_table_name",
    "to_table_name",
    "from_schema_name",
    "to_schema_name",
    "value_type",
)

# What a stored declarative transformation keeps (rules.models.DeclarativeTransformation).
STORED_FIELDS = ("declarative_type", "step_number", *PARAMETERS)

L = TypeVar("L", bound="RowLCR | Mapping[str, Any]")
CustomFunction = Callable[[Any], Any]


class TransformationError(ValueError):
    """A transformation that cannot be declared, resolved or run; ``field`` names the input."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.message = message
        self.field = field


# --- names ---------------------------------------------------------------------------------------

_TABLE = re.compile(r'\s*("[^"]+"|[^".\s]+)\s*\.\s*("[^"]+"|[^".\s]+)\s*\Z')


def identifier(text: Any, *, field: str) -> str:
    """An Oracle identifier as stored: ``"Quoted"`` exactly, plain upper-cased; no dots."""
    name = column_name(text) if isinstance(text, str) else None
    if not name or "." in name or not name.strip():
        raise TransformationError(f"{text!r} is not a valid name.", field=field)
    return name


def qualified_table(text: Any, *, field: str) -> str:
    """``schema.table`` as ``SCHEMA.TABLE`` (each part an identifier); the schema is required
    because there is no "current user" to default it to."""
    m = _TABLE.match(text) if isinstance(text, str) else None
    if m is None:
        raise TransformationError(
            f"{text!r} is not a table name; write it as schema.table.", field=field
        )
    return f"{identifier(m.group(1), field=field)}.{identifier(m.group(2), field=field)}"


def _split(table: str) -> tuple[str, str]:
    owner, _, name = table.partition(".")
    return owner, name


# --- declarations --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Declarative:
    """One declarative transformation, with canonical names (see :func:`declarative`).

    ``table`` (``OWNER.NAME`` or None for any table) scopes the column types; ``value_type`` is
    ignored by RENAME TABLE / RENAME SCHEMA."""

    declarative_type: str
    step_number: int = 0
    value_type: str = "*"
    table: str | None = None
    column_name: str = ""
    column_list: tuple[str, ...] = ()
    column_value: Any = None
    from_column_name: str = ""
    to_column_name: str = ""
    from_table_name: str = ""
    to_table_name: str = ""
    from_schema_name: str = ""
    to_schema_name: str = ""

    def __post_init__(self) -> None:
        # Stored column lists come back from JSON as lists; keep the declaration immutable.
        object.__setattr__(self, "column_list", tuple(self.column_list or ()))

    @classmethod
    def from_stored(cls, row: Any, *, table: str | None = None) -> Declarative:
        """From a stored row (any object with the :data:`STORED_FIELDS` attributes), trusted to
        hold canonical names already (re-reading ``"quoted"`` names would upper-case them)."""
        return cls(table=table, **{f: getattr(row, f) for f in STORED_FIELDS})

    def stored(self) -> dict[str, Any]:
        """The :data:`STORED_FIELDS` as a row stores them (``column_list`` as a list)."""
        out = {f: getattr(self, f) for f in STORED_FIELDS}
        out["column_list"] = list(self.column_list)
        return out

    def describe(self) -> str:
        """One line for step lists and logs."""
        t = self.declarative_type
        scope = "" if t in (RENAME_TABLE, RENAME_SCHEMA) else f" ({self.value_type})"
        if t == KEEP_COLUMNS:
            what = ", ".join(self.column_list)
        elif t == DELETE_COLUMN:
            what = self.column_name
        elif t == RENAME_COLUMN:
            what = f"{self.from_column_name} → {self.to_column_name}"
        elif t == ADD_COLUMN:
            what = f"{self.column_name} = {self.column_value!r}"
        elif t == RENAME_TABLE:
            what = f"{self.from_table_name} → {self.to_table_name}"
        else:
            what = f"{self.from_schema_name} → {self.to_schema_name}"
        return f"{t} {what}{scope}"


def _given(value: Any) -> bool:
    return value not in (None, "", (), [])


def _required(value: Any, field: str, type_: str) -> Any:
    if not _given(value):
        raise TransformationError(f"{type_} needs {field}.", field=field)
    return value


def declarative(
    declarative_type: Any,
    *,
    step_number: Any = 0,
    value_type: Any = None,
    table: str | None = None,
    column_name: Any = "",
    column_list: Any = (),
    column_value: Any = None,
    from_column_name: Any = "",
    to_column_name: Any = "",
    from_table_name: Any = "",
    to_table_name: Any = "",
    from_schema_name: Any = "",
    to_schema_name: Any = "",
) -> Declarative:
    """Check and canonicalise one declarative transformation as DBMS_STREAMS_ADM would take it.
    Raises TransformationError naming the parameter at fault: an unknown type, a missing or
    malformed name, a parameter the type does not take, a value ADD COLUMN cannot add."""
    given = {
        "column_list": column_list,
        "column_name": column_name,
        "column_value": column_value,
        "from_column_name": from_column_name,
        "to_column_name": to_column_name,
        "from_table_name": from_table_name,
        "to_table_name": to_table_name,
        "from_schema_name": from_schema_name,
        "to_schema_name": to_schema_name,
        "value_type": value_type,
    }
    t = declarative_type.strip().upper() if isinstance(declarative_type, str) else None
    t = " ".join(t.replace("_", " ").split()) if t else t  # KEEP_COLUMNS → KEEP COLUMNS
    if t not in _RANK:
        raise TransformationError(
            f"Unknown declarative type {declarative_type!r}; use one of "
            f"{', '.join(DEFAULT_ORDER)}.",
            field="declarative_type",
        )
    if type(step_number) is not int or step_number < 0:
        raise TransformationError("must be a whole number, 0 or more.", field="step_number")
    takes = _PARAMS[t]
    for param in PARAMETERS:
        if (
            param not in takes
            and _given(given[param])
            and not (param == "value_type" and given[param] == "*")
        ):
            raise TransformationError(f"{t} does not take {param}.", field=param)
    if value_type is None or value_type == "":
        vt = "NEW" if t == ADD_COLUMN else "*"
    elif isinstance(value_type, str) and value_type.strip().upper() in VALUE_TYPES:
        vt = value_type.strip().upper()
    else:
        raise TransformationError("must be OLD, NEW or *.", field="value_type")

    def name(param: str, parse: Callable[..., str] = identifier) -> str:
        return parse(_required(given[param], param, t), field=param)

    def rename(what: str, parse: Callable[..., str] = identifier) -> dict[str, str]:
        src, dst = name(f"from_{what}_name", parse), name(f"to_{what}_name", parse)
        if src == dst:
            raise TransformationError(f"names the {what} it renames.", field=f"to_{what}_name")
        return {f"from_{what}_name": src, f"to_{what}_name": dst}

    fields: dict[str, Any] = {}
    if t == KEEP_COLUMNS:
        if isinstance(column_list, str):  # Oracle's column_list is a comma-separated VARCHAR2
            column_list = [c for c in column_list.split(",") if c.strip()]
        if not isinstance(column_list, Sequence) or not column_list:
            raise TransformationError(f"{t} needs a non-empty column_list.", field="column_list")
        names = [identifier(c, field="column_list") for c in column_list]
        fields["column_list"] = tuple(dict.fromkeys(names))
    elif t == DELETE_COLUMN:
        fields["column_name"] = name("column_name")
    elif t == RENAME_COLUMN:
        fields = rename("column")
    elif t == ADD_COLUMN:
        fields["column_name"] = name("column_name")
        # LOB, LONG, ROWID and object types cannot be added (§4.2); here: no objects or arrays.
        if isinstance(column_value, Mapping | list | tuple | set):
            raise TransformationError(
                "must be a single value (text, number or null), not an object or a list.",
                field="column_value",
            )
        fields["column_value"] = column_value
    elif t == RENAME_TABLE:
        fields = rename("table", qualified_table)
    else:
        fields = rename("schema")
    return Declarative(
        t,
        step_number=step_number,
        value_type=vt,
        table=table if t in COLUMN_TYPES else None,
        **fields,
    )


def ordered(transformations: Iterable[Declarative]) -> list[Declarative]:
    """Execution order: by step number, equal steps in Oracle's default order, then as given.
    With every step 0 this is exactly the default order."""
    return sorted(transformations, key=lambda t: (t.step_number, _RANK[t.declarative_type]))


# --- applying ------------------------------------------------------------------------------------


def is_row_lcr(message: Any) -> bool:
    """A row LCR object, or its JSON shape (``{"kind": "row_lcr", …}``)."""
    if isinstance(message, RowLCR):
        return True
    return isinstance(message, Mapping) and message.get("kind", "row_lcr") == "row_lcr"


def _get(lcr: Any, name: str) -> Any:
    return lcr.get(name) if isinstance(lcr, Mapping) else getattr(lcr, name)


def _with(lcr: L, changes: dict[str, Any]) -> L:
    if not changes:
        return lcr
    if isinstance(lcr, Mapping):
        return {**lcr, **changes}  # type: ignore[return-value]
    return dataclasses.replace(lcr, **changes)  # type: ignore[type-var]


def _object(lcr: Any) -> tuple[Any, Any]:
    return _get(lcr, "object_owner"), _get(lcr, "object_name")


def _rename_key(values: Mapping[str, Any], src: str, dst: str) -> dict[str, Any]:
    # Keeps the column's position: LCR column lists are ordered.
    return {(dst if k == src else k): v for k, v in values.items()}


def _column_step(lcr: Any, t: Declarative) -> dict[str, Any]:
    """The changed value lists of one column transformation."""
    changes: dict[str, Any] = {}
    lists = _LISTS[t.value_type]
    if t.declarative_type == ADD_COLUMN:
        command = str(_get(lcr, "command_type") or "").upper()
        carried = _CARRIED.get(command)
        if carried is None:
            carried = tuple(n for n in ("old_values", "new_values") if _get(lcr, n))
        lists = tuple(n for n in lists if n in carried)
    for name in lists:
        values: Mapping[str, Any] = _get(lcr, name) or {}
        if t.declarative_type == KEEP_COLUMNS:
            keep = set(t.column_list)
            if all(k in keep for k in values):
                continue
            changes[name] = {k: v for k, v in values.items() if k in keep}
        elif t.declarative_type == DELETE_COLUMN:
            if t.column_name in values:
                changes[name] = {k: v for k, v in values.items() if k != t.column_name}
        elif t.declarative_type == RENAME_COLUMN:
            if t.from_column_name in values and t.to_column_name not in values:
                changes[name] = _rename_key(values, t.from_column_name, t.to_column_name)
        elif t.column_name not in values:  # ADD COLUMN
            changes[name] = {**values, t.column_name: t.column_value}
    return changes


def apply_declarative(lcr: L, t: Declarative, *, origin: tuple[Any, Any] | None = None) -> L:
    """One declarative transformation applied to a row LCR. ``origin`` is the (owner, name) the
    LCR had when its rule fired, which the ``table`` scope of column types is judged by (the
    LCR's own object by default). Anything that is not a row LCR is returned unchanged."""
    if not is_row_lcr(lcr):
        return lcr
    t_type = t.declarative_type
    if t_type in COLUMN_TYPES:
        if t.table is not None and (origin or _object(lcr)) != _split(t.table):
            return lcr
        return _with(lcr, _column_step(lcr, t))
    if t_type == RENAME_TABLE:
        if _object(lcr) != _split(t.from_table_name):
            return lcr
        owner, name = _split(t.to_table_name)
        return _with(lcr, {"object_owner": owner, "object_name": name})
    if t_type == RENAME_SCHEMA:
        if _get(lcr, "object_owner") != t.from_schema_name:
            return lcr
        return _with(lcr, {"object_owner": t.to_schema_name})
    raise TransformationError(f"Unknown declarative type {t_type!r}.", field="declarative_type")


def transform_row(lcr: L, transformations: Iterable[Declarative]) -> L:
    """All of a rule's declarative transformations, in execution order (:func:`ordered`)."""
    if not is_row_lcr(lcr):
        return lcr
    origin = _object(lcr)
    for t in ordered(transformations):
        lcr = apply_declarative(lcr, t, origin=origin)
    return lcr


# --- custom --------------------------------------------------------------------------------------


def resolve(name: Any, registry: Mapping[str, str]) -> CustomFunction:
    """The callable registered under ``name``. Only paths in the registry are ever imported: a
    name the registry lacks is refused, whatever it looks like."""
    if not isinstance(name, str) or name not in registry:
        known = ", ".join(sorted(registry)) or "none are registered"
        raise TransformationError(
            f"{name!r} is not a registered transformation (AQ_TRANSFORMATIONS: {known}).",
            field="function",
        )
    path = registry[name]
    module_name, sep, attr = path.replace(":", ".").rpartition(".")
    try:
        if not sep or not module_name:
            raise ImportError(path)
        fn = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise TransformationError(
            f"{name} is registered as {path!r}, which cannot be imported ({exc}).",
            field="function",
        ) from exc
    if not callable(fn):
        raise TransformationError(
            f"{name} is registered as {path!r}, not a callable.", field="function"
        )
    return fn
