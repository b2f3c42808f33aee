"""Remote propagations (QUEUE@LINK) through crashes, on the private console of this folder and a
private site server of this module (site_b: SITE_B.LOCALHOST, stopped and started here; the
session ``site`` server's site_c is the second site and is never stopped). Each stop comes
while the worker moves a backlog (or a steady flow) in batches of 25; afterwards
every message is exactly once at each destination (by the ``seq`` in its payload) and gone from
the source (docs/SITES.md, "Exactly once"). A site that hangs mid-batch must not hold up a local
propagation of the same source (the remote statement timeout).

The worker SIGKILLed between the remote commit and the local one is
tests/celery/test_remote_propagation_exactly_once.py; an unreachable port there, a stopped
server here."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.restarts.harness import ALL_STATES, Console, Producer, wait_until
from tests.sites.helpers import SITE_C, SiteServer, site_server
from tests.sites.remote_queues import remote_queues, remote_seqs

pytestmark = [pytest.mark.restarts]

DOWN_S = 1.5  # each short stop: several batches' worth of the producer's messages
LEFT = ("READY", "WAITING", "EXPIRED")  # a message in one of these is still at the source


@pytest.fixture(scope="module")
def site_b(console: Console) -> Iterator[SiteServer]:
    """This module's own site server (the session one is shared and never stopped), with
    REMOTE_IN at site_b and the console's link SITE_B to it."""
    with site_server() as server:
        remote_queues(server)
        _shell(console, _LINK, name="SITE_B", fields=server.link_fields())
        yield server


def _shell(console: Console, code: str, **args: Any) -> Any:
    """Run ``code`` in ``manage.py shell`` against the private console (ARGS: the arguments as
    a dict); returns the JSON of its last printed line."""
    out = console.manage(
        "shell",
        "--no-imports",
        "-c",
        f"import json\nARGS = json.loads({json.dumps(args)!r})\n{code}",
    )
    lines = out.strip().splitlines()
    return json.loads(lines[-1]) if lines else None


_LINK = """
from django.contrib.auth.models import User
from sites import services
services.database_link_create(user=User.objects.get(username="restarts"), name=ARGS["name"], **ARGS["fields"])
print("null")
"""

_BUILD = """
from django.contrib.auth.models import User
from jobs import services as js
from queues import services as qs
from queues.models import QueueTable
u = User.objects.get(username="restarts")
src = qs.queue_create(user=u, name=ARGS["source"], queue_table=QueueTable.objects.get(name="QT_RS_MC"))
out = {"queues": {src.name: src.pk}, "props": {}}
for name, dest, params in ARGS["remote"]:
    out["props"][name] = js.propagation_create(
        user=u, name=name, source_queue=src, destination_queue=dest, **params).pk
for name, qname in ARGS["local"]:
    q = qs.queue_create(user=u, name=qname, queue_table=QueueTable.objects.get(name="QT_RS_SC"))
    out["queues"][qname] = q.pk
    out["props"][name] = js.propagation_create(
        user=u, name=name, source_queue=src, destination_queue=q).pk
print(json.dumps(out))
"""

_DROP = """
from django.contrib.auth.models import User
from jobs import services as js
from jobs.models import Propagation
u = User.objects.get(username="restarts")
for p in Propagation.objects.filter(pk__in=ARGS["props"]):
    js.propagation_delete(user=u, propagation=p)
print("null")
"""


@pytest.fixture
def build(console: Console) -> Iterator[Callable[..., dict[str, int]]]:
    """``build(source, remote=[(name, "QUEUE@LINK", schedule params)], local=[(name, queue)])``:
    a source queue in the multi-consumer table and its propagations, made by the services;
    returns the propagations' ids by name. They are dropped after the test (the console goes on
    serving the other restart tests, which must not meet a failing schedule)."""
    made: list[int] = []

    def make(
        source: str,
        remote: list[tuple[str, str, dict[str, Any]]],
        local: list[tuple[str, str]] | None = None,
    ) -> dict[str, int]:
        out = _shell(console, _BUILD, source=source, remote=remote, local=local or [])
        console.ids["queues"].update(out["queues"])
        made.extend(out["props"].values())
        return out["props"]

    yield make
    if made:
        _shell(console, _DROP, props=made)


class SourceProducer(Producer):
    """The harness's producer, into one queue of this module: ``per_batch`` messages every
    ``interval`` seconds; an enqueue refused while the console's PostgreSQL is down is settled
    (committed or sent again) once it answers."""

    def __init__(self, console: Console, tag: str, queue: str, per_batch: int = 8) -> None:
        self.BATCH = {queue: per_batch}
        super().__init__(console, tag, interval=0.1)


