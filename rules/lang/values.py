"""The messages rules are evaluated against, and the value semantics of the condition language.

Values inside the engine belong to four families, plus NULL (None):

- VARCHAR2: ``str``
- NUMBER: ``int`` (integral literals and JSON integers) or ``Decimal``; never ``float``, so
  comparisons are exact (JSON floats become ``Decimal(repr(f))``)
- RAW: ``bytes`` (never empty: an empty RAW is NULL, as in Oracle)
- DATE: naive ``datetime``

Anything else (a nested payload object, a list, an ANYDATA wrapper) can be tested with IS [NOT]
NULL but compares as NULL. Comparing two families follows Oracle's implicit conversion: the string
side is converted to the other side's family (TO_NUMBER, HEXTORAW, an ISO date); a string that
does not convert makes the comparison NULL where Oracle would raise (ORA-01722 and friends), so one
odd message can never stop a rule set. Other pairs (NUMBER with RAW, ...) are NULL too.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation
from typing import Any, ClassVar

from rules.lang.ast import Number

__all__ = [
    "AnyData",
    "DdlLCR",
    "MessageError",
    "RowLCR",
    "Struct",
    "UserMessage",
    "bindings_for",
    "compare",
    "is_variable_name",
    "message_from_json",
    "message_from_queue",
    "message_kind",
    "variable_name",
]

OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}

# Oracle NUMBER holds magnitudes from 1E-130 up to (not including) 1E126.
_MIN_EXP, _MAX_EXP = -130, 125
_NUMBER = re.compile(r" *([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?) *\Z")
_INT = re.compile(r"[+-]?[0-9]{1,18}\Z")
_HEX = re.compile(r"[0-9A-Fa-f]*\Z")
_DATE = re.compile(
    r" *([0-9]{4})-([0-9]{2})-([0-9]{2})"
    r"(?:[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,6}))?)?)?"
    r"(Z|[+-][0-9]{2}:?[0-9]{2})? *\Z"
)


# --- conversions ---------------------------------------------------------------------------------


def to_number(text: str) -> Number | None:
    """TO_NUMBER for a string, or None when it is not a number in Oracle's range."""
    m = _NUMBER.match(text)
    if m is None:
        return None
    digits = m.group(1)
    if _INT.match(digits):
        return int(digits)
    try:
        d = Decimal(digits)
    except (InvalidOperation, ValueError):  # an exponent too large for Decimal itself
        return None
    return d if number_in_range(d) else None


def number_in_range(d: Decimal) -> bool:
    return d.is_finite() and (not d or _MIN_EXP <= d.adjusted() <= _MAX_EXP)


def number_to_text(n: Number) -> str:
    """A NUMBER as text: plain notation, no trailing zeros (``2.50`` → ``2.5``, ``-0`` → ``0``)."""
    if type(n) is int:
        return str(n)
    d = n.normalize() if n else Decimal(0)
    if not _MIN_EXP <= d.adjusted() <= _MAX_EXP:  # Decimal outside Oracle's range: keep it short
        return str(d)
    return format(d, "f")


def hex_to_raw(text: str) -> bytes | None:
    """HEXTORAW: an odd number of digits gets a leading zero; empty or not hex gives NULL."""
    if not text or not _HEX.match(text):
        return None
    if len(text) % 2:
        text = "0" + text
    return bytes.fromhex(text)


def raw_to_hex(raw: bytes) -> str:
    return raw.hex().upper()


def to_date(text: str) -> datetime | None:
    """An ISO 8601 date or timestamp (``2024-05-01``, ``2024-05-01 13:00:00``, with ``T``, with
    fractions, with ``Z`` or an offset, which is converted to UTC); None otherwise."""
    m = _DATE.match(text)
    if m is None:
        return None
    y, mo, d, h, mi, s, frac, tz = m.groups()
    try:
        value = datetime(
            int(y),
            int(mo),
            int(d),
            int(h or 0),
            int(mi or 0),
            int(s or 0),
            int((frac or "0").ljust(6, "0")),
        )
    except ValueError:
        return None
    if tz and tz != "Z":
        sign = -1 if tz[0] == "-" else 1
        hh, mm = int(tz[1:3]), int(tz[-2:])
        try:
            value = value.replace(tzinfo=timezone(sign * timedelta(hours=hh, minutes=mm)))
        except ValueError:
            return None
    if value.tzinfo is not None:
        try:
            value = value.astimezone(UTC).replace(tzinfo=None)
        except OverflowError:  # an offset that pushes year 1 or 9999 out of range: not a date
            return None
    return value


