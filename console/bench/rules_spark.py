"""``spark_filter`` of the rules suite: the 50-rule positive set compiled to one Spark SQL Column
over 1,000,000 row change records in ``SPARK_MASTER`` (``local[*]`` by default).

Spark start-up is timed apart (``spark_startup_s``); the DataFrame is built and cached before the
clock starts, so ``spark_filter`` is rows evaluated per second by ``filter(rule_set).count()``.
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from rules import lang
from rules.lang import generators
from rules.lang.compile_spark import compile_spark, messages_to_rows, spark_schema

SOURCE = "DBS1.EXAMPLE.COM"


def spark_filter(*, scale: float, log: Callable[[str], None], tables: list[str]) -> dict[str, Any]:
    from django.conf import settings
    from pyspark.sql import SparkSession

    n = max(1000, int(1_000_000 * scale))
    conditions = [
        generators.table_rules(table_name=f"HR.{t}", source_database=SOURCE)[0].condition
        for t in tables
    ]
    rnd = random.Random(7)
    pool = [
        lang.RowLCR(
            SOURCE,
            "INSERT",
            "HR",
            rnd.choice(tables) if i % 2 == 0 else "OTHER",
            None if i % 3 else b"\x01",
            {},
            {"ID": i},
        )
        for i in range(2000)
    ]
    rows = messages_to_rows(pool)
    # The expected count, from the Python evaluator: the Spark figure must be a real filter.
    spec = lang.RuleSetSpec(
        [
            lang.compile_rule(f"P{i}", c, variables=lang.STREAMS_VARIABLES)
            for i, c in enumerate(conditions)
        ]
    )
    per_pool = sum(1 for m in pool if spec.true_rules(m, first=True))

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    t0 = time.perf_counter()
    spark = (
        SparkSession.builder.master(settings.SPARK_MASTER)
        .appName("aq-bench-rules")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    startup = time.perf_counter() - t0
    try:
        # Columns need a running session. The rule set is one OR tree, compiled once: the
        # compiler factors the shared conjuncts out and turns the 50 name tests into one IN list.
        column = compile_spark(
            lang.Or(tuple(lang.parse(c) for c in conditions)), variables=lang.STREAMS_VARIABLES
        )
        base = spark.createDataFrame(rows, schema=spark_schema())
        repeat = n // len(rows)
        df = base.crossJoin(spark.range(repeat).withColumnRenamed("id", "_r")).drop("_r")
        df = df.repartition(os.cpu_count() or 2).cache()
        total = df.count()  # materialise the cache before timing
        best = float("inf")
        matched = 0
        for _ in range(3):
            t1 = time.perf_counter()
            matched = df.filter(column).count()
            best = min(best, time.perf_counter() - t1)
        df.unpersist()
    finally:
        spark.stop()
    expected = per_pool * repeat
    if matched != expected:
        raise RuntimeError(f"spark_filter matched {matched} rows, the Python evaluator {expected}")
    rate = total / best
    log(
        f"  spark_filter       {rate:>12,.0f} rows/s ({matched} of {total}; "
        f"start-up {startup:.1f} s)\n"
    )
    return {
        "spark_filter": rate,
        "spark_filter_s": best,
        "spark_filter_rows": total,
        "spark_filter_matched": matched,
        "spark_startup_s": startup,
        "spark_master": settings.SPARK_MASTER,
    }
