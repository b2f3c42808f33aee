"""Waiting for messages with LISTEN/NOTIFY."""

from __future__ import annotations

import threading

import psycopg


class Listener:
    """A dedicated autocommit connection that LISTENs on queue channels, so a dequeue can block
    until an enqueue commits instead of polling. One per thread; cheap to keep open."""

    def __init__(
        self, conninfo: str | None = None, *, connection: psycopg.Connection | None = None
    ):
        self.conn = connection or psycopg.connect(conninfo or "", autocommit=True)
        self._channels: set[str] = set()

    @staticmethod
    def clock() -> float:
        import time

        return time.monotonic()

    def listen(self, channel: str) -> None:
        if channel not in self._channels:
            self.conn.execute(f'LISTEN "{channel}"')
            self._channels.add(channel)

    def wait(self, channel: str, timeout: float) -> bool:
        """Block until a notification on ``channel`` or ``timeout`` seconds; True if notified."""
        for note in self.conn.notifies(timeout=max(timeout, 0.001), stop_after=1):
            if note.channel == channel:
                return True
        return False

    def close(self) -> None:
        self.conn.close()


_local = threading.local()


def thread_listener(conninfo: str) -> Listener:
    """The calling thread's listener for ``conninfo``, opened on first use."""
    listener = getattr(_local, "listener", None)
    if listener is None or listener.conn.closed:
        listener = Listener(conninfo)
        _local.listener = listener
    return listener