def _failed_runs(console: Console, prop: int, text: str) -> int:
    return console.query(
        "SELECT count(*) FROM jobs_propagationrun WHERE propagation_id = %s AND state = 'FAILED' "
        "AND error LIKE %s",
        (prop, f"%{text}%"),
    )[0][0]


def _schedule(console: Console, prop: int) -> tuple[bool, int, str]:
    return console.query(
        "SELECT enabled, failures, coalesce(last_error_msg, '') FROM jobs_propagationschedule "
        "WHERE propagation_id = %s",
        (prop,),
    )[0]


def _exactly_once(where: str, got: Counter, n: int) -> None:
    dupes = {s: c for s, c in got.items() if c != 1}
    missing = sorted(set(range(n)) - set(got))
    extra = set(got) - set(range(n))
    assert not (dupes or missing or extra), (
        f"{where}: {sum(got.values())} copies of {n}; duplicated {dupes}, "
        f"lost {missing[:20]} ({len(missing)}), unknown {extra}"
    )


def _all_delivered(
    console: Console, source: str, tag: str, n: int, at: dict[str, Callable[[], Counter]]
) -> None:
    """Wait until every destination holds ``n`` messages of ``tag`` and the source none; then
    each seq exactly once at each destination."""
    done = wait_until(
        lambda: (
            all(sum(f().values()) >= n for f in at.values())
            and not console.seqs_at(source, tag, LEFT)
        ),
        120,
        0.25,
    )
    counts = {k: sum(f().values()) for k, f in at.items()}
    left = sum(console.seqs_at(source, tag, LEFT).values())
    assert done, f"{counts} of {n} arrived, {left} left at {source}\n{console.logs()}"
    for where, f in at.items():
        _exactly_once(where, f(), n)


BURST = 200  # each round's backlog: eight batches of 25 (the folder's AQ_PROPAGATION_BATCH)


def _stop_in_a_backlog(
    console: Console,
    source: str,
    tag: str,
    at: Callable[[], Counter],
    burst: range,
    stop: Callable[[], None],
) -> int:
    """Enqueue ``burst`` (one request per 100), wait for the first of them at the destination,
    so the worker is moving the rest in batches, and call ``stop`` then. Returns how many of the
    burst were still waiting at the source just before the stop."""
    console.enqueue(source, tag, burst)
    assert wait_until(lambda: any(s in burst for s in at()), 60, 0.01), (
        f"nothing of the backlog arrived\n{console.logs()}"
    )
    waiting = sum(console.seqs_at(source, tag).values())
    stop()
    return waiting


def test_a_remote_server_stopped_mid_batch_loses_and_doubles_nothing(
    console: Console, site_b: SiteServer, build: Callable[..., dict[str, int]]
) -> None:
    """Three stops of the destination's server (fast, immediate, fast), each while the worker
    moves a backlog of 200 in batches of 25: each stop fails the run that was sending (the link
    named), and the next run sends the rolled-back batch again."""
    props = build("RA_SRC", remote=[("RA_B", "REMOTE_IN@SITE_B", {})])
    tag = f"ra-{uuid.uuid4().hex[:6]}"
    at_b = lambda: remote_seqs(site_b, "REMOTE_IN", tag)  # noqa: E731
    waiting = []
    for i, mode in enumerate(("fast", "immediate", "fast")):
        failed = _failed_runs(console, props["RA_B"], "Database link SITE_B")
        burst = range(i * BURST, (i + 1) * BURST)
        waiting.append(
            _stop_in_a_backlog(
                console,
                "RA_SRC",
                tag,
                at_b,
                burst,
                lambda: site_b.pg.stop(mode),  # noqa: B023
            )
        )
        try:
            # The stop met the propagation's run: it failed naming the link.
            assert wait_until(
                lambda: _failed_runs(console, props["RA_B"], "Database link SITE_B") > failed,  # noqa: B023
                30,
            ), f"the {mode} stop failed no run\n{console.logs()}"
            time.sleep(DOWN_S)
        finally:
            site_b.pg.start()
    print(f"\nremote stops: still at the source just before each stop: {waiting}")
    assert sum(waiting) > 0, "every backlog was gone before its stop: no batch was in flight"
    _all_delivered(console, "RA_SRC", tag, 3 * BURST, {"REMOTE_IN@SITE_B": at_b})