def date_to_text(value: datetime) -> str:
    return value.isoformat(sep=" ", timespec="microseconds" if value.microsecond else "seconds")


def to_text(value: Any) -> str | None:
    """The implicit conversion to VARCHAR2 (LIKE, UPPER, LOWER, AccessVarchar2); None when the
    value has no text form."""
    t = type(value)
    if t is str:
        return value
    if t is int or t is Decimal:
        return number_to_text(value)
    if t is bytes:
        return raw_to_hex(value)
    if t is datetime:
        return date_to_text(value)
    return None


def _family(value: Any) -> str | None:
    t = type(value)
    if t is str:
        return "S"
    if t is int or t is Decimal:
        return "N"
    if t is bytes:
        return "R"
    if t is datetime:
        return "D"
    return None


_FROM_STR: dict[str, Callable[[str], Any]] = {"N": to_number, "R": hex_to_raw, "D": to_date}


def coerce(a: Any, b: Any) -> tuple[Any, Any] | None:
    """The two operands of a comparison in one family, or None when they cannot be compared."""
    fa, fb = _family(a), _family(b)
    if fa is None or fb is None:
        return None
    if fa == fb:
        return a, b
    if fa == "S":
        a = _FROM_STR[fb](a)
        return None if a is None else (a, b)
    if fb == "S":
        b = _FROM_STR[fa](b)
        return None if b is None else (a, b)
    return None


def compare(op: str, a: Any, b: Any) -> bool | None:
    """``a op b`` with SQL three-valued logic and Oracle's implicit conversion."""
    if a is None or b is None:
        return None
    pair = coerce(a, b)
    return None if pair is None else OPS[op](*pair)


def value_keys(value: Any) -> tuple[Any, ...]:
    """Every form a constant can take when compared with a value of another family: the string
    ``'02'`` equals the number 2, the RAW 0x02 and (were it a date) a DATE. The rule-set index
    registers a constant under all of them, so it never misses a rule the comparison would fire."""
    if type(value) is not str:
        return (value,)
    forms: list[Any] = [value]
    for convert in _FROM_STR.values():
        converted = convert(value)
        if converted is not None:
            forms.append(converted)
    return tuple(forms)


# --- LIKE ----------------------------------------------------------------------------------------

_ANY, _ONE = 0, 1  # '%' and '_' in a tokenised pattern; literal characters are 1-char strings


