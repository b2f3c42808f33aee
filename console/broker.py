"""kombu's Redis and filesystem transports with a defect of each worked around, installed for
``redis://``, ``rediss://`` and ``filesystem://`` broker URLs.

Filesystem (kombu 5.7, the embedded default): a sender creates the message file, then writes it;
a worker moves and reads any ``*.<queue>.msg`` file it sees, so one caught in between reads as
empty, and its ``JSONDecodeError`` stops the worker as "unrecoverable" (seen within minutes of
the console's start, beat sending every second: ``scripts/run-console.sh`` then stops everything),
and the message is lost. Here a message is written under a name the readers skip and renamed
into place when whole: a rename in one folder is atomic, so a reader sees all of it or nothing.

Redis:
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

import contextlib
import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import filesystem as kombu_filesystem
from kombu.transport import redis as kombu_redis
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps
from redis import exceptions as redis_exceptions


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> Any:
        if self.connection.client is None:
            raise redis_exceptions.ConnectionError("the broker connection is closed")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel


class FilesystemChannel(kombu_filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
        # kombu's name (milliseconds first: the readers take files in name order); ".part" after
        # it is not "<queue>.msg", so _get, _size and _purge skip the file until the rename.
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        path = os.path.join(self.data_folder_out, name)
        part = path + ".part"
        try:
            with open(part, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(part, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.remove(part)
            raise ChannelError(f"Cannot add file {path!r} to directory") from exc


class FilesystemTransport(kombu_filesystem.Transport):
    Channel = FilesystemChannel


def install() -> None:
    """Make ``redis://``, ``rediss://`` and ``filesystem://`` resolve to these transports
    (called by console/celery.py before any connection is made)."""
    for scheme in ("redis", "rediss"):
        TRANSPORT_ALIASES[scheme] = "console.broker:Transport"
    TRANSPORT_ALIASES["filesystem"] = "console.broker:FilesystemTransport"