def test_the_local_server_stopped_mid_batch_loses_and_doubles_nothing(
    console: Console, site_b: SiteServer, build: Callable[..., dict[str, int]]
) -> None:
    """Three stops of the console's own PostgreSQL (fast, immediate, fast), each while the
    worker moves a backlog of 200 to SITE_B in batches of 25: a batch committed at the remote
    but not here comes back to the source with the same ids and meets its receipts there."""
    build("RB_SRC", remote=[("RB_B", "REMOTE_IN@SITE_B", {})])
    tag = f"rb-{uuid.uuid4().hex[:6]}"
    at_b = lambda: remote_seqs(site_b, "REMOTE_IN", tag)  # noqa: E731
    waiting = []
    for i, mode in enumerate(("fast", "immediate", "fast")):
        burst = range(i * BURST, (i + 1) * BURST)
        waiting.append(
            _stop_in_a_backlog(
                console,
                "RB_SRC",
                tag,
                at_b,
                burst,
                lambda: console.pg.stop(mode),  # noqa: B023
            )
        )
        time.sleep(DOWN_S)
        console.pg.start()
        assert wait_until(console.web_answers, 60), console.logs()
    print(f"\nlocal stops: still at the source just before each stop: {waiting}")
    assert sum(waiting) > 0, "every backlog was gone before its stop: no batch was in flight"
    _all_delivered(console, "RB_SRC", tag, 3 * BURST, {"REMOTE_IN@SITE_B": at_b})


def test_routing_to_two_sites_keeps_each_message_until_both_have_it(
    console: Console, site_b: SiteServer, site: SiteServer, build: Callable[..., dict[str, int]]
) -> None:
    """One source, two remote propagations (SITE_B here, SITE_C on the session's server). While
    SITE_B's server is down, SITE_C goes on receiving and the source keeps exactly the messages
    SITE_B has not taken; started again, SITE_B catches up. Each message once at each site."""
    remote_queues(site, "site_c", SITE_C)
    _shell(console, _LINK, name="SITE_C", fields=site.link_fields(database="site_c"))
    build(
        "RC_SRC",
        remote=[("RC_B", "REMOTE_IN@SITE_B", {}), ("RC_C", "REMOTE_IN@SITE_C", {})],
    )
    tag = f"rc-{uuid.uuid4().hex[:6]}"
    at_b = lambda: remote_seqs(site_b, "REMOTE_IN", tag)  # noqa: E731
    at_c = lambda: remote_seqs(site, "REMOTE_IN", tag, "site_c")  # noqa: E731
    with SourceProducer(console, tag, "RC_SRC") as producer:
        assert wait_until(lambda: sum(at_b().values()) >= 40 and sum(at_c().values()) >= 40, 60)
        had_b = set(at_b())  # a batch or two more may land before the stop
        site_b.pg.stop("immediate")
        try:
            after_stop = producer.sent["RC_SRC"]  # from here on nothing can reach SITE_B
            # SITE_C keeps receiving while SITE_B is away.
            c_then = sum(at_c().values())
            assert wait_until(lambda: sum(at_c().values()) >= c_then + 100, 60), console.logs()
            producer.stop()
            n = producer.sent["RC_SRC"]
            assert wait_until(lambda: sum(at_c().values()) >= n, 60), console.logs()
            _exactly_once("REMOTE_IN@SITE_C while SITE_B was down", at_c(), n)
            # The source keeps what SITE_B has not taken (all sent since the stop, nothing it
            # had), for SITE_B's propagation only.
            held = set(console.seqs_at("RC_SRC", tag, LEFT))
            assert set(range(after_stop, n)) <= held and not (held & had_b), (
                f"{len(held)} held; since the stop {after_stop}..{n}; {len(held & had_b)} "
                "that SITE_B had"
            )
        finally:
            site_b.pg.start()
    _all_delivered(console, "RC_SRC", tag, n, {"REMOTE_IN@SITE_B": at_b, "REMOTE_IN@SITE_C": at_c})


