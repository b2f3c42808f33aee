"""What PostgreSQL can store, and how deep JSON may nest: pure Python (no Django), so the queue
engine checks with the same rules as the API and the forms (core/validators.py wraps them)."""

from __future__ import annotations

import json
import math
import re
from enum import Enum
from itertools import accumulate
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any
from uuid import UUID

try:
    import orjson
except ImportError:  # Spark executors get this module by --py-files, without orjson
    orjson = None  # type: ignore[assignment]

# How deep a JSON document may nest (objects and arrays, the outermost counting as 1). Deeper
# input is refused before it is parsed: json, jsonschema and the rule engine all recurse.
MAX_JSON_DEPTH = 64

# The longest duration in seconds (a delay, an expiration, a retry delay, a retention time) the
# console accepts: ten years. Longer ones overflow Python's datetime and PostgreSQL's intervals.
MAX_SECONDS = 10 * 366 * 86_400

# PostgreSQL's INTEGER column holds at most this.
PG_INT_MAX = 2**31 - 1

# An id: ASCII digits only ("¹".isdigit() is true but int("¹") fails), at most 18 of them, so
# int() never meets its 4,300-digit limit and the value always fits PostgreSQL's bigint.
MAX_ID_DIGITS = 18
MAX_ID = 10**MAX_ID_DIGITS - 1
_ASCII_DIGITS = re.compile(rf"[0-9]{{1,{MAX_ID_DIGITS}}}")

# JSON string literals, so that brackets inside them are not counted as nesting. Possessive, and
# an unterminated literal runs to the end of the text: every match succeeds at its first quote,
# so the scan is linear (a backtracking pattern was quadratic on '"' followed by many '\\"').
_JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def is_ascii_id(value: object) -> bool:
    """True for an int in 0..MAX_ID or a string of 1 to 18 ASCII digits: an id rather than a
    name. A longer digit string is no id (a name, which then names nothing)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0 <= value <= MAX_ID
    return isinstance(value, str) and _ASCII_DIGITS.fullmatch(value) is not None


def text_problem(value: str) -> str | None:
    """Why PostgreSQL cannot store ``value`` as text, or None when it can."""
    if "\x00" in value:
        return "Contains a NUL character (\\u0000), which PostgreSQL cannot store."
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ord(value[exc.start])
        return f"Contains a lone surrogate (\\u{bad:04x}), which is not text PostgreSQL can store."
    return None


def number_problem(value: float) -> str | None:
    if not math.isfinite(value):
        return "Must be a finite number."
    return None


def seconds_problem(value: float | None) -> str | None:
    """Why ``value`` is not a duration the console accepts, or None when it is."""
    if value is None:
        return None
    if not math.isfinite(value):
        return "Must be a finite number of seconds."
    if value > MAX_SECONDS:
        return f"At most {MAX_SECONDS} seconds (ten years)."
    return None


def depth_message() -> str:
    return f"Nested deeper than {MAX_JSON_DEPTH} levels (the limit for JSON input)."


def json_text_depth(text: str) -> int:
    """How deep the JSON document ``text`` nests, found without parsing (and so without
    recursing). Malformed text gives some number; the parser refuses it afterwards."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _join(prefix: str, key: object) -> str:
    if isinstance(key, int):
        return f"{prefix}[{key}]"
    return f"{prefix}.{key}" if prefix else str(key)


# A node of the walk: (parent node, key in the parent, depth). Paths are spelled only for the
# places at fault, so a clean 100,000-item list costs one pass and no strings.
_Node = tuple[Any, Any, int]


def _path(node: _Node | None, key: object, prefix: str) -> str:
    keys = [] if key is None else [key]
    while node is not None and node[1] is not None:
        keys.append(node[1])
        node = node[0]
    path = prefix
    for k in reversed(keys):
        path = _join(path, k)
    return path or "detail"


def _scalar_problem(item: object) -> str | None:
    if type(item) is str:
        # Most text is ASCII without a NUL: answered without encoding it.
        return None if item.isascii() and "\x00" not in item else text_problem(item)
    if type(item) is float:
        return number_problem(item)
    return None


def _not_json(value: object) -> object:
    # orjson writes UUIDs and enums (clean_json_text's fast path): so does this encoder, so that
    # a value is JSON or not whichever of the two encodes it.
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# json.dumps builds a C encoder per call, with a dict that tracks every container to catch a
# cycle; built once without it, a 250-byte payload encodes in 4.8 µs instead of 8.1 (the
# engine encodes every payload it enqueues). A cycle then ends in RecursionError. Same text
# as json.dumps(value, allow_nan=False), with UUIDs and enums as orjson writes them (_not_json):
# ASCII only, ", " and ": ".
_C_ENCODER = (
    None
    if c_make_encoder is None
    else c_make_encoder(
        None, _not_json, encode_basestring_ascii, None, ": ", ", ", False, False, False
    )
)


