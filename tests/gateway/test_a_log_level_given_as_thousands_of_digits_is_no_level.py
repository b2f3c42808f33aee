"""A log level is a number 0-4 or its Oracle name: digits past what ``int()`` converts (4,301)
or past an id's 18 are no level (None, which the callers answer as a 400), never a ValueError."""

from __future__ import annotations

import pytest

from gateway.choices import LogLevel


@pytest.mark.parametrize("text", ["7" * 4301, "0" * 19, "1" * 25, "¹", " "])
def test_it_is_no_level(text):
    assert LogLevel.parse(text) is None


def test_digits_and_names_still_are():
    assert LogLevel.parse(" 2 ") == LogLevel.parse("TRACE_HIGH_LOGGING") == LogLevel(2)