def like_tokens(pattern: str, escape: str | None = None) -> tuple[int | str, ...] | None:
    """A LIKE pattern as tokens, or None when the escape character is misused (Oracle raises
    ORA-01424: it must be followed by ``%``, ``_`` or itself)."""
    out: list[int | str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if escape is not None and c == escape:
            if i + 1 >= n or pattern[i + 1] not in ("%", "_", escape):
                return None
            out.append(pattern[i + 1])
            i += 2
            continue
        if c == "%":
            if not out or out[-1] != _ANY:  # '%%' matches what '%' matches
                out.append(_ANY)
        elif c == "_":
            out.append(_ONE)
        else:
            out.append(c)
        i += 1
    return tuple(out)


def _match_tokens(text: str, toks: tuple[int | str, ...]) -> bool:
    # Greedy matching that backtracks only to the last '%': O(len(text) * len(toks)) at worst,
    # unlike a regular expression, whose backtracking can explode on patterns like '%a%a%a%b'.
    si = ti = 0
    star_ti, star_si = -1, 0
    n, m = len(text), len(toks)
    while si < n:
        if ti < m:
            t = toks[ti]  # a str never equals the int markers
            if t == _ANY:
                star_ti, star_si = ti, si
                ti += 1
                continue
            if t == _ONE or t == text[si]:
                si += 1
                ti += 1
                continue
        if star_ti >= 0:
            star_si += 1
            si, ti = star_si, star_ti + 1
            continue
        return False
    while ti < m and toks[ti] == _ANY:
        ti += 1
    return ti == m


def like_matcher(pattern: str, escape: str | None = None) -> Callable[[str], bool] | None:
    """A function telling whether a text matches the pattern (None for a bad escape): plain
    patterns, prefixes, suffixes and infixes become string operations."""
    toks = like_tokens(pattern, escape)
    if toks is None:
        return None
    wild = [i for i, t in enumerate(toks) if type(t) is int]
    lit = "".join(t for t in toks if type(t) is str)  # type: ignore[misc]
    if not wild:
        return lit.__eq__
    if all(toks[i] == _ANY for i in wild):
        if wild == [len(toks) - 1]:
            return lambda s: s.startswith(lit)
        if wild == [0]:
            return lambda s: s.endswith(lit)
        if wild == [0, len(toks) - 1]:
            return lambda s: lit in s
    return lambda s: _match_tokens(s, toks)


_like_cache: dict[tuple[str, str | None], Callable[[str], bool] | None] = {}


def like(value: Any, pattern: Any, escape: Any = None) -> bool | None:
    """``value LIKE pattern [ESCAPE escape]`` with NULL propagation; operands are converted to
    text. A bad escape character is NULL here (Oracle raises)."""
    text, pat = to_text(value), to_text(pattern)
    if text is None or pat is None:
        return None
    esc = None
    if escape is not None:
        esc = to_text(escape)
        if esc is None or len(esc) != 1:
            return None
    key = (pat, esc)
    matcher = _like_cache.get(key, _like_cache)
    if matcher is _like_cache:
        if len(_like_cache) > 4096:  # patterns built from messages must not grow it forever
            _like_cache.clear()
        matcher = _like_cache[key] = like_matcher(pat, esc)
    return None if matcher is None else matcher(text)  # type: ignore[operator]


# --- payload values ------------------------------------------------------------------------------


class Struct:
    """A payload object: attributes by exact key and by upper-cased key (Oracle attribute names
    are case-insensitive unless quoted). When two keys differ only in case, the plain lookup takes
    the one already in upper case, else the first."""

    __slots__ = ("attrs", "exact")

    def __init__(self, mapping: Mapping[str, Any]) -> None:
        exact = {str(k): from_json_value(v) for k, v in mapping.items()}
        attrs: dict[str, Any] = {}
        for k, v in exact.items():
            up = k.upper()
            if up not in attrs or k == up:
                attrs[up] = v
        self.exact = exact
        self.attrs = attrs

    def __repr__(self) -> str:
        return f"Struct({self.exact!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Struct) and other.exact == self.exact

    __hash__ = None  # type: ignore[assignment]


def from_json_value(value: Any) -> Any:
    """A payload or column value in the engine's value domain (see the module docstring)."""
    t = type(value)
    if value is None or t is str or t is int or t is Struct:
        return value
    if t is bool:  # SQL has no BOOLEAN: read JSON true/false as their JSON text
        return "true" if value else "false"
    if t is float:
        return Decimal(repr(value)) if math.isfinite(value) else None
    if t is Decimal:
        return value if number_in_range(value) else None
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value) or None
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC)
        return value.replace(tzinfo=None)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    if isinstance(value, Mapping):
        return Struct(value)
    if isinstance(value, list | tuple):
        return tuple(from_json_value(v) for v in value)
    if isinstance(value, int):  # int subclasses other than bool
        return int(value)
    return value


