"""Oracle's implicit conversion and value semantics: a NUMBER compared with a string converts the
string (a string that is not a number makes the comparison NULL, where Oracle would raise), numbers
compare exactly, RAW compares with HEXTORAW, strings compare case-sensitively by code point."""

from __future__ import annotations

from decimal import Decimal

import pytest

from rules.lang import RowLCR, UserMessage
from tests.rules.lang_helpers import value_of
from tests.rules.lang_seed import G15, region_msg, row


def msg(**payload) -> UserMessage:
    return UserMessage("T", payload)


@pytest.mark.parametrize("literal", ["'1'", "'01'", "'1.0'", "' 1 '", "'+1'", "'1e0'", "1", "1.00"])
def test_a_number_equals_every_spelling_of_it(literal) -> None:
    assert value_of(f":msg.priority = {literal}", msg(priority=1)) is True


def test_g15_compares_a_number_attribute_with_the_string_one() -> None:
    assert value_of(G15, region_msg("EUROPE", 1)) is True
    assert value_of(G15, UserMessage("T", {"region": "EUROPE", "priority": "1"})) is True
    assert value_of(G15, UserMessage("T", {"region": "EUROPE", "priority": 1.0})) is True
    assert value_of(G15, UserMessage("T", {"region": "EUROPE", "priority": 2})) is False


@pytest.mark.parametrize("literal", ["'one'", "'1,0'", "'1_000'", "'NaN'", "'Infinity'", "''"])
def test_a_string_that_is_not_a_number_compares_as_null(literal) -> None:
    assert value_of(f":msg.priority = {literal}", msg(priority=1)) is None
    assert value_of(f":msg.priority != {literal}", msg(priority=1)) is None


def test_a_number_literal_converts_a_string_attribute() -> None:
    assert value_of(":msg.code = 7", msg(code="007")) is True
    assert value_of(":msg.code > 6", msg(code=" 7")) is True
    assert value_of(":msg.code = 7", msg(code="seven")) is None


def test_order_is_numeric_for_numbers_and_binary_for_strings() -> None:
    assert value_of(":msg.n > '9'", msg(n=10)) is True  # 10 > 9 as numbers
    assert value_of(":msg.s > '9'", msg(s="10")) is False  # '1' < '9' as strings
    assert value_of(":msg.s < 'a'", msg(s="B")) is True  # upper case sorts first
    assert value_of(":msg.s = 'hr'", msg(s="HR")) is False  # case-sensitive


def test_numbers_compare_exactly() -> None:
    assert value_of(":msg.x = 0.1", msg(x=0.1)) is True
    assert value_of(":msg.x = 0.3", msg(x=0.1 + 0.2)) is False
    big = 12345678901234567890123
    assert value_of(f":msg.x = {big}", msg(x=big)) is True
    assert value_of(f":msg.x = {big + 1}", msg(x=big)) is False
    assert value_of(":msg.x = 2.50", msg(x=Decimal("2.5"))) is True
    assert value_of(":msg.x < -1.5E-3", msg(x=-0.002)) is True


def test_json_booleans_read_as_their_text() -> None:
    assert value_of(":msg.urgent = 'true'", msg(urgent=True)) is True
    assert value_of(":msg.urgent = 1", msg(urgent=True)) is None


def test_objects_and_lists_compare_as_null_but_are_not_null() -> None:
    m = msg(address={"city": "Paris"}, tags=["a"])
    assert value_of(":msg.address = 'Paris'", m) is None
    assert value_of(":msg.tags = 'a'", m) is None
    assert value_of(":msg.address IS NOT NULL", m) is True
    assert value_of(":msg.address.city = 'Paris'", m) is True


@pytest.mark.parametrize(
    ("condition", "tag", "expected"),
    [
        (":dml.get_tag() = HEXTORAW('02')", b"\x02", True),
        (":dml.get_tag() = HEXTORAW('2')", b"\x02", True),  # an odd digit count gets a 0
        (":dml.get_tag() = HEXTORAW('0a')", b"\x0a", True),
        (":dml.get_tag() = '02'", b"\x02", True),  # the string converts to RAW
        (":dml.get_tag() = HEXTORAW('02')", b"\x01", False),
        (":dml.get_tag() = HEXTORAW('0200')", b"\x02", False),
        (":dml.get_tag() = 'zz'", b"\x02", None),
        (":dml.get_tag() = HEXTORAW('02')", None, None),
        (":dml.get_tag() > HEXTORAW('01')", b"\x02", True),
        (":dml.get_tag() = 2", b"\x02", None),  # NUMBER and RAW do not compare
    ],
)
def test_raw_comparisons(condition, tag, expected) -> None:
    assert value_of(condition, row(tag=tag)) is expected


def test_an_empty_tag_is_null_as_an_empty_raw_is() -> None:
    lcr = RowLCR("DB", "INSERT", "HR", "T", b"")
    assert lcr.tag is None
    assert value_of(":dml.is_null_tag() = 'Y'", lcr) is True


@pytest.mark.parametrize(
    ("stored", "literal", "expected"),
    [
        ("2024-05-01", "'2024-04-30'", True),
        ("2024-05-01T10:00:00", "'2024-05-01 09:59:59'", True),
        # offsets become UTC: 10:00 at +02:00 is 08:00
        ("2024-05-01T10:00:00+02:00", "'2024-05-01 07:59:59'", True),
        ("2024-05-01T10:00:00+02:00", "'2024-05-01 08:00:00'", False),
        ("2024-05-01", "'2024-05-02'", False),
        ("not a date", "'2024-05-02'", None),
        ("2024-05-01", "'05/01/2024'", None),
    ],
)
def test_dates_compare_with_iso_strings(stored, literal, expected) -> None:
    lcr = row("UPDATE", new={"HIRED": stored})
    text = f":dml.get_value('NEW','\"HIRED\"').AccessDate() > {literal}"
    assert value_of(text, lcr) is expected


def test_numbers_convert_to_text_for_like_and_upper() -> None:
    m = msg(n=Decimal("2.50"), i=-0)
    assert value_of(":msg.n LIKE '2.5'", m) is True
    assert value_of("UPPER(:msg.n) = '2.5'", m) is True
    assert value_of(":msg.i LIKE '0'", m) is True
