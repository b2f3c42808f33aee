"""Celery beat SIGKILLed under load and started again: the schedules (dispatch, reapers) and the
queue monitor's timers go on, and nothing runs twice: no second agent session, no two runs of
the propagation at once, no message moved twice."""

from __future__ import annotations

import itertools
import signal
import time

import pytest

from tests.restarts.harness import (
    Console,
    assert_healthy,
    record_figures,
    restart_round,
    wait_until,
)

pytestmark = [pytest.mark.restarts]

DOWN_S = 3.0
DELAYED = 200


def test_beat_killed_and_restarted_runs_nothing_twice(console: Console) -> None:
    _, session_before, _ = console.agent_state()
    timer_tag = f"beat-timer-{time.monotonic_ns()}"
    figures: dict[str, float] = {}

    def restart() -> None:
        beat = console.procs["beat"]
        # Due while beat is gone: only the queue monitor, run by beat, makes them READY.
        console.enqueue("PROP_SRC", timer_tag, range(DELAYED), delay=1)
        beat.stop(signal.SIGKILL)
        time.sleep(DOWN_S)
        beat.start()
        back = time.monotonic()
        fired = wait_until(
            lambda: not console.seqs_at("PROP_SRC", timer_tag, ("WAITING",)), 60, 0.05
        )
        assert fired, f"delayed messages never became READY\n{console.logs()}"
        figures["timers_resumed_s"] = time.monotonic() - back

    figures.update(restart_round(console, "beat", restart))
    print(f"beat: delayed messages released {figures['timers_resumed_s']:.2f} s after its start")
    assert_healthy(console)

    got = console.seqs_at("PROP_DST", timer_tag)
    assert sorted(got) == list(range(DELAYED)) and set(got.values()) == {1}
    # The agent kept its one session: beat's restart started no second agent process.
    status, session_after, _ = console.agent_state()
    assert (status, session_after) == ("RUNNING", session_before)
    # Runs of the propagation never overlap: each started after the one before ended.
    runs = console.query(
        "SELECT id, started_at, ended_at FROM jobs_propagationrun WHERE started_at IS NOT NULL "
        "ORDER BY started_at"
    )
    for (a, _, a_end), (b, b_start, _) in itertools.pairwise(runs):
        assert a_end is not None and a_end <= b_start, f"runs {a} and {b} overlap"
    record_figures("beat", figures)
