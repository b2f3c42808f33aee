"""Propagation schedule arithmetic: next_time expressions, windows and back-off. Pure Python.

``next_time`` is evaluated from the end of a window, as Oracle evaluates NEXT_TIME when a window
closes. It takes an interval (``90``, ``90s``, ``10m``, ``1h30m``, ``2d``, ISO 8601 ``PT10M``,
Oracle's ``SYSDATE + 1/24``) or a five-field cron expression (``*/15 * * * *``); empty means the
next window opens as soon as one ends.
"""

from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fractions import Fraction

from celery.schedules import crontab_parser

from core.exceptions import DomainError

MAX_INTERVAL = timedelta(days=366)

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_COMPACT = re.compile(r"(?:(\d+(?:\.\d+)?)\s*([smhdw]))", re.I)
_ISO = re.compile(
    r"P(?:(?P<d>\d+(?:\.\d+)?)D)?(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<s>\d+(?:\.\d+)?)S)?)?\Z",
    re.I,
)
_SYSDATE = re.compile(r"SYSDATE\s*\+\s*(\d+(?:\.\d+)?)\s*(?:/\s*(\d+(?:\.\d+)?))?\s*\Z", re.I)


class ScheduleError(DomainError):
    code = "invalid_schedule"


@dataclass(frozen=True)
class Interval:
    delta: timedelta

    def after(self, moment: datetime) -> datetime:
        return moment + self.delta

    def describe(self) -> str:
        return f"every {self.delta} after a window ends"


