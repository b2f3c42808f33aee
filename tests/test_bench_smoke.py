"""``manage.py bench``: the suites run end to end at a tiny scale (no timing assertions).

The benchmark's clients are separate connections and processes that must see committed data, so
these tests run outside a wrapping transaction.
"""

from __future__ import annotations

import json
import math
from io import StringIO

import psycopg
import pytest
from django.core.management import CommandError, call_command

from console.bench import peers, targets
from console.bench.propagation import sizes_for as propagation_sizes
from console.bench.queues import (
    BUFFERED_KEYS,
    FULL_SIZES,
    PAYLOAD_JSON,
    buffered_supported,
    sizes_for,
)
from console.bench.workload import Timing, interleaved
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
    measured = [k for k in FULL_SIZES if buffered_supported() or k not in BUFFERED_KEYS]
    for key in measured:
        assert result[key] > 0, key
        assert result[f"{key}_n"] == sizes[key], key
    assert result["dequeue_4_consumers_total"] == sizes["dequeue_4_consumers"]
    assert result["dequeue_4_consumers_duplicates"] == 0
    assert result["dequeue_4_consumers_left"] == 0
    assert result["pg_fsync"] in {"on", "off"}
    assert set(result["server"]) >= {
        "fsync",
        "synchronous_commit",
        "autovacuum",
        "shared_buffers",
        "wal_level",
    }
    assert result["server"]["fsync"] == result["pg_fsync"]
    assert "enqueue_single_per_txn" in progress
    assert result["targets"]["dequeue_4_consumers_exact"]["status"] == "PASS"


@LIVE
def test_buffered_keys_are_measured_or_left_out_with_the_reason_never_invented() -> None:
    result, progress = run_bench("queues", "--json", "--scale", str(SCALE))

    if buffered_supported():
        for key in BUFFERED_KEYS:
            assert result[key] > 0 and result[f"{key}_n"] == sizes_for(SCALE)[key], key
    else:
        assert not any(k.startswith(BUFFERED_KEYS) for k in result)
        assert "buffered messages are not built yet" in progress
        t = result["targets"]["enqueue_single_buffered_vs_persistent"]
        assert t["status"] == "NOT RUN" and "delivery_mode" in t["reason"]


@LIVE
def test_queues_suite_removes_its_topology() -> None:
    result, _ = run_bench("queues", "--json", "--scale", str(SCALE))

    assert not QueueTable.objects.filter(name__startswith=result["prefix"]).exists()


@LIVE
def test_baseline_adds_the_plain_table_figures() -> None:
    result, _ = run_bench("queues", "--json", "--scale", str(SCALE), "--baseline")

    sizes = sizes_for(SCALE)
    for key, size in (
        ("baseline_insert_single_per_txn", sizes["enqueue_single_per_txn"]),
        ("baseline_copy_batch100", sizes["enqueue_batch100"]),
        ("baseline_delete_single", sizes["dequeue_single"]),
        ("baseline_delete_batch100", sizes["dequeue_batch100"]),
        # The suite gives this figure only if each row went to exactly one of the four.
        ("baseline_delete_4_consumers", sizes["dequeue_4_consumers"]),
        ("baseline_unlogged_insert_single_per_txn", sizes["enqueue_single_buffered"]),
        ("baseline_unlogged_delete_single", sizes["dequeue_single_buffered"]),
    ):
        assert result[key] > 0, key
        assert result[f"{key}_n"] == size, key
    assert result["targets"]["enqueue_batch100_vs_plain"]["status"] in {"PASS", "FAIL"}
    assert result["targets"]["enqueue_batch100_vs_plain"]["required"] == pytest.approx(
        0.6 * result["baseline_copy_batch100"], abs=0.1
    )


