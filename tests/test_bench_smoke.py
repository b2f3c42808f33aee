"""``manage.py bench``: the queues suite runs end to end at a tiny scale (no timing assertions).

The benchmark's clients are separate connections and processes that must see committed data, so
these tests run outside a wrapping transaction.
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from console.bench.queues import FULL_SIZES, PAYLOAD_JSON, sizes_for
from queues.models import QueueTable

SCALE = 0.002
# The clients are other connections and processes, so data must really commit. The serialized
# rollback keeps the flush after each test from re-creating content types that the next
# serialized-rollback test (tests/queues) restores itself.
LIVE = pytest.mark.django_db(transaction=True)


def run_bench(*args: str) -> tuple[dict, str]:
    out, err = StringIO(), StringIO()
    call_command("bench", *args, stdout=out, stderr=err)
    lines = out.getvalue().strip().splitlines()
    return json.loads(lines[-1]), err.getvalue()


@LIVE
def test_queues_suite_prints_every_key_and_loses_no_message() -> None:
    result, progress = run_bench("queues", "--json", "--scale", str(SCALE))

    sizes = sizes_for(SCALE)
    for key in FULL_SIZES:
        assert result[key] > 0, key
        assert result[f"{key}_n"] == sizes[key], key
    assert result["dequeue_4_consumers_total"] == sizes["dequeue_4_consumers"]
    assert result["dequeue_4_consumers_duplicates"] == 0
    assert result["dequeue_4_consumers_left"] == 0
    assert result["pg_fsync"] in {"on", "off"}
    assert "enqueue_single_per_txn" in progress


@LIVE
def test_queues_suite_removes_its_topology() -> None:
    result, _ = run_bench("queues", "--json", "--scale", str(SCALE))

    assert not QueueTable.objects.filter(name__startswith=result["prefix"]).exists()


@LIVE
def test_baseline_adds_the_plain_table_figures() -> None:
    result, _ = run_bench("queues", "--json", "--scale", str(SCALE), "--baseline")

    for key in (
        "baseline_insert_single_per_txn",
        "baseline_copy_batch100",
        "baseline_delete_single",
        "baseline_delete_batch100",
    ):
        assert result[key] > 0, key


def test_payload_is_the_shared_241_bytes() -> None:
    assert len(PAYLOAD_JSON.encode()) == 241
    assert json.loads(PAYLOAD_JSON)["region"] == "EUROPE"


def test_full_scale_sizes_are_the_workloads() -> None:
    assert sizes_for(1.0) == {
        "enqueue_single_per_txn": 5_000,
        "enqueue_batch100": 100_000,
        "dequeue_single": 5_000,
        "dequeue_batch100": 50_000,
        "dequeue_4_consumers": 20_000,
    }


@pytest.mark.parametrize("suite, issue", [("propagation", "issue 4"), ("gateway", "issue 6")])
def test_a_suite_not_built_yet_names_the_issue_that_builds_it(suite: str, issue: str) -> None:
    with pytest.raises(CommandError, match=issue):
        call_command("bench", suite, "--json")


def test_an_unknown_suite_is_refused() -> None:
    with pytest.raises(CommandError, match="Unknown suite 'nope'"):
        call_command("bench", "nope")


def test_the_rules_suite_prints_every_python_key_from_real_evaluations(capsys) -> None:
    call_command("bench", "rules", "--json", "--scale", "0.01")
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    for key in ("eval_simple", "eval_message_rule", "ruleset_50"):
        assert result[key] > 0
    # Half of the row LCRs are for the rule's table, so exactly half evaluate TRUE.
    assert result["eval_simple_true"] == result["n"] // 2
    assert 0 < result["ruleset_50_performed"] < result["n"]