@dataclass(frozen=True)
class Cron:
    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday, as in cron
    any_day: bool
    any_weekday: bool

    def _day_ok(self, d: datetime) -> bool:
        dom = d.day in self.days
        dow = (d.isoweekday() % 7) in self.weekdays
        # cron: when both fields are restricted, either may match.
        if self.any_day:
            return dow
        if self.any_weekday:
            return dom
        return dom or dow

    def after(self, moment: datetime) -> datetime:
        """The first cron minute strictly after ``moment`` (in UTC)."""
        t = moment.astimezone(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
        limit = t + timedelta(days=366 * 5)  # 29 February on a Monday needs up to 28 years; cap
        while t <= limit:
            if t.month not in self.months:
                t = (t.replace(day=1, hour=0, minute=0) + timedelta(days=32)).replace(day=1)
                continue
            if not self._day_ok(t):
                t = t.replace(hour=0, minute=0) + timedelta(days=1)
                continue
            if t.hour not in self.hours:
                t = t.replace(minute=0) + timedelta(hours=1)
                continue
            if t.minute not in self.minutes:
                t += timedelta(minutes=1)
                continue
            return t
        raise ScheduleError(f"Cron expression {self.expression!r} never fires.", field="next_time")

    def describe(self) -> str:
        return f"cron {self.expression}"


NextTime = Interval | Cron | None


def parse_interval(text: str, *, field: str) -> timedelta:
    """Seconds, a compact interval (1h30m), ISO 8601 (PT10M) or ``SYSDATE + n[/d]`` (days)."""
    s = text.strip()
    seconds: float | None = None
    with contextlib.suppress(ValueError):
        seconds = float(s)
    if seconds is None and (m := _SYSDATE.fullmatch(s)):
        num, den = Fraction(m.group(1)), Fraction(m.group(2) or 1)
        if den == 0:
            raise ScheduleError("Division by zero in the SYSDATE expression.", field=field)
        seconds = float(num / den * 86400)
    if seconds is None and s[:1].upper() == "P" and (m := _ISO.fullmatch(s)) and s.upper() != "P":
        parts = {k: float(v) for k, v in m.groupdict().items() if v}
        if parts:
            seconds = (
                parts.get("d", 0) * 86400
                + parts.get("h", 0) * 3600
                + parts.get("m", 0) * 60
                + parts.get("s", 0)
            )
    if seconds is None and s and _COMPACT.sub("", s).strip() == "":
        seconds = sum(float(n) * _UNITS[u.lower()] for n, u in _COMPACT.findall(s))
    if seconds is None or math.isnan(seconds):
        raise ScheduleError(
            f"{text!r} is not an interval (try 90s, 10m, 1h30m, PT10M or SYSDATE + 1/24) or a "
            "cron expression (five fields).",
            field=field,
        )
    if seconds <= 0:
        raise ScheduleError("The interval must be longer than zero.", field=field)
    if seconds > MAX_INTERVAL.total_seconds():
        raise ScheduleError("The interval must be at most 366 days.", field=field)
    return timedelta(seconds=seconds)


_CRON_FIELDS = (
    ("minute", 60, 0),
    ("hour", 24, 0),
    ("day of month", 31, 1),
    ("month", 12, 1),
    ("day of week", 8, 0),  # 0-7: both 0 and 7 are Sunday
)


def parse_cron(text: str, *, field: str = "next_time") -> Cron:
    parts = text.split()
    if len(parts) != 5:
        raise ScheduleError(
            f"A cron expression has five fields (minute hour day month weekday), not {len(parts)}.",
            field=field,
        )
    sets = []
    for part, (name, size, start) in zip(parts, _CRON_FIELDS, strict=True):
        try:
            values = crontab_parser(size, start).parse(part)
        except (ValueError, KeyError, TypeError) as exc:
            raise ScheduleError(
                f"Cron {name} field {part!r} is not valid: {exc}", field=field
            ) from exc
        if name == "day of week":
            values = {v % 7 for v in values}  # 7 is Sunday too
        sets.append(frozenset(values))
    cron = Cron(" ".join(parts), *sets, any_day=parts[2] == "*", any_weekday=parts[4] == "*")
    cron.after(datetime(2000, 1, 1, tzinfo=UTC))  # refuses 31 February and the like
    return cron


def parse_next_time(text: str | None) -> NextTime:
    s = (text or "").strip()
    if not s:
        return None
    if len(s.split()) == 5 and not s.upper().startswith("SYSDATE"):
        return parse_cron(s)
    return Interval(parse_interval(s, field="next_time"))


def validate_schedule(*, duration: float | None, next_time: str, latency: float) -> None:
    if latency is None or latency < 0:
        raise ScheduleError("Latency cannot be negative.", field="latency")
    # NaN passes every comparison above and below; refuse it (and infinity) by name.
    if not math.isfinite(latency):
        raise ScheduleError("Latency must be a finite number of seconds.", field="latency")
    if duration is not None and not math.isfinite(duration):
        raise ScheduleError("Duration must be a finite number of seconds.", field="duration")
    if duration is not None and duration <= 0:
        raise ScheduleError("Duration must be positive, or empty for no end.", field="duration")
    nt = parse_next_time(next_time)
    if nt is not None and duration is None:
        raise ScheduleError(
            "A next time needs a duration: a window without an end never has a next one.",
            field="next_time",
        )


def window_at(
    *, start_time: datetime, duration: float | None, next_time: str, now: datetime
) -> tuple[datetime, datetime | None]:
    """The window that is open at ``now``, or the next one to open: (start, end or None)."""
    start = start_time
    if duration is None:
        return start, None
    length = timedelta(seconds=duration)
    nt = parse_next_time(next_time)
    end = start + length
    if end > now:
        return start, end
    if nt is None or isinstance(nt, Interval):
        # Windows repeat every length (+ interval): jump straight to the current one.
        period = length + (nt.delta if nt is not None else timedelta(0))
        k = (now - start) // period
        start = start + k * period
        end = start + length
        if end <= now:
            start, end = start + period, start + period + length
        return start, end
    # Walk the chain (each window opens at the first cron minute after the previous one ended),
    # but not one step per window since a start long ago: a minutely cron would take 100 000
    # steps after 70 days. Past that, missed windows are not replayed (Oracle evaluates NEXT_TIME
    # only when it looks): the chain restarts with the window open now or the next one.
    for _ in range(1_000):
        start = nt.after(end)
        end = start + length
        if end > now:
            return start, end
    start = nt.after(now - length)
    return start, start + length


def backoff_seconds(failures: int, *, low: float = 2.0, high: float = 1800.0) -> float:
    """MGW's retry rule (spec/gateway.md §1.9.3): 2 s after the first failure, doubling to 30 min."""
    if failures <= 0:
        return 0.0
    return min(low * 2 ** (failures - 1), high)