class AnyData:
    """What ``GET_VALUE`` returns: a carried column value, possibly SQL NULL. The wrapper itself
    is never NULL, which is how ``get_value(...) IS NOT NULL`` tells "carried" from "absent"."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"AnyData({self.value!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AnyData) and other.value == self.value

    __hash__ = None  # type: ignore[assignment]


def access_number(value: Any) -> Number | None:
    f = _family(value)
    if f == "N":
        return value
    return to_number(value) if f == "S" else None


def access_date(value: Any) -> datetime | None:
    f = _family(value)
    if f == "D":
        return value
    return to_date(value) if f == "S" else None


def access_raw(value: Any) -> bytes | None:
    f = _family(value)
    if f == "R":
        return value
    return hex_to_raw(value) if f == "S" else None


ANYDATA_ACCESSORS: dict[str, Callable[[Any], Any]] = {
    "ACCESSNUMBER": access_number,
    "ACCESSVARCHAR2": to_text,
    "ACCESSCHAR": to_text,
    "ACCESSDATE": access_date,
    "ACCESSTIMESTAMP": access_date,
    "ACCESSRAW": access_raw,
}
ANYDATA_DISPLAY = {
    "ACCESSNUMBER": "AccessNumber",
    "ACCESSVARCHAR2": "AccessVarchar2",
    "ACCESSCHAR": "AccessChar",
    "ACCESSDATE": "AccessDate",
    "ACCESSTIMESTAMP": "AccessTimestamp",
    "ACCESSRAW": "AccessRaw",
}

# --- the member functions of change records ------------------------------------------------------

# No-argument member functions read one field of the record (IS_NULL_TAG reads the derived
# ``null_tag``). All are VARCHAR2 except GET_TAG, which is RAW.
LCR_FIELDS: dict[str, str] = {
    "GET_SOURCE_DATABASE_NAME": "source_database_name",
    "GET_COMMAND_TYPE": "command_type",
    "GET_OBJECT_OWNER": "object_owner",
    "GET_OBJECT_NAME": "object_name",
    "GET_TAG": "tag",
    "IS_NULL_TAG": "null_tag",
    "GET_OBJECT_TYPE": "object_type",
    "GET_BASE_TABLE_OWNER": "base_table_owner",
    "GET_BASE_TABLE_NAME": "base_table_name",
}
_COMMON_METHODS = (
    "GET_SOURCE_DATABASE_NAME",
    "GET_COMMAND_TYPE",
    "GET_OBJECT_OWNER",
    "GET_OBJECT_NAME",
    "GET_TAG",
    "IS_NULL_TAG",
)
# name → (fewest, most) arguments
ROW_LCR_METHODS: dict[str, tuple[int, int]] = {m: (0, 0) for m in _COMMON_METHODS} | {
    "GET_VALUE": (2, 3)
}
DDL_LCR_METHODS: dict[str, tuple[int, int]] = {m: (0, 0) for m in _COMMON_METHODS} | {
    "GET_OBJECT_TYPE": (0, 0),
    "GET_BASE_TABLE_OWNER": (0, 0),
    "GET_BASE_TABLE_NAME": (0, 0),
}
LCR_METHODS: dict[str, tuple[int, int]] = ROW_LCR_METHODS | DDL_LCR_METHODS
BUILTINS: dict[str, tuple[int, int]] = {"HEXTORAW": (1, 1), "LOWER": (1, 1), "UPPER": (1, 1)}

# Kinds of variables, as evaluation contexts declare them (validate(variables=...)).
ROW_LCR, DDL_LCR, USER = "row_lcr", "ddl_lcr", "user"
STREAMS_VARIABLES: dict[str, str] = {"DML": ROW_LCR, "DDL": DDL_LCR}


def kind_family(kind: str) -> str:
    """``row_lcr``, ``ddl_lcr`` or ``user`` for a variable kind (``user:<TYPE>`` → ``user``)."""
    k = kind.strip().lower()
    if k in (ROW_LCR, DDL_LCR, USER):
        return k
    if k.startswith("user:") and k[5:].strip():
        return USER
    raise ValueError(f"unknown variable kind {kind!r}: use row_lcr, ddl_lcr, user or user:<TYPE>")


def get_value(lcr: Any, value_type: Any, column: Any, use_old: Any = "Y") -> AnyData | None:
    """``GET_VALUE(value_type, column_name[, use_old])`` of a row LCR: the carried value wrapped
    in ANYDATA, or NULL when the LCR does not carry the column. ``'"REGION_ID"'`` names the column
    exactly, ``'region_id'`` is upper-cased. With ``'NEW'`` and use_old ``'Y'`` (the default) a
    column the new values lack is read from the old values, which is how an UPDATE's unchanged
    columns look "new". A bad argument is NULL (Oracle raises)."""
    if type(value_type) is not str or type(column) is not str or type(use_old) is not str:
        return None
    col = column_name(column)
    if col is None:
        return None
    vt, uo = value_type.upper(), use_old.upper()
    if uo not in ("Y", "N"):
        return None
    try:
        if vt == "NEW":
            values = lcr.new_values
            if col in values:
                return AnyData(values[col])
            if uo == "N":
                return None
            values = lcr.old_values
        elif vt == "OLD":
            values = lcr.old_values
        else:
            return None
    except AttributeError:  # not a row LCR
        return None
    return AnyData(values[col]) if col in values else None


def column_name(text: str) -> str | None:
    """The column a GET_VALUE argument names: quoted exact, plain upper-cased, None if neither."""
    t = text.strip()
    if len(t) >= 2 and t[0] == '"' and t[-1] == '"' and '"' not in t[1:-1]:
        return t[1:-1]
    if '"' in t or not t:
        return None
    return t.upper()


# --- messages ------------------------------------------------------------------------------------


class MessageError(ValueError):
    """A message JSON that cannot be evaluated; ``field`` names the offending key."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.message = message
        self.field = field


