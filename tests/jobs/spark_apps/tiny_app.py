"""A tiny PySpark application for the loopback-cluster tests (run by spark-submit, no Django).

    spark-submit ... tiny_app.py [N] [PARTITIONS] [SLEEP_S]

Sums ``range(N)`` over PARTITIONS partitions (each sleeps SLEEP_S first, to keep the app running
for the kill tests) and prints one JSON line: the application id (``app-…`` on a cluster,
``local-…`` in local mode), the master, the partitions, count and sum.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator

from pyspark.sql import SparkSession


def main(argv: list[str]) -> None:
    n = int(argv[0]) if argv else 1000
    parts = int(argv[1]) if len(argv) > 1 else 4
    sleep_s = float(argv[2]) if len(argv) > 2 else 0.0
    spark = SparkSession.builder.appName("aq-console tiny app").getOrCreate()
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    # The id first, as a bulk job would, so a caller can follow (or kill) the app while it runs.
    print(json.dumps({"event": "started", "app_id": sc.applicationId}), flush=True)

    def part_sum(rows: Iterator[int]) -> Iterator[tuple[int, int]]:
        time.sleep(sleep_s)
        values = list(rows)
        yield len(values), sum(values)

    rdd = sc.range(0, n, numSlices=parts)
    totals = rdd.mapPartitions(part_sum).collect()
    out = {
        "event": "done",
        "app_id": sc.applicationId,
        "master": sc.master,
        "partitions": rdd.getNumPartitions(),
        "count": sum(c for c, _ in totals),
        "sum": sum(s for _, s in totals),
    }
    print(json.dumps(out), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