@LIVE
def test_repeat_and_history_report_each_run_the_medians_and_the_history_target() -> None:
    from django.db import connection

    result, progress = run_bench(
        "queues", "--json", "--scale", "0.01", "--repeat", "3", "--history", "0.006",
        "--settle", "1",
    )  # fmt: skip

    runs = result["runs"]
    assert len(runs) == 3
    for key in ("enqueue_single_per_txn", "dequeue_batch100", "dequeue_4_consumers"):
        values = sorted(r[key] for r in runs)
        assert result[key] == values[1], key
        assert result["spread"][key]["min"] == values[0]
        assert result["spread"][key]["max"] == values[2]
        t = result["targets"][f"{key}_history"]
        assert t["compared"]["first_run"] == runs[0][key]
        assert t["status"] == (
            "PASS" if min(values_after(runs, key)) >= 0.9 * runs[0][key] else "FAIL"
        )
    for r in runs:
        assert r["dequeue_4_consumers_total"] == sizes_for(0.01)["dequeue_4_consumers"]
    # 6,000 messages went through the queues between run 1 and run 2, and were all consumed.
    assert result["history"]["messages"] == 6_000
    assert result["history"]["loaded_before_run"] == 2
    assert [s["seconds"] for s in result["settle"]] == [1.0, 1.0]
    assert all(s["monitor_passes"] >= 1 for s in result["settle"])
    assert "run 3 of 3" in progress and "history 6,000 messages" in progress
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM queues_queue WHERE name LIKE %s", [result["prefix"] + "%"]
        )
        assert cur.fetchone()[0] == 0


def test_interleaved_sides_take_turns_in_whole_steps_and_the_first_turn_moves() -> None:
    calls: list[tuple[str, int]] = []

    def side(name: str):
        def work(k: int) -> Timing:
            calls.append((name, k))
            return Timing(k, 0.5)

        return name, work

    timings = interleaved([side("a"), side("b"), side("c")], 1_000, rounds=4, step=100)

    # 10 batches in 4 rounds: 300, 300, 200, 200; each round every side once, the first turn
    # moving on (a, b, c / b, c, a / c, a, b / a, b, c).
    assert calls == [
        ("a", 300), ("b", 300), ("c", 300),
        ("b", 300), ("c", 300), ("a", 300),
        ("c", 200), ("a", 200), ("b", 200),
        ("a", 200), ("b", 200), ("c", 200),
    ]  # fmt: skip
    assert timings == {k: Timing(1_000, 2.0) for k in "abc"}
    # One round is the sequential protocol: each side's whole workload in turn.
    calls.clear()
    interleaved([side("a"), side("b")], 7, rounds=1)
    assert calls == [("a", 7), ("b", 7)]
    # More rounds than steps: one step a round.
    calls.clear()
    interleaved([side("a")], 200, rounds=10, step=100)
    assert calls == [("a", 100), ("a", 100)]


def values_after(runs: list[dict], key: str) -> list[float]:
    return [r[key] for r in runs[1:]]


@LIVE
def test_peers_run_in_the_same_command_beside_each_engine_workload() -> None:
    """PGMQ and PgQ on this server (scripts/install-bench-peers.sh); CI does not install them."""
    from queues.services import conninfo

    try:
        installed = peers.check_installed(conninfo())
    except peers.PeerMissing as exc:
        pytest.skip(f"{exc}")

    result, progress = run_bench("queues", "--json", "--scale", "0.01", "--peers", "--baseline")

    sizes = sizes_for(0.01)
    assert result["pgmq_source"] == installed["pgmq_source"]
    assert result["pgq_version"] == installed["pgq_version"]
    for key in peers.PGMQ_WORKLOADS:
        assert result[f"pgmq_{key}"] > 0, key
        assert result[f"pgmq_{key}_n"] == sizes[key], key
        assert result[f"ratio_pgmq_{key}"] == pytest.approx(
            result[key] / result[f"pgmq_{key}"], abs=1e-3
        )
        assert result["targets"][f"{key}_not_below_pgmq"]["status"] in {"PASS", "FAIL"}
        assert result["targets"][f"{key}_ahead"]["status"] in {"PASS", "FAIL"}
    for key in ("enqueue_single_per_txn", "enqueue_batch100"):
        assert result[f"pgq_{key}"] > 0
        assert result[f"ratio_pgq_{key}"] == pytest.approx(
            result[key] / result[f"pgq_{key}"], abs=1e-3
        )
    assert result["pgq_dequeue_batch_read_n"] == sizes["enqueue_batch100"]
    assert result["protocol"] == "interleaved, 10 rounds"
    # Interleaved: each peer's figure comes right after the engine's own.
    lines = [line.split()[0] for line in progress.splitlines() if line.startswith("  ")]
    assert lines.index("pgmq_dequeue_single") == lines.index("dequeue_single") + 1
    # The peers' queues are gone from their databases.
    prefix = result["prefix"].lower()
    with psycopg.connect(peers.peer_conninfo(conninfo(), peers.PGMQ_DB)) as conn:
        left = conn.execute(
            "SELECT count(*) FROM pgmq.meta WHERE queue_name LIKE %s", (prefix + "%",)
        ).fetchone()
        assert left == (0,)
    with psycopg.connect(peers.peer_conninfo(conninfo(), peers.PGQ_DB)) as conn:
        left = conn.execute(
            "SELECT count(*) FROM pgq.queue WHERE queue_name LIKE %s", (prefix + "%",)
        ).fetchone()
        assert left == (0,)


