"""SQL three-valued logic: every operator's behaviour with NULL, and AND / OR / NOT / EXISTS over
TRUE, FALSE and NULL (Kleene logic: with FALSE < NULL < TRUE, AND is the minimum, OR the maximum,
NOT swaps TRUE and FALSE; EXISTS (... WHERE c) is whether c is TRUE, never NULL)."""

from __future__ import annotations

import itertools

import pytest

from rules.lang import UserMessage
from tests.rules.lang_helpers import value_of

# :msg.n is NULL, :msg.missing is absent (also NULL), :msg.s = 'abc', :msg.one = 1
MSG = UserMessage("T", {"n": None, "s": "abc", "one": 1})
T, F, N = True, False, None
LEAF = {T: "1 = 1", F: "1 = 2", N: ":msg.n = 1"}
ORDER = {F: 0, N: 1, T: 2}


def v(text: str) -> bool | None:
    return value_of(text, MSG)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (":msg.n = 1", N),
        (":msg.n != 1", N),
        (":msg.n < 1", N),
        (":msg.n >= 1", N),
        ("1 <> :msg.missing", N),
        (":msg.n = :msg.missing", N),
        ("NULL = NULL", N),
        (":msg.s = NULL", N),
        (":msg.n IS NULL", T),
        (":msg.missing IS NULL", T),
        (":msg.n IS NOT NULL", F),
        (":msg.s IS NOT NULL", T),
        (":msg.n IN (1, 2)", N),
        (":msg.one IN (1, NULL)", T),
        (":msg.one IN (2, NULL)", N),
        (":msg.one IN (2, 3)", F),
        ("1 IN (:msg.n, 1)", T),
        ("2 IN (:msg.n, 1)", N),
        (":msg.one NOT IN (2, NULL)", N),
        (":msg.one NOT IN (1, NULL)", F),
        (":msg.one NOT IN (2, 3)", T),
        (":msg.n NOT IN (2, 3)", N),
        (":msg.n LIKE 'a%'", N),
        (":msg.s LIKE :msg.n", N),
        (":msg.s NOT LIKE :msg.n", N),
        (":msg.n NOT LIKE 'a%'", N),
        (":msg.s LIKE 'a%' ESCAPE NULL", N),
        ("UPPER(:msg.n) = 'A'", N),
        ("LOWER(:msg.missing) IS NULL", T),
        ("HEXTORAW(:msg.n) IS NULL", T),
        ("HEXTORAW(NULL) IS NULL", T),
        ("NOT (:msg.n = 1)", N),
        ("EXISTS (SELECT 1 FROM SYS.DUAL WHERE :msg.n = 1)", F),
        ("NOT EXISTS (SELECT 1 FROM SYS.DUAL WHERE :msg.n = 1)", T),
        ("NOT EXISTS (SELECT 1 FROM SYS.DUAL WHERE :msg.one = 1)", F),
        ("EXISTS (SELECT 1 FROM DUAL WHERE :msg.one = 1)", T),
    ],
)
def test_operator_with_null(text, expected) -> None:
    assert v(text) is expected


@pytest.mark.parametrize(("a", "b"), list(itertools.product([T, F, N], repeat=2)))
def test_and_or_follow_kleene_logic(a, b) -> None:
    lo = min(a, b, key=ORDER.__getitem__)
    hi = max(a, b, key=ORDER.__getitem__)
    assert v(f"{LEAF[a]} AND {LEAF[b]}") is lo
    assert v(f"{LEAF[a]} OR {LEAF[b]}") is hi
    # n-ary and nested forms compile differently (fused, unrolled, looped) and must agree.
    assert v(f"{LEAF[a]} AND ({LEAF[b]} AND 1 = 1)") is lo
    assert v(f"{LEAF[a]} AND {LEAF[b]} AND 1 = 1 AND 2 = 2") is lo
    assert v(f"{LEAF[a]} OR ({LEAF[b]} OR 1 = 2)") is hi
    assert v(f"{LEAF[a]} OR {LEAF[b]} OR 1 = 2 OR 2 = 3") is hi


@pytest.mark.parametrize("a", [T, F, N])
def test_not_and_exists(a) -> None:
    assert v(f"NOT ({LEAF[a]})") is (None if a is None else not a)
    assert v(f"EXISTS (SELECT 1 FROM SYS.DUAL WHERE {LEAF[a]})") is (a is True)
    assert v(f"NOT EXISTS (SELECT 1 FROM SYS.DUAL WHERE {LEAF[a]})") is (a is not True)


def test_and_binds_tighter_than_or_and_not_tighter_than_and() -> None:
    # TRUE OR (FALSE AND ...) is TRUE; (TRUE OR FALSE) AND FALSE would be FALSE.
    assert v("1 = 1 OR 1 = 2 AND 1 = 2") is True
    # (NOT TRUE) AND ... is FALSE; NOT (TRUE AND FALSE) would be TRUE.
    assert v("NOT 1 = 1 AND 1 = 2") is False