def test_a_site_down_longer_than_the_back_off_disables_its_schedule_and_reset_delivers(
    console: Console, site_b: SiteServer, build: Callable[..., dict[str, int]]
) -> None:
    """SITE_B's server stays down: each run fails naming the link, the schedule retries after
    its back-off and disables itself at max_failures (3 here; 16 by default) while the local
    propagation of the same source goes on. Started again, the site gets nothing until RESET;
    then every message arrives once."""
    props = build(
        "RD_SRC",
        remote=[("RD_B", "REMOTE_IN@SITE_B", {"max_failures": 3})],
        local=[("RD_L", "RD_LOCAL")],
    )
    tag = f"rd-{uuid.uuid4().hex[:6]}"
    at_b = lambda: remote_seqs(site_b, "REMOTE_IN", tag)  # noqa: E731
    at_local = lambda: console.seqs_at("RD_LOCAL", tag, ALL_STATES)  # noqa: E731
    console.enqueue("RD_SRC", tag, range(0, 30))
    assert wait_until(lambda: sum(at_b().values()) == 30, 60), console.logs()

    site_b.pg.stop("fast")
    try:
        console.enqueue("RD_SRC", tag, range(30, 90))
        disabled = wait_until(lambda: not _schedule(console, props["RD_B"])[0], 90, 0.2)
        enabled, failures, error = _schedule(console, props["RD_B"])
        assert disabled and failures == 3, (enabled, failures, error, console.logs())
        assert "Database link SITE_B" in error, error
        assert _failed_runs(console, props["RD_B"], "Database link SITE_B") >= 3
        # The local propagation was never held up; the source keeps the 60 for SITE_B.
        assert wait_until(lambda: sum(at_local().values()) == 90, 60), console.logs()
        assert sum(console.seqs_at("RD_SRC", tag, LEFT).values()) == 60
    finally:
        site_b.pg.start()
    time.sleep(2)  # back, but the schedule stays disabled until RESET
    assert sum(at_b().values()) == 30 and not _schedule(console, props["RD_B"])[0]

    status, body = console.api("POST", f"/api/propagations/{props['RD_B']}/reset/")
    assert status == 200, body
    _all_delivered(console, "RD_SRC", tag, 90, {"REMOTE_IN@SITE_B": at_b, "RD_LOCAL": at_local})
    assert _schedule(console, props["RD_B"])[:2] == (True, 0)


def test_a_site_that_hangs_mid_batch_holds_up_no_local_propagation(
    console: Console, site_b: SiteServer, build: Callable[..., dict[str, int]]
) -> None:
    """SITE_B answers but hangs: a session there holds its receipts table (ACCESS EXCLUSIVE), so
    the remote run blocks inside its batch (source rows dequeued, not committed) after its
    connection and sweep went through. Its source rows would hold up the local propagation of
    the same source for as long as the site hangs; the remote statement timeout
    (AQ_SITE_STATEMENT_TIMEOUT_S, 2 s in this folder) fails the batch instead, so the local
    propagation takes every message. Released, SITE_B gets each message once."""
    props = build("RE_SRC", remote=[("RE_B", "REMOTE_IN@SITE_B", {})], local=[("RE_L", "RE_LOCAL")])
    tag = f"re-{uuid.uuid4().hex[:6]}"
    at_b = lambda: remote_seqs(site_b, "REMOTE_IN", tag)  # noqa: E731
    at_local = lambda: console.seqs_at("RE_LOCAL", tag, ALL_STATES)  # noqa: E731
    # The remote run is connected and idle (its sweep ran at its first batch).
    console.enqueue("RE_SRC", tag, range(0, 10))
    assert wait_until(lambda: sum(at_b().values()) == 10 == sum(at_local().values()), 60)
    with site_b.admin("site_b") as lock:
        lock.autocommit = False
        lock.execute("LOCK TABLE aq_propagation_receipt IN ACCESS EXCLUSIVE MODE")
        try:
            console.enqueue("RE_SRC", tag, range(10, 70))

            def blocked() -> bool:
                with site_b.admin("site_b") as conn:
                    return (
                        conn.execute(
                            "SELECT count(*) FROM pg_stat_activity WHERE datname = 'site_b' "
                            "AND wait_event_type = 'Lock'"
                        ).fetchone()[0]
                        > 0
                    )

            assert wait_until(blocked, 30), "no batch of the remote run is waiting at SITE_B"
            assert wait_until(lambda: sum(at_local().values()) == 70, 60), (
                f"the local propagation took {sum(at_local().values())} of 70 while SITE_B "
                f"hung\n{console.logs()}"
            )
            # The remote batches time out and roll back: their messages wait at the source.
            assert sum(console.seqs_at("RE_SRC", tag, LEFT).values()) == 60
            # The run records its failure after its batch rolled back, which is what let the
            # local propagation finish: it may land a moment after the checks above.
            assert wait_until(
                lambda: _failed_runs(console, props["RE_B"], "statement timeout") >= 1, 30
            ), f"no run of RE_B failed on the statement timeout\n{console.logs()}"
        finally:
            lock.rollback()
    _all_delivered(console, "RE_SRC", tag, 70, {"REMOTE_IN@SITE_B": at_b, "RE_LOCAL": at_local})