@LIVE
def test_peers_missing_is_refused_before_anything_runs_naming_the_install_script(
    monkeypatch,
) -> None:
    monkeypatch.setattr(peers, "PGMQ_DB", "aq_no_such_pgmq_peer")
    before = QueueTable.objects.count()

    with pytest.raises(CommandError, match=r"aq_no_such_pgmq_peer.*install-bench-peers\.sh"):
        run_bench("queues", "--json", "--scale", str(SCALE), "--peers")

    assert QueueTable.objects.count() == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["queues", "--history", "1"], "--history needs --repeat 2 or more"),
        (["queues", "--repeat", "0"], "--repeat must be 1 or more"),
        (["queues", "--rounds", "0"], "--rounds must be 1 or more"),
        (["rules", "--peers"], "--peers: only the queues suite takes these options"),
        (["rules", "--repeat", "2"], "--repeat: only the queues suite takes these options"),
    ],
)
def test_bad_queues_options_are_refused_with_the_option_named(args, message) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("bench", *args, "--json", stderr=StringIO(), stdout=StringIO())


def test_targets_hold_single_workloads_to_the_plain_table_where_1_5x_pgmq_is_above_it() -> None:
    result = {
        "enqueue_single_per_txn": 1_000.0,
        "pgmq_enqueue_single_per_txn": 2_000.0,
        "baseline_insert_single_per_txn": 2_500.0,
        "enqueue_batch100": 20_000.0,
        "pgmq_enqueue_batch100": 10_000.0,
        "baseline_copy_batch100": 60_000.0,
    }

    got = targets.check(result)

    single = got["enqueue_single_per_txn_ahead"]
    assert single["status"] == "FAIL"
    assert single["rule"] == "90% of the plain table"
    assert single["required"] == 2_250.0
    batch = got["enqueue_batch100_ahead"]
    assert (batch["status"], batch["rule"], batch["required"]) == ("PASS", "1.5x PGMQ", 15_000.0)
    assert got["enqueue_batch100_vs_plain"]["status"] == "FAIL"  # 20,000 < 60% of 60,000
    assert got["enqueue_batch100_not_below_pgq"] == {
        "status": "NOT RUN",
        "target": "enqueue_batch100 not below PgQ",
        "reason": "needs --peers",
    }
    assert got["dequeue_single_ahead"]["reason"] == "needs --peers and --baseline"


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
        "enqueue_single_buffered": 5_000,
        "dequeue_single_buffered": 5_000,
    }


def test_a_suite_not_built_yet_names_the_issue_that_builds_it(monkeypatch) -> None:
    from console.bench import PENDING

    # Every suite of WORKLOADS.md is built now (console by issue 16): register a future one.
    monkeypatch.setitem(PENDING, "future", "issue 99 builds it")
    with pytest.raises(CommandError, match="not built yet: issue 99 builds it"):
        call_command("bench", "future", "--json")


def test_the_console_suite_is_registered() -> None:
    from console.bench import PENDING, SUITES, suite_runner

    assert "console" in SUITES and "console" not in PENDING
    assert callable(suite_runner("console"))


def test_the_gateway_suite_is_registered() -> None:
    from console.bench import PENDING, SUITES, suite_runner

    assert "gateway" in SUITES and "gateway" not in PENDING
    assert callable(suite_runner("gateway"))


