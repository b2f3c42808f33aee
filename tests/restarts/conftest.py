"""One private console for the whole folder: its servers and processes cost half a minute to
start, and each restart test leaves them running and healthy for the next."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.restarts.harness import Console, private_console


@pytest.fixture(scope="session")
def console() -> Iterator[Console]:
    with private_console() as c:
        yield c