def _check_str(obj: object, names: tuple[str, ...]) -> None:
    for name in names:
        v = getattr(obj, name)
        if v is not None and type(v) is not str:
            raise MessageError(f"must be a string or null, not {type(v).__name__}", field=name)


def _tag(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value) or None
    raise MessageError("must be bytes or None", field="tag")


def _columns(values: Any, name: str) -> dict[str, Any]:
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise MessageError("must be an object of column values", field=name)
    return {str(k): from_json_value(v) for k, v in values.items()}


@dataclass(frozen=True, slots=True)
class RowLCR:
    """A row change record (SYS.LCR$_ROW_RECORD): one changed row, bound to ``:dml``.

    Column names in ``old_values``/``new_values`` are Oracle identifiers, matched exactly
    (write them upper-case, as Oracle stores unquoted names).
    """

    source_database_name: str | None
    command_type: str | None
    object_owner: str | None
    object_name: str | None
    tag: bytes | None = None
    old_values: dict[str, Any] = field(default_factory=dict)
    new_values: dict[str, Any] = field(default_factory=dict)
    # IS_NULL_TAG(), computed once so the compiled rules read it like any other field.
    null_tag: str = field(init=False, repr=False, compare=False)

    kind: ClassVar[str] = "row_lcr"

    def __post_init__(self) -> None:
        _check_str(self, ("source_database_name", "command_type", "object_owner", "object_name"))
        tag = _tag(self.tag)
        object.__setattr__(self, "tag", tag)
        object.__setattr__(self, "null_tag", "Y" if tag is None else "N")
        object.__setattr__(self, "old_values", _columns(self.old_values, "old_values"))
        object.__setattr__(self, "new_values", _columns(self.new_values, "new_values"))


@dataclass(frozen=True, slots=True)
class DdlLCR:
    """A DDL change record (SYS.LCR$_DDL_RECORD), bound to ``:ddl``. Owner and name may be NULL
    when a user who does not own the object changed it; the base table names the table an index,
    trigger or similar object belongs to."""

    source_database_name: str | None
    command_type: str | None
    object_type: str | None = None
    object_owner: str | None = None
    object_name: str | None = None
    base_table_owner: str | None = None
    base_table_name: str | None = None
    ddl_text: str = ""
    tag: bytes | None = None
    null_tag: str = field(init=False, repr=False, compare=False)

    kind: ClassVar[str] = "ddl_lcr"

    def __post_init__(self) -> None:
        _check_str(
            self,
            (
                "source_database_name",
                "command_type",
                "object_type",
                "object_owner",
                "object_name",
                "base_table_owner",
                "base_table_name",
                "ddl_text",
            ),
        )
        tag = _tag(self.tag)
        object.__setattr__(self, "tag", tag)
        object.__setattr__(self, "null_tag", "Y" if tag is None else "N")