@LIVE
@pytest.mark.celery
def test_the_gateway_suite_moves_every_message_through_a_real_agent_and_cleans_up() -> None:
    """Every workload at a tiny scale through a real worker, agent and the four loopback
    brokers; the suite itself fails unless each side holds exactly the messages sent."""
    from console.bench.gateway import WORKLOADS, size_for
    from gateway.models import Agent, ForeignQueue, Job, Link

    result, progress = run_bench("gateway", "--json", "--scale", str(SCALE))

    assert result["n"] == size_for(SCALE) == 40
    assert result["batch_size"] == 30
    assert "pending" not in result
    for key, (limit, _link_type) in WORKLOADS.items():
        assert result[key] > 0, key
        assert result[limit] > 0, limit
        assert result[f"{key}_ratio"] == pytest.approx(result[key] / result[limit], abs=1e-3)
        assert len(result[f"{key}_load"]) == 3
        assert key in progress
    assert set(result["targets_met"]) == set(WORKLOADS)
    prefix = result["prefix"]
    assert not Agent.objects.filter(name=prefix).exists()
    assert not Link.objects.filter(name__startswith=prefix).exists()
    assert not ForeignQueue.objects.filter(name__startswith=prefix).exists()
    assert not Job.objects.filter(name__startswith=prefix).exists()
    assert not QueueTable.objects.filter(name__startswith=prefix).exists()


def test_the_gateway_suite_size_is_the_workload() -> None:
    from console.bench.gateway import size_for

    assert size_for(1.0) == 20_000
    assert size_for(0.00001) == 10


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


@LIVE
@pytest.mark.spark
def test_the_propagation_suite_moves_every_message_through_a_real_worker_and_cleans_up() -> None:
    from instances.services import instance_heartbeat
    from jobs.models import Propagation, SparkJob, Worker
    from rules.models import RuleSet

    # Another instance is up on this database (a console's worker under another name): the
    # suite's queue tables must still be owned by the instance of the worker it measures.
    instance_heartbeat(name="bench-smoke-other-node", host="elsewhere", worker="w1@elsewhere")
    # spark_bulk runs a real Spark job (local[*]) through the worker: 2,000 messages here.
    result, progress = run_bench("propagation", "--json", "--scale", str(SCALE))

    sizes = propagation_sizes(SCALE)
    n = sizes["celery_window"]
    assert result["celery_window_n"] == n
    assert result["celery_window"] > 0
    # The rule passes exactly half, to each destination, once (the suite checks ids too).
    assert result["celery_window_delivered_d1"] == result["celery_window_delivered_d2"] == n // 2
    assert result["celery_window_runs"] >= 2
    assert result["latency_n"] == sizes["latency"]
    assert 0 < result["latency_p50_ms"] <= result["latency_p99_ms"] <= result["latency_max_ms"]
    assert "pending" not in result
    # The same two workloads with a destination at a second, migrated database of the same
    # server (issue 14): each message once at the local and the remote destination.
    assert result["remote_window_n"] == n and result["remote_window"] > 0
    assert result["remote_window_delivered_d1"] == result["remote_window_delivered_d2"] == n // 2
    assert result["remote_window_vs_celery_window"] == pytest.approx(
        result["remote_window"] / result["celery_window"], abs=1e-3
    )
    assert result["remote_latency_n"] == sizes["latency"]
    assert (
        0
        < result["remote_latency_p50_ms"]
        <= result["remote_latency_p99_ms"]
        <= result["remote_latency_max_ms"]
    )
    # The bulk workloads move the same rows: N/2 to each destination (the suite checks ids,
    # the rule and the consumed source copies too).
    bulk = sizes["spark_bulk"]
    assert bulk <= 5_000
    assert result["sql_limit_n"] == result["spark_bulk_n"] == bulk
    assert result["sql_limit_rows"] == bulk
    assert result["spark_bulk_delivered_d1"] == result["spark_bulk_delivered_d2"] == bulk // 2
    assert result["spark_bulk_copy_delivered_d1"] == bulk // 2
    for key in (
        "sql_limit",
        "sql_limit_s",
        "spark_bulk",
        "spark_bulk_s",
        "spark_bulk_parts",
        "spark_bulk_vs_celery_window",
        "spark_bulk_vs_sql_limit_s",
        "spark_bulk_copy",
        "spark_bulk_copy_vs_sql_limit_s",
    ):
        assert result[key] > 0, key
    # Submit to the worker's claim: a broker hop and a claim take time, all inside the job's.
    startup = result["spark_bulk_startup_s"]
    assert isinstance(startup, float) and math.isfinite(startup), startup
    assert 0 < startup <= result["spark_bulk_s"]
    assert result["spark_bulk_driver_startup_s"] > 0
    assert result["spark_bulk_app_id"].startswith("local-")
    targets = result["targets"]
    assert targets["spark_bulk"] == pytest.approx(2 * result["celery_window"], rel=1e-3)
    assert targets["spark_bulk_s"] == pytest.approx(2 * result["sql_limit_s"], rel=1e-3)
    assert targets["remote_window"] == pytest.approx(0.7 * result["celery_window"], rel=1e-3)
    assert "remote_window" in progress and "remote_latency" in progress
    assert "celery_window" in progress and "spark_bulk" in progress
    prefix = result["prefix"]
    assert not QueueTable.objects.filter(name__startswith=prefix).exists()
    assert not Propagation.objects.filter(name__startswith=prefix).exists()
    assert not RuleSet.objects.filter(name__startswith=prefix).exists()
    assert not SparkJob.objects.filter(name__startswith=prefix).exists()
    assert not Worker.objects.filter(hostname__startswith=prefix.lower()).exists()
    # The remote site's database and the link to it are gone too.
    from queues.services import conninfo
    from sites.models import DatabaseLink

    assert not DatabaseLink.objects.filter(name__startswith=prefix).exists()
    with psycopg.connect(conninfo(), autocommit=True) as conn:
        left = conn.execute(
            "SELECT count(*) FROM pg_database WHERE datname LIKE %s", (f"%{prefix.lower()}",)
        ).fetchone()[0]
    assert left == 0


