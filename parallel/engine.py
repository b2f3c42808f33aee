"""Pure rules of parallel queues (no Django import): the ring of primary and secondary instances,
the stable key → partition hash and the random pick of a partition on an instance."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

# The white paper's "3N distinct queues": three partitions per instance by default.
PARTITIONS_PER_INSTANCE = 3

# pg_try_advisory_xact_lock(ORDERED_LOCK, queue id): the one consumer of a partition in an
# ordered dequeue, until its transaction ends.
ORDERED_LOCK = 0x41515051


def ring(partitions: int, instances: Sequence[T]) -> list[tuple[T | None, T | None]]:
    """(primary, secondary) of each partition, in order: partition i goes to instance i mod M
    with the next instance of the ring as its secondary (S003's q1 1→2, q2 2→3, q3 3→1). One
    instance: no secondary; no instance: neither."""
    m = len(instances)
    if m == 0:
        return [(None, None)] * partitions
    return [
        (instances[i % m], instances[(i + 1) % m] if m > 1 else None) for i in range(partitions)
    ]


def key_position(key: str, partitions: int) -> int:
    """The partition (1-based position) a group key always goes to. A digest, not Python's
    ``hash``: it must be the same in every process and after every restart."""
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % partitions + 1


def pick(candidates: Sequence[T], rng: random.Random | None = None) -> T:
    """One candidate at random (the paper's ``ORDER BY dbms_random.value … ROWNUM = 1``), so the
    clients of an instance spread evenly over its partitions."""
    return (rng or random).choice(list(candidates))
