"""next_time expressions, windows and back-off (pure arithmetic)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from jobs.schedule import (
    Cron,
    Interval,
    ScheduleError,
    backoff_seconds,
    parse_next_time,
    window_at,
)

T0 = datetime(2026, 11, 22, 10, 7, 30, tzinfo=UTC)  # a Sunday


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("90s", 90), ("10m", 600), ("1h30m", 5400), ("2d", 172800), ("PT10M", 600),
     ("P1DT1H", 90000), ("SYSDATE + 1/24", 3600), ("sysdate+1", 86400), ("1.5m", 90)],
)  # fmt: skip
def test_intervals_in_every_accepted_form(text, seconds):
    nt = parse_next_time(text)
    assert isinstance(nt, Interval) and nt.delta == timedelta(seconds=seconds)


def test_an_empty_next_time_means_at_once():
    assert parse_next_time("") is None and parse_next_time("  ") is None


@pytest.mark.parametrize(
    ("expr", "after", "expected"),
    [
        ("*/15 * * * *", T0, datetime(2026, 11, 22, 10, 15, tzinfo=UTC)),
        ("0 9 * * mon-fri", T0, datetime(2026, 11, 23, 9, 0, tzinfo=UTC)),
        ("30 2 1 * *", T0, datetime(2026, 12, 1, 2, 30, tzinfo=UTC)),
        ("0 0 29 2 *", T0, datetime(2028, 2, 29, 0, 0, tzinfo=UTC)),
        ("0 12 * * 7", T0, datetime(2026, 11, 22, 12, 0, tzinfo=UTC)),  # 7 is Sunday too
    ],
)
def test_cron_fires_at_the_next_matching_minute(expr, after, expected):
    nt = parse_next_time(expr)
    assert isinstance(nt, Cron) and nt.after(after) == expected


@pytest.mark.parametrize(
    "text", ["tomorrow", "0", "-5m", "61 * * * *", "* * 31 2 *", "* * * *", "P", "SYSDATE + 1/0"]
)
def test_bad_expressions_name_next_time(text):
    with pytest.raises(ScheduleError) as err:
        parse_next_time(text)
    assert err.value.field == "next_time"


def test_windows_repeat_every_duration_plus_interval():
    start = T0 - timedelta(hours=1)
    assert window_at(start_time=start, duration=60, next_time="5m", now=T0) == (
        start + timedelta(minutes=60),
        start + timedelta(minutes=61),
    )
    # Without an end, the first window is open for ever.
    assert window_at(start_time=start, duration=None, next_time="", now=T0) == (start, None)


def test_cron_windows_open_at_the_cron_minute_after_the_last_end():
    start = T0 - timedelta(minutes=40)  # 09:27:30, ten-minute windows, next on the hour
    got = window_at(start_time=start, duration=600, next_time="0 * * * *", now=T0)
    # 09:27:30-09:37:30, then 10:00-10:10, which is open at 10:07:30
    assert got == (
        datetime(2026, 11, 22, 10, 0, tzinfo=UTC),
        datetime(2026, 11, 22, 10, 10, tzinfo=UTC),
    )


def test_back_off_doubles_from_two_seconds_to_thirty_minutes():
    assert [backoff_seconds(n) for n in range(0, 13)] == [
        0, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 1800, 1800,
    ]  # fmt: skip
