"""The dashboard's "falling behind": a backlog gathered while a schedule waits for its next window
is the schedule working as set; only a message that was already late while a window was open
(now, or when the last run ended) counts."""

from __future__ import annotations

import pytest
from django.db import connection

from jobs import services
from jobs.selectors import attention
from tests.jobs.helpers import enqueue

pytestmark = pytest.mark.django_db


def test_only_backlog_that_was_late_while_a_window_was_open_is_falling_behind(
    admin_user, mc_table, sc_table, make_queue
):
    src = make_queue("SRC", mc_table)
    # name -> (next window opens, last run ended), in SQL relative to now().
    schedules = {
        "P_OPEN": ("now() - interval '1 minute'", "now() - interval '1 hour'"),
        "P_WAITING": ("now() + interval '1 hour'", "now() - interval '10 minutes'"),
        "P_NEVER_RAN": ("now() + interval '1 hour'", "NULL"),
        "P_MISSED": ("now() + interval '1 hour'", "now() - interval '1 minute'"),
    }
    for name in schedules:
        services.propagation_create(
            user=admin_user,
            name=name,
            source_queue=src,
            destination_queue=make_queue(f"DST_{name}", sc_table),
        )
    enqueue(src, [{"n": 1}, {"n": 2}])
    with connection.cursor() as cur:
        # Enqueued five minutes ago; the commit sequence is the COMMIT's, which this test's
        # transaction never reaches.
        cur.execute(
            "UPDATE aq_message SET enq_time = now() - interval '5 minutes', "
            "commit_seq = coalesce(commit_seq, id) WHERE queue_id = %s",
            [src.pk],
        )
        for name, (window_start, last_run_at) in schedules.items():
            cur.execute(
                f"UPDATE jobs_propagationschedule s SET window_start = {window_start}, "
                f"window_end = {window_start} + interval '10 minutes', "
                f"last_run_at = {last_run_at} FROM jobs_propagation p "
                "WHERE p.id = s.propagation_id AND p.name = %s",
                [name],
            )

    behind = attention()["behind"]

    # P_WAITING's messages came after its last run ended: they wait for the next window as set.
    # P_MISSED's were four minutes old when its last run ended, and were left.
    assert [(b["propagation"].name, b["propagation"].backlog) for b in behind] == [
        ("P_MISSED", 2),
        ("P_OPEN", 2),
    ]
    assert all(b["age"] > 240 for b in behind)
