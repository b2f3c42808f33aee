"""``json_problems`` first judges a value by its JSON text (the C encoder) and walks it only when
the text cannot tell; both must always give the same answer as the walk alone."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from core.storable import MAX_JSON_DEPTH, json_problems, walk_problems

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
