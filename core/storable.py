"""What PostgreSQL can store, and how deep JSON may nest: pure Python (no Django), so the queue
engine checks with the same rules as the API and the forms (core/validators.py wraps them)."""

from __future__ import annotations

import math
import re
from itertools import accumulate
from typing import Any

# How deep a JSON document may nest (objects and arrays, the outermost counting as 1). Deeper
# input is refused before it is parsed: json, jsonschema and the rule engine all recurse.
MAX_JSON_DEPTH = 64

# The longest duration in seconds (a delay, an expiration, a retry delay, a retention time) the
# console accepts: ten years. Longer ones overflow Python's datetime and PostgreSQL's intervals.
MAX_SECONDS = 10 * 366 * 86_400

# A string of ASCII digits only: "¹".isdigit() is true but int("¹") fails.
_ASCII_DIGITS = re.compile(r"[0-9]+")

# JSON string literals, so that brackets inside them are not counted as nesting.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def is_ascii_id(value: object) -> bool:
    """True for an int or a string of ASCII digits: an id rather than a name."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
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


def json_problems(value: Any, prefix: str = "", *, limit: int = 10) -> dict[str, str]:
    """Every place in ``value`` (parsed JSON, or any dict/list/str/number tree) that PostgreSQL
    cannot store or that nests too deep, keyed by its path (``payload.items[2].sku``, the spelling
    of the API's error bodies); ``prefix`` names the root. Walks with a stack, never recursing."""
    problems: dict[str, str] = {}
    stack: list[tuple[str, Any, int]] = [(prefix, value, 0)]
    while stack and len(problems) < limit:
        path, item, depth = stack.pop()
        if isinstance(item, str):
            if message := text_problem(item):
                problems[path or "detail"] = message
        elif isinstance(item, float):
            if message := number_problem(item):
                problems[path or "detail"] = message
        elif isinstance(item, dict | list | tuple):
            if depth + 1 > MAX_JSON_DEPTH:
                problems[path or "detail"] = depth_message()
                continue
            if isinstance(item, dict):
                children = []
                for key, child in item.items():
                    if isinstance(key, str) and (message := text_problem(key)):
                        # The key itself is not echoed in the path: it is what cannot be shown.
                        problems[path or "detail"] = f"A key: {message[0].lower()}{message[1:]}"
                        break
                    children.append((_join(path, key), child, depth + 1))
                else:
                    stack.extend(reversed(children))
            else:
                stack.extend(
                    (f"{path}[{i}]", c, depth + 1) for i, c in reversed(list(enumerate(item)))
                )
    return problems
