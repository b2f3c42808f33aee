"""The Streams-pool settings (console/settings.py) read, checked and handed to the engine.

The engine imports no Django, so ``queues.apps`` hands it the parsed settings at start-up and
again whenever a test overrides one of them. The system checks: ``queues.E100`` for a value that
is not a size, ``queues.W100`` for a manual pool that cannot hold one buffered queue, and
``queues.E101`` (a database check, run by ``check --database default`` and ``migrate``) for
Oracle's rule that a manually sized pool reserves 10 MB per buffered queue (spec T10)."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core import checks
from django.core.signals import setting_changed
from django.db import DatabaseError, connections

from queues.engine import buffered

SIZE_SETTINGS = {
    "AQ_MEMORY_TARGET": "memory_target",
    "AQ_MEMORY_MAX_TARGET": "memory_max_target",
    "AQ_SGA_TARGET": "sga_target",
    "AQ_STREAMS_POOL_SIZE": "streams_pool_size",
    "AQ_SHARED_POOL_SIZE": "shared_pool_size",
}
OTHER_SETTINGS = {
    "AQ_BUFFER_SPILL_AFTER_S": "spill_after_s",
    "AQ_BUFFER_FLOW_CONTROL_MSGS": "flow_control_msgs",
    "AQ_BUFFER_FLOW_CONTROL_RECHECK_S": "recheck_s",
}
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)\s*$", re.IGNORECASE)


def parse_size(value: Any) -> int:
    """Bytes from an int or an Oracle-style size ("10M", "1G"); ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int):
        if value < 0:
            raise ValueError(value)
        return value
    match = _SIZE.match(str(value))
    if not match:
        raise ValueError(value)
    return int(match.group(1)) * _UNITS[match.group(2).upper()]


def pool_values() -> tuple[dict[str, Any], list[checks.CheckMessage]]:
    values: dict[str, Any] = {}
    problems: list[checks.CheckMessage] = []
    for name, key in SIZE_SETTINGS.items():
        raw = getattr(settings, name, None)
        if raw is None:
            continue
        try:
            values[key] = parse_size(raw)
        except ValueError:
            problems.append(
                checks.Error(
                    f"{name} = {raw!r} is not a size: give bytes, or a number with K, M or G "
                    "(for example 64M).",
                    id="queues.E100",
                )
            )
    for name, key in OTHER_SETTINGS.items():
        raw = getattr(settings, name, None)
        if raw is None:
            continue
        try:
            number = float(raw) if key != "flow_control_msgs" else int(raw)
        except (TypeError, ValueError):
            number = -1
        if number < 0:
            problems.append(
                checks.Error(f"{name} = {raw!r} must be a number ≥ 0.", id="queues.E100")
            )
        else:
            values[key] = number
    return values, problems


def apply_settings() -> buffered.PoolConfig:
    """Hand the valid settings to the engine (invalid ones keep Oracle's defaults)."""
    values, _ = pool_values()
    return buffered.configure(**values)


def _on_setting_changed(*, setting: str, **_: Any) -> None:
    if setting in SIZE_SETTINGS or setting in OTHER_SETTINGS:
        apply_settings()


setting_changed.connect(_on_setting_changed)


@checks.register("queues")
def check_pool_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    values, problems = pool_values()
    if problems:
        return problems
    pool = buffered.PoolConfig(**values)
    if pool.mode == "MANUAL" and pool.size < buffered.PER_QUEUE_BYTES:
        problems.append(
            checks.Warning(
                f"AQ_STREAMS_POOL_SIZE is {pool.size} bytes: a manually sized Streams pool needs "
                "10 MB for each buffered queue, so no queue can take buffered messages.",
                hint="Set AQ_STREAMS_POOL_SIZE to at least 10M per buffered queue, or leave it 0.",
                id="queues.W100",
            )
        )
    return problems


def buffered_queue_count(alias: str = "default") -> int:
    with connections[alias].cursor() as cur:
        cur.execute("SELECT count(*) FROM v_buffered_queues")
        return int(cur.fetchone()[0])


@checks.register("queues", checks.Tags.database)
def check_pool_reserve(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """T10: a manually sized pool reserves 10 MB per buffered queue."""
    values, problems = pool_values()
    if problems or not databases:
        return []
    pool = buffered.PoolConfig(**values)
    out: list[checks.CheckMessage] = []
    for alias in databases:
        try:
            n = buffered_queue_count(alias)
        except DatabaseError:
            continue  # not migrated yet: nothing is buffered
        need = pool.required(n)
        if need and pool.size < need:
            out.append(
                checks.Error(
                    f"AQ_STREAMS_POOL_SIZE is {pool.size // buffered.MB} MB but the database "
                    f"{alias!r} has {n} buffered queues: a manually sized Streams pool must "
                    f"reserve 10 MB for each, {need // buffered.MB} MB.",
                    hint=f"Set AQ_STREAMS_POOL_SIZE to at least {need // buffered.MB}M, or size "
                    "the pool automatically (AQ_SGA_TARGET or AQ_MEMORY_TARGET).",
                    id="queues.E101",
                )
            )
    return out
