"""``json_problems`` first judges a value by its JSON text (orjson, or the json module's C
encoder) and walks it only when the text cannot tell; both must always give the same answer as
the walk alone, and the text the enqueue sends must mean what ``json.dumps`` would write."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from core.storable import MAX_JSON_DEPTH, clean_json_text, json_problems, walk_problems

# Text that trips each check, and text that only looks as if it might.
_TRICKY = st.sampled_from(
    ["ok", "\x00", "a\x00b", "\ud800", "x\udfffy", "😀", "\\u0000", "\\ud800", "é", "[{", ""]
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    _TRICKY,
    st.text(max_size=5),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda kids: st.one_of(
        st.lists(kids, max_size=4), st.dictionaries(st.one_of(_TRICKY, st.text()), kids, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.lists(_VALUES, max_size=4), st.dictionaries(_TRICKY, _VALUES, max_size=4)))
def test_the_text_check_agrees_with_the_walk(value):
    assert json_problems(value, "payload") == walk_problems(value, "payload")


def _nested(depth: int) -> object:
    value: object = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def test_depth_is_judged_the_same_at_the_limit_and_past_it():
    assert json_problems(_nested(MAX_JSON_DEPTH)) == {}
    assert list(json_problems(_nested(MAX_JSON_DEPTH + 1)).values()) == [
        f"Nested deeper than {MAX_JSON_DEPTH} levels (the limit for JSON input)."
    ]
    # Many brackets side by side are no depth: the walk decides, and finds nothing.
    assert json_problems([[] for _ in range(MAX_JSON_DEPTH * 2)]) == {}


def test_each_kind_of_problem_is_found_past_the_text_check():
    assert json_problems({"a": [1, {"b": "x\x00"}]}, "payload") == {
        "payload.a[1].b": "Contains a NUL character (\\u0000), which PostgreSQL cannot store."
    }
    assert "payload[0]" in json_problems([math.inf], "payload")
    assert "payload.k" in json_problems({"k": "\udc00"}, "payload")
    # A valid character outside the BMP and text that spells an escape are fine.
    assert json_problems({"k": "😀", "t": "\\u0000"}) == {}


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_the_text_sent_means_what_json_dumps_writes(value):
    text = clean_json_text(value)
    if text is not None:
        assert json.loads(text) == json.loads(json.dumps(value))


class _Text(str):
    pass


@dataclass
class _Point:
    x: int


def test_what_orjson_would_write_differently_takes_the_json_module_path():
    # NaN and the infinities (orjson writes null): no clean text, so the walk names them.
    assert clean_json_text({"k": math.nan}) is None
    assert clean_json_text([math.inf]) is None
    # Nulls of their own stay nulls; integers past 64 bits and non-string keys as json writes.
    assert clean_json_text({"k": None}) == '{"k": null}'
    assert json.loads(clean_json_text({"n": 2**70}) or "") == {"n": 2**70}
    assert clean_json_text({1: "a"}) == '{"1": "a"}'
    # What json refuses is refused, not written as orjson would write it.
    for value in (datetime(2026, 1, 1, tzinfo=UTC), _Point(1), Decimal("1.5"), {1, 2}):
        assert clean_json_text({"k": value}) is None, value
    assert clean_json_text(_Text("a")) == '"a"'


def test_without_orjson_the_json_module_encodes_alone():
    """A Spark executor gets core/storable.py by --py-files, where orjson may be missing."""
    code = (
        "import sys; sys.modules['orjson'] = None\n"
        "from core.storable import clean_json_text\n"
        "print(clean_json_text({'a': [1, 2.5]}), clean_json_text({'k': float('nan')}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == '{"a": [1, 2.5]} None'