@dataclass(frozen=True, slots=True, eq=False)
class UserMessage:
    """A user message of an object type; its payload's keys are the attributes read by
    ``:msg.region`` / ``:"VAR$_52".region``."""

    type_name: str
    payload: Any
    attrs: dict[str, Any] = field(init=False, repr=False)
    exact: dict[str, Any] = field(init=False, repr=False)
    # The payload itself when it is not an object (a bare ``:msg`` compares it).
    scalar: Any = field(init=False, repr=False)

    kind: ClassVar[str] = "user"

    def __post_init__(self) -> None:
        if type(self.type_name) is not str:
            raise MessageError("must be a string", field="type_name")
        value = from_json_value(self.payload)
        if isinstance(value, Struct):
            attrs, exact, scalar = value.attrs, value.exact, None
        else:
            attrs, exact, scalar = {}, {}, value
        object.__setattr__(self, "attrs", attrs)
        object.__setattr__(self, "exact", exact)
        object.__setattr__(self, "scalar", scalar)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, UserMessage)
            and other.type_name == self.type_name
            and other.payload == self.payload
        )

    __hash__ = None  # type: ignore[assignment]


Message = RowLCR | DdlLCR | UserMessage


def message_kind(message: Message) -> str:
    """``row_lcr``, ``ddl_lcr`` or ``user``."""
    return message.kind


# --- from JSON -----------------------------------------------------------------------------------

_ROW_FIELDS = ("source_database_name", "command_type", "object_owner", "object_name")
_DDL_FIELDS = (
    "source_database_name",
    "command_type",
    "object_type",
    "object_owner",
    "object_name",
    "base_table_owner",
    "base_table_name",
)


def _loads(obj: Any, what: str) -> Any:
    if isinstance(obj, str | bytes | bytearray):
        try:
            return json.loads(obj)
        except ValueError as exc:
            raise MessageError(f"{what} is not valid JSON: {exc}") from None
    return obj