def test_the_propagation_sizes_are_the_workloads_and_stay_even() -> None:
    assert propagation_sizes(1.0) == {
        "celery_window": 100_000,
        "latency": 200,
        "spark_bulk": 1_000_000,
    }
    assert propagation_sizes(0.002) == {"celery_window": 200, "latency": 5, "spark_bulk": 2_000}
    assert propagation_sizes(0.00001)["celery_window"] % 2 == 0
    assert propagation_sizes(0.0000033)["spark_bulk"] % 2 == 0


@pytest.mark.django_db
def test_the_propagation_suite_refuses_to_run_in_maintenance_mode_with_a_clear_error() -> None:
    from jobs.services import maintenance_set

    maintenance_set(user=None, restricted=True, reason="upgrade")

    with pytest.raises(CommandError, match="Maintenance mode is on"):
        call_command("bench", "propagation", "--json", "--scale", str(SCALE), stderr=StringIO())


@LIVE
def test_parallel_suite_compares_a_logical_queue_with_one_queue_and_keeps_key_order() -> None:
    from console.bench.parallel import size_for
    from parallel.models import LogicalQueue

    result, progress = run_bench("parallel", "--json", "--scale", "0.004")

    n = size_for(0.004)
    for key in ("single_queue_throughput", "parallel_throughput", "parallel_ordered_throughput"):
        assert result[key] > 0 and result[f"{key}_n"] == n, key
    assert result["parallel_vs_single_ratio"] == pytest.approx(
        result["parallel_throughput"] / result["single_queue_throughput"], rel=0.01
    )
    assert result["parallel_order_violations"] == 0
    # failover_s: two real workers, SIGKILL of the owner's; every message once at the end.
    assert result["failover_s"] > 0 and result["failover_n"] == 3_000
    assert result["failover_heartbeat_limit_s"] == 5.0
    assert result["partitions"] == 3 and result["producers"] == result["consumers"] == 4
    assert "parallel_order_violations" in progress
    assert not LogicalQueue.objects.filter(name=result["prefix"]).exists()
    assert not QueueTable.objects.filter(name__startswith=result["prefix"]).exists()
