"""kombu's Redis transport with one defect worked around, installed for ``redis://`` and
``rediss://`` broker URLs.

The defect (kombu 5.7): when the broker drops a worker's connection, closing the channel drops its
connection pools and only then restores the unacknowledged messages, which needs a new pool, built
from ``connection.client``, already None. The ``AttributeError`` that follows is no connection error
to Celery, so it stops the worker as "unrecoverable" (seen in the restart tests, with a periodic
task received and not yet acknowledged when Redis went away); the same error raised in a pool
thread's acknowledgement left a worker connected and taking nothing (jobs/watchdog.py covers that
case whatever its cause). Here a channel whose connection is gone says so with a connection error,
which Celery answers by reconnecting. An unacknowledged message is not lost by it: a broker that
kept it delivers it again after its visibility timeout, and one that restarted empty has lost it
anyway (what the tasks' resend rules are for).
"""

from __future__ import annotations

from typing import Any

from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import redis as kombu_redis
from redis import exceptions as redis_exceptions


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> Any:
        if self.connection.client is None:
            raise redis_exceptions.ConnectionError("the broker connection is closed")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel


def install() -> None:
    """Make ``redis://`` and ``rediss://`` resolve to this transport (called by console/celery.py
    before any connection is made)."""
    for scheme in ("redis", "rediss"):
        TRANSPORT_ALIASES[scheme] = "console.broker:Transport"
