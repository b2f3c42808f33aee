"""Constants of the gateway tests."""

from __future__ import annotations

# Nothing listens on port 1: a connection there is refused at once.
CLOSED = {"host": "127.0.0.1", "port": 1}
SECRET = "s3cr3t-Value-never-shown"
