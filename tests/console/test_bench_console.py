"""``manage.py bench console`` at a tiny scale: every figure present, nothing left behind, and
the pages' query counts independent of the number of queues (no timing assertions)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from console.bench.console import sizes_for, urls
from core.models import ChangeLogEntry
from jobs.models import Propagation
from queues.models import Queue, QueueTable, QueueTableOwnerMove, Subscriber
from rules.models import RuleSet

PAGE_KEYS = {"url", "median_ms", "p95_ms", "queries", "bytes"}


def run_bench(scale: float) -> dict:
    out, err = StringIO(), StringIO()
    call_command("bench", "console", "--json", "--scale", str(scale), stdout=out, stderr=err)
    return json.loads(out.getvalue().strip().splitlines()[-1])


@pytest.mark.django_db
def test_console_suite_prints_every_page_and_leaves_no_row_behind() -> None:
    users_before = get_user_model().objects.count()
    log_before = ChangeLogEntry.objects.count()

    result = run_bench(0.002)

    prefix = result["prefix"]
    assert result["queues"] == sizes_for(0.002)["queues"] == 20
    assert result["queue_tables"] == 1
    assert result["propagations"] > 0 and result["subscribers"] > 0 and result["rule_sets"] > 0
    made = {"queues": [1], "tables": [1]}  # only the keys matter here
    assert set(result["pages"]) == set(urls(prefix, made))
    for key, page in result["pages"].items():
        assert set(page) == PAGE_KEYS, key
        assert page["queries"] > 0 and page["bytes"] > 0, key
        assert 0 < page["median_ms"] <= page["p95_ms"], key
    assert result["left_behind"] == 0
    for model in (QueueTable, Queue, Subscriber, Propagation, RuleSet):
        assert not model.objects.filter(name__startswith=prefix).exists(), model.__name__
    assert not QueueTableOwnerMove.objects.filter(queue_table_name__startswith=prefix).exists()
    assert get_user_model().objects.count() == users_before
    assert ChangeLogEntry.objects.count() == log_before


@pytest.mark.django_db
def test_queue_pages_cost_the_same_queries_at_20_and_at_60_queues() -> None:
    small = run_bench(0.002)["pages"]
    large = run_bench(0.006)["pages"]

    assert {k: p["queries"] for k, p in large.items()} == {
        k: p["queries"] for k, p in small.items()
    }
    # The list pages show more rows at 60 queues than at 20, for the same queries.
    assert large["queue_list"]["bytes"] > small["queue_list"]["bytes"]
