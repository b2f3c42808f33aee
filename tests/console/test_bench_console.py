"""``manage.py bench console`` at a tiny scale, through the real WSGI stack: every key of
WORKLOADS.md present, nothing left behind, and the pages' query counts independent of the size of
the topology and of the queue list's page size (no timing assertions)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.core.management import call_command

from console.bench import console as console_bench
from console.bench.console import EXTRA_KEYS, KEYS, sizes_for, urls
from core.models import ChangeLogEntry
from gateway.models import Agent, ForeignQueue, Job, Link
from jobs.models import Propagation
from queues.models import Queue, QueueTable, QueueTableOwnerMove, Subscriber
from rules.models import RuleSet

# The served requests run on the server's own connection: the suite's rows must be committed.
LIVE = pytest.mark.django_db(transaction=True)

PAGE_KEYS = {"url", "requests", "median_ms", "p95_ms", "queries", "bytes"}
WORKLOAD_KEYS = {*KEYS, *EXTRA_KEYS, "queries_per_list_page"}


def run_bench(scale: float) -> dict:
    out, err = StringIO(), StringIO()
    call_command("bench", "console", "--json", "--scale", str(scale), stdout=out, stderr=err)
    return json.loads(out.getvalue().strip().splitlines()[-1])


@LIVE
def test_console_suite_prints_every_key_and_leaves_no_row_behind() -> None:
    users_before = get_user_model().objects.count()
    log_before = ChangeLogEntry.objects.count()
    sessions_before = Session.objects.count()

    result = run_bench(0.002)

    prefix = result["prefix"]
    assert sizes_for(0.002) == {
        "queues": 20,
        "queue_tables": 2,
        "propagations": 4,
        "gateway_jobs": 2,
    }
    assert (result["queues"], result["queue_tables"]) == (20, 2)
    assert (result["propagations"], result["gateway_jobs"], result["foreign_queues"]) == (4, 2, 2)
    assert result["subscribers"] > 0 and result["rule_sets"] > 0 and result["links"] == 2
    for key in WORKLOAD_KEYS:
        assert isinstance(result[key], int | float) and result[key] > 0, key
    made = {"queues": [1], "tables": [1]}  # only the names matter here
    assert set(result["pages"]) == set(urls(prefix, made))
    for name, page in result["pages"].items():
        assert set(page) == PAGE_KEYS, name
        assert page["queries"] > 0 and page["bytes"] > 0, name
        assert 0 < page["median_ms"] <= page["p95_ms"], name
    keyed = {*KEYS.values(), *EXTRA_KEYS.values()}
    assert {p["requests"] for n, p in result["pages"].items() if n in keyed} == {50}
    assert result["targets"]["queries_per_list_page_constant"]["status"] == "PASS"
    assert set(result["targets"]) >= set(KEYS)

    assert result["left_behind"] == 0
    for model in (QueueTable, Queue, Subscriber, Propagation, RuleSet, Agent, Link, Job):
        assert not model.objects.filter(name__startswith=prefix).exists(), model.__name__
    assert not ForeignQueue.objects.filter(name__startswith=prefix).exists()
    assert not QueueTableOwnerMove.objects.filter(queue_table_name__startswith=prefix).exists()
    assert get_user_model().objects.count() == users_before
    assert ChangeLogEntry.objects.count() == log_before
    assert Session.objects.count() == sessions_before


def run_counting(scale: float) -> dict:
    """The suite's own run with two GETs a page: the query counts and sizes compared here are
    the same on every GET (one warm-up, then the counted ones), and 50 a page cost this test four
    of its five minutes. The test above runs the command as WORKLOADS.md defines it."""
    return console_bench.run(scale=scale, requests=2, extra_requests=2, log=lambda *_: None)


@LIVE
def test_pages_cost_the_same_queries_at_two_sizes_and_at_two_page_sizes() -> None:
    small = run_counting(0.002)
    large = run_counting(0.006)

    assert (large["queues"], large["propagations"], large["gateway_jobs"]) == (60, 12, 6)
    assert {k: p["queries"] for k, p in large["pages"].items()} == {
        k: p["queries"] for k, p in small["pages"].items()
    }
    # The queue list at 25 and at 100 rows a page: the same queries.
    for result in (small, large):
        assert result["queries_per_list_page_at_25"] == result["queries_per_list_page_at_100"]
        assert result["queries_per_list_page"] == result["queries_per_list_page_at_25"]
    # The lists show more rows in the larger topology, for the same queries.
    for name in ("queue_list_per_page_100", "job_list", "propagation_list", "topology_filtered"):
        assert large["pages"][name]["bytes"] > small["pages"][name]["bytes"], name
