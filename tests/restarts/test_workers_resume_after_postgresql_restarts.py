"""PostgreSQL stopped and started again under load (fast shutdown ends the sessions cleanly,
immediate shutdown kills them and makes the server recover from its WAL): the workers, beat, the
gateway agent and the web process reconnect by themselves, the propagation and both gateway jobs
resume, and every message arrives exactly once."""

from __future__ import annotations

import time

import pytest

from tests.restarts.harness import Console, assert_healthy, record_figures, restart_round

pytestmark = [pytest.mark.restarts]

DOWN_S = 2.0  # how long the server stays down: every process notices


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_every_message_moves_exactly_once_across_a_postgresql_restart(
    console: Console, mode: str
) -> None:
    def restart() -> None:
        console.pg.stop(mode)
        time.sleep(DOWN_S)
        console.pg.start()

    figures = restart_round(console, f"postgresql_{mode}", restart)
    assert_healthy(console)
    record_figures(f"postgresql_{mode}", figures)