def encode_json(value: Any) -> str:
    """``value``'s JSON text as ``json.dumps(value, allow_nan=False)`` writes it (a UUID as its
    string, an enum as its value); raises TypeError (not JSON), ValueError (NaN, infinities) or
    RecursionError (a cycle)."""
    if _C_ENCODER is None:
        return json.dumps(value, allow_nan=False, default=_not_json)
    return "".join(_C_ENCODER(value, 0))


# orjson encodes about five times faster than the C encoder above (the benchmark's payload:
# 0.8 against 2.6 µs with the checks below). Where its output could differ in meaning from
# encode_json's, the value goes to that path instead: orjson writes NaN and the infinities as
# null (so a text with "null" in it is encoded again), and what it refuses (sets, Decimals,
# integers beyond 64 bits, non-string keys, lone surrogates) or is told to pass through here
# (datetimes, dataclasses, subclasses of the JSON types) raises. An orjson.Fragment puts raw
# text in it unchecked: PostgreSQL parses every payload, and the enqueue checks that a batch's
# joined texts make one value each (queues/engine/enqueue.py).
_ORJSON_OPTIONS = (
    0
    if orjson is None
    else orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def _orjson_text(value: Any) -> str | None:
    if orjson is None:
        return None
    try:
        text = orjson.dumps(value, option=_ORJSON_OPTIONS).decode()
    except TypeError:  # orjson.JSONEncodeError
        return None
    return None if "null" in text else text


def clean_json_text(value: Any) -> str | None:
    """``value``'s JSON text when it certainly has no problem, judged from that text (None when
    this cannot tell: then :func:`json_problems` walks it). An encoder is ten times faster
    than the walk, and the enqueue sends the text it returns rather than encoding the value
    again. Every NUL is spelled as an escape, NaN and infinities raise or read as null (see
    _ORJSON_OPTIONS), lone surrogates raise, and the nesting is no deeper than the number of
    brackets. The text is compact and UTF-8 where orjson wrote it (PostgreSQL stores the same
    jsonb), encode_json's ASCII otherwise."""
    text = _orjson_text(value)
    if text is None:
        try:
            text = encode_json(value)
        except (TypeError, ValueError, RecursionError):
            return None
    if "\\u0000" in text or "\\ud" in text or text.count("[") + text.count("{") > MAX_JSON_DEPTH:
        return None
    return text


def json_problems(value: Any, prefix: str = "", *, limit: int = 10) -> dict[str, str]:
    """Every place in ``value`` (parsed JSON, or any dict/list/str/number tree) that PostgreSQL
    cannot store or that nests too deep, keyed by its path (``payload.items[2].sku``, the spelling
    of the API's error bodies); ``prefix`` names the root. Walks with a stack, never recursing."""
    problems: dict[str, str] = {}
    if (message := _scalar_problem(value)) is not None:
        return {prefix or "detail": message}
    if not isinstance(value, dict | list | tuple):
        return problems
    if not value or clean_json_text(value) is not None:
        return problems
    return walk_problems(value, prefix, limit=limit)


def walk_problems(
    value: dict | list | tuple, prefix: str = "", *, limit: int = 10
) -> dict[str, str]:
    """:func:`json_problems` by walking every node (what it falls back to)."""
    problems: dict[str, str] = {}
    stack: list[tuple[_Node | None, Any, Any, int]] = [(None, None, value, 1)]
    while stack and len(problems) < limit:
        parent, key, item, depth = stack.pop()
        node: _Node = (parent, key, depth)
        if depth > MAX_JSON_DEPTH:
            problems[_path(parent, key, prefix)] = depth_message()
            continue
        if isinstance(item, dict):
            pairs = item.items()
            for k in item:
                if type(k) is str and (message := _scalar_problem(k)) is not None:
                    # The key itself is not echoed in the path: it is what cannot be shown.
                    problems[_path(parent, key, prefix)] = (
                        f"A key: {message[0].lower()}{message[1:]}"
                    )
                    pairs = ()
                    break
        else:
            pairs = enumerate(item)
        for k, child in pairs:
            if isinstance(child, dict | list | tuple):
                stack.append((node, k, child, depth + 1))
            elif (message := _scalar_problem(child)) is not None:
                problems[_path(node, k, prefix)] = message
    return problems