def _text(d: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    if name not in d or d[name] is None:
        if required:
            raise MessageError("is required", field=name)
        return None
    v = d[name]
    if type(v) is not str:
        raise MessageError("must be a string or null", field=name)
    return v


def _json_tag(d: Mapping[str, Any]) -> bytes | None:
    v = d.get("tag")
    if v is None or v == "":
        return None
    if type(v) is not str or not _HEX.match(v) or len(v) % 2:
        raise MessageError(
            "must be a hexadecimal string with an even number of digits, or null", field="tag"
        )
    return bytes.fromhex(v) or None


def _row_lcr(d: Mapping[str, Any]) -> RowLCR:
    return RowLCR(
        *(_text(d, n, required=n != "source_database_name") for n in _ROW_FIELDS),
        tag=_json_tag(d),
        old_values=d.get("old_values"),  # type: ignore[arg-type]  # checked by RowLCR
        new_values=d.get("new_values"),  # type: ignore[arg-type]
    )


def _ddl_lcr(d: Mapping[str, Any]) -> DdlLCR:
    return DdlLCR(
        *(_text(d, n, required=n == "command_type") for n in _DDL_FIELDS),
        ddl_text=_text(d, "ddl_text") or "",
        tag=_json_tag(d),
    )


def _user(type_name: Any, payload: Any) -> UserMessage:
    if type_name is None:
        type_name = ""
    if type(type_name) is not str:
        raise MessageError("must be a string", field="type_name")
    return UserMessage(type_name, payload)


def message_from_json(obj: Any) -> Message:
    """A message from ``{"kind": "row_lcr" | "ddl_lcr" | "user", ...}`` (a dict or JSON text).

    Row and DDL LCRs carry the fields of their class (``tag`` as hex or null, ``old_values`` and
    ``new_values`` as column → value objects); a user message has ``type_name`` and ``payload``.
    Raises MessageError naming the field.
    """
    d = _loads(obj, "the message")
    if not isinstance(d, Mapping):
        raise MessageError("a message must be a JSON object")
    kind = d.get("kind")
    if not isinstance(kind, str):
        raise MessageError("must be row_lcr, ddl_lcr or user", field="kind")
    k = kind.lower()
    if k == "row_lcr":
        return _row_lcr(d)
    if k == "ddl_lcr":
        return _ddl_lcr(d)
    if k == "user":
        if "payload" not in d:
            raise MessageError("is required", field="payload")
        return _user(d.get("type_name"), d["payload"])
    raise MessageError(f"must be row_lcr, ddl_lcr or user, not {kind!r}", field="kind")


def message_from_queue(
    kind: str,
    type_name: str | None,
    payload: Any,
    *,
    origin: str | None = None,
    tag: str | bytes | memoryview | None = None,
) -> Message:
    """A message from the queue engine's row: ``kind`` ROW_LCR / DDL_LCR / USER, its type name and
    its payload (the LCR fields of ``queues.engine._ROW_LCR_SCHEMA``/``_DDL_LCR_SCHEMA``).

    A user payload is the decoded JSON value, as the engine and the ORM hand it over: a string is
    a JSON string, never JSON text to parse again (``"2"`` must stay the text 2).

    ``origin`` and ``tag``: the row's origin site and Streams tag (hex text or bytes), NULL for a
    message enqueued here without a tag. A change record reads them before its payload's own
    fields: GET_SOURCE_DATABASE_NAME() is the site the message came from once it left its
    origin, and GET_TAG() the tag it was enqueued with (docs/SITES.md, as compile_sql's
    ``message_properties``)."""
    k = (kind or "").upper()
    if k == "USER":
        return _user(type_name, payload)
    # An LCR payload is always an object, so a string can only be its JSON text.
    d = _loads(payload, "the payload")
    if k in ("ROW_LCR", "DDL_LCR"):
        if not isinstance(d, Mapping):
            raise MessageError("an LCR payload must be a JSON object", field="payload")
        lcr = _row_lcr(d) if k == "ROW_LCR" else _ddl_lcr(d)
        if origin is None and tag is None:
            return lcr
        changes: dict[str, Any] = {}
        if origin is not None:
            changes["source_database_name"] = origin
        if tag is not None:
            raw = bytes.fromhex(tag) if isinstance(tag, str) else bytes(tag)
            if raw:
                changes["tag"] = raw
        return replace(lcr, **changes) if changes else lcr
    raise MessageError(f"must be ROW_LCR, DDL_LCR or USER, not {kind!r}", field="kind")


# --- bindings ------------------------------------------------------------------------------------

_PLAIN_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_$#]*\Z")


def variable_name(text: str) -> str:
    """The canonical name of a variable as written in a condition: ``:dml``/``dml`` → ``DML``,
    ``:"VAR$_52"``/``"VAR$_52"`` → ``VAR$_52``. Plain names are upper-cased, quoted ones kept."""
    t = text.strip()
    if t.startswith(":"):
        t = t[1:]
    if len(t) >= 2 and t[0] == t[-1] == '"':
        return t[1:-1]
    if not _PLAIN_NAME.match(t):
        raise ValueError(f"not a variable name: {text!r}")
    return t.upper()


def is_variable_name(text: str) -> bool:
    """True when a condition can refer to ``text`` (``dml``, ``"VAR$_52"``); ``0`` it cannot."""
    try:
        return variable_name(text) != ""
    except ValueError:
        return False


def bindings_for(message: Message, *, user_variable: str | None = None) -> dict[str, Any]:
    """The variables a message binds: ``DML`` for a row LCR, ``DDL`` for a DDL LCR, ``MSG`` (and
    ``user_variable``, such as ``VAR$_52``) for a user message. The other standard variables are
    bound to None, so ``:ddl.…`` evaluated for a row LCR is NULL."""
    if isinstance(message, RowLCR):
        return {"DML": message, "DDL": None, "MSG": None}
    if isinstance(message, DdlLCR):
        return {"DML": None, "DDL": message, "MSG": None}
    if isinstance(message, UserMessage):
        b: dict[str, Any] = {"DML": None, "DDL": None, "MSG": message}
        if user_variable:
            b[variable_name(user_variable)] = message
        return b
    raise TypeError(f"not a message: {message!r}")
