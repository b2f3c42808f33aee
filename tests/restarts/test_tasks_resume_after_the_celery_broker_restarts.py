"""The Celery broker (a private Redis that keeps nothing on disk) stopped and started again under
load: the workers and beat reconnect by themselves, tasks the broker lost with its memory are
sent again, no propagation run or agent stays stuck, and every message arrives exactly once."""

from __future__ import annotations

import time

import pytest

from tests.restarts.harness import Console, assert_healthy, record_figures, restart_round

pytestmark = [pytest.mark.restarts]

DOWN_S = 3.0


def test_every_message_moves_exactly_once_across_a_broker_restart(console: Console) -> None:
    def restart() -> None:
        console.redis.stop()
        time.sleep(DOWN_S)
        console.redis.start()

    figures = restart_round(console, "broker", restart)
    assert_healthy(console)
    record_figures("broker", figures)
