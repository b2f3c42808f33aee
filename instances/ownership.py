"""The ownership rule of a queue table (Oracle's primary/secondary instance affinity), pure Python
with no Django import: one function, used by the queues app's ownership service and its tests.

0 is Oracle's "none" (no primary, no secondary, no owner)."""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple


class Owner(NamedTuple):
    inst_id: int  # 0: no instance can own it (none is up)
    why: str


def owner_for(*, primary: int, secondary: int, current: int, live: Collection[int]) -> Owner:
    """The instance that should own a queue table now.

    The primary while it is up; the secondary while the primary is down; with both down, the
    current owner if it is up, else the lowest-numbered live instance; nobody when none is up.
    A returning primary (or secondary) takes ownership back at once, as in Oracle."""
    if primary and primary in live:
        return Owner(primary, "primary instance up")
    if secondary and secondary in live:
        return Owner(secondary, "primary instance down" if primary else "secondary instance up")
    named = "primary and secondary instances down" if primary or secondary else "no preference"
    if current and current in live:
        return Owner(current, f"{named}: owner still up")
    if live:
        return Owner(min(live), f"{named}: any live instance")
    return Owner(0, "no instance up")
