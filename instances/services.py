"""Writes of the instances app: the only module that writes aq_instance.

An instance's rows come from its workers' heartbeats (``instance_heartbeat``, called by
jobs.services.worker_heartbeat) and from queue tables naming an instance no worker has reported
yet (``instance_register``: it then shows DOWN until one does)."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from core.exceptions import DomainError
from instances.models import Instance

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
NAME_RULE = "Use a letter or digit, then letters, digits, _, . or - (at most 64 characters)."

# Workers that beat within the limit are kept; the current one with the new beat.
_BEAT = """
UPDATE aq_instance SET
    host = %(host)s,
    started_at = CASE WHEN alive_until IS NULL OR alive_until <= now() OR started_at IS NULL
                      THEN now() ELSE started_at END,
    last_heartbeat = now(),
    alive_until = now() + make_interval(secs => %(limit)s),
    workers = (SELECT coalesce(jsonb_object_agg(key, value), '{}'::jsonb)
               FROM jsonb_each(workers || jsonb_build_object(%(worker)s, now()))
               WHERE (value #>> '{}')::timestamptz > now() - make_interval(secs => %(limit)s))
WHERE lower(name) = lower(%(name)s)
RETURNING inst_id
"""

# A clean stop: that worker no longer keeps the instance up; the last one ends the lease now.
_STOP = """
UPDATE aq_instance SET
    workers = workers - %(worker)s,
    alive_until = CASE WHEN workers - %(worker)s = '{}'::jsonb THEN least(alive_until, now())
                       ELSE alive_until END
WHERE lower(name) = lower(%(name)s)
RETURNING inst_id
"""

_ADD = """
INSERT INTO aq_instance (name, host, workers, created) VALUES (%(name)s, %(host)s, '{}', now())
ON CONFLICT (lower(name)) DO NOTHING
"""


def instance_name_check(name: Any, *, field: str = "name") -> str:
    if not isinstance(name, str) or not NAME_RE.match(name.strip()):
        raise DomainError(f"Not an instance name: {NAME_RULE}", field=field)
    return name.strip()


@transaction.atomic
def instance_heartbeat(*, name: str, host: str, worker: str, stopping: bool = False) -> int:
    """Record that ``worker`` of instance ``name`` on ``host`` is alive (or, ``stopping``, that it
    shut down cleanly). The first report of a name gives it its INST_ID. Returns the INST_ID.

    Plain SQL, one statement per beat: the lease is computed on the database's clock and many
    workers of one instance beat concurrently."""
    name = instance_name_check(name)
    params = {
        "name": name,
        "host": host[:255],
        "worker": worker,
        "limit": float(settings.AQ_INSTANCE_HEARTBEAT_LIMIT_S),
    }
    with connection.cursor() as cur:
        if stopping:
            cur.execute(_STOP, params)
            row = cur.fetchone()
            return int(row[0]) if row else 0
        cur.execute(_BEAT, params)
        row = cur.fetchone()
        if row is None:
            # Insert-then-update rather than an upsert per beat: ON CONFLICT would draw a
            # sequence value at every heartbeat, and INST_IDs are meant to stay small.
            cur.execute(_ADD, params)
            cur.execute(_BEAT, params)
            row = cur.fetchone()
    return int(row[0])


@transaction.atomic
def instance_register(*, name: str, field: str = "name") -> Instance:
    """The instance called ``name`` (case-insensitively), registered DOWN with an INST_ID if no
    worker has reported it yet: a queue table may name an instance before its hosts start."""
    name = instance_name_check(name, field=field)
    found = Instance.objects.filter(name__iexact=name).first()
    if found is not None:
        return found
    with connection.cursor() as cur:
        cur.execute(_ADD, {"name": name, "host": ""})
    return Instance.objects.get(name__iexact=name)


def instance_resolve(value: Any, *, field: str) -> Instance | None:
    """An instance named by the user: None for none (``None``, ``""`` or ``0``, Oracle's 0), an
    INST_ID (an existing instance's number) or a name (registered if new). ``field`` is named in
    the error for anything else."""
    if (
        value is None
        or value == ""
        or (isinstance(value, int) and not isinstance(value, bool) and value == 0)
    ):
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise DomainError(
            "Give an instance name, an instance number (INST_ID) or null.", field=field
        )
    if isinstance(value, int):
        found = Instance.objects.filter(pk=value).first()
        if found is None:
            raise DomainError(f"No instance has INST_ID {value}.", field=field)
        return found
    return instance_register(name=value, field=field)
