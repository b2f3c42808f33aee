"""The embedded broker (``filesystem://``, console/broker.py): a worker reading the queue folder
while senders write to it gets every message whole, once. kombu's own transport creates the file
before writing it, so a reader that picks it up in between reads nothing: the worker stopped with
``JSONDecodeError`` within minutes of the console's start, and that message was lost."""

from __future__ import annotations

import threading
from pathlib import Path
from queue import Empty
from typing import Any

from kombu import Connection
from kombu.transport.virtual import Channel

from console import broker

N = 3000
QUEUE = "celery"


def _channel(folder: Path) -> Channel:
    opts = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "control_folder": str(folder / "control"),
        "store_processed": False,
    }
    return Connection("filesystem://", transport_options=opts).channel()


def drain_while_sending(folder: Path) -> tuple[list[Any], list[BaseException]]:
    """One thread sends N messages while this one takes them as fast as it can."""
    sender, reader = _channel(folder), _channel(folder)
    errors: list[BaseException] = []

    def send() -> None:
        try:
            for i in range(N):
                sender._put(QUEUE, {"n": i, "body": "x" * 200})
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    got: list[Any] = []
    thread = threading.Thread(target=send)
    thread.start()
    while (thread.is_alive() or reader._size(QUEUE)) and not errors:
        try:
            got.append(reader._get(QUEUE))
        except Empty:
            continue
        except Exception as exc:  # reported by the test
            errors.append(exc)
    thread.join()
    return got, errors


def test_the_embedded_broker_is_the_atomic_one(tmp_path: Path) -> None:
    broker.install()
    assert isinstance(_channel(tmp_path), broker.FilesystemChannel)


def test_every_message_arrives_whole_and_once_while_a_sender_writes(tmp_path: Path) -> None:
    broker.install()

    got, errors = drain_while_sending(tmp_path)

    assert errors == []
    assert sorted(m["n"] for m in got) == list(range(N))
    assert not [p.name for p in tmp_path.iterdir() if p.is_file()]  # no .part left behind
