"""The bulk propagation application, run by ``spark-submit app.py SPEC_FILE``.

It reads the job's spec (JSON, built by ``jobs/spark_submit.py``), reads the source messages
through ``aqsource`` in the frozen parts not yet done, decides each message for every
destination with ``compile_spark`` (Table 5-1: no negative rule TRUE, and a positive rule TRUE
or no positive set), transforms in Python what a transforming rule hit, and writes through
``aqsink`` (one transaction per part, see ``sink.py``), or, for a dry run, only counts.

It talks to the Celery task through JSON lines on stdout: ``started`` (application id),
``progress`` (tasks done of total), ``dry_run`` (the counts), ``finished`` or ``error``. It exits
by itself when the process that submitted it is gone (``watch_pid``), so a killed Celery worker
never leaves a driver writing on. No Django here.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from functools import reduce
from typing import Any

JOB_GROUP = "aq-bulk"


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


# --- decisions -------------------------------------------------------------------------------


def _rule_columns(rules: list[dict[str, Any]]) -> list[Any]:
    """Each rule's condition as ``(condition) IS TRUE``."""
    from pyspark.sql import functions as F

    from rules.lang import parse
    from rules.lang.compile_spark import compile_spark

    out = []
    for r in rules:
        col = compile_spark(parse(r["condition"]), variables=r.get("variables"))
        out.append(F.coalesce(col, F.lit(False)))
    return out


def _any(cols: list[Any], empty: bool) -> Any:
    from pyspark.sql import functions as F

    return reduce(lambda a, b: a | b, cols) if cols else F.lit(empty)


def _transformer(d: dict[str, Any]) -> Any:
    """A Python UDF (kind, type_name, payload, hit) → the destination's transformed copy."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    dest = d
    rules = [r["name"] for r in d["positive"]]
    out_type = StructType(
        [StructField(n, StringType()) for n in ("status", "kind", "type_name", "payload", "error")]
    )

    def run(kind: str, type_name: str | None, payload: str | None, hit: int | None) -> tuple:
        from jobs.spark.transforms import transform_one

        if hit is None:
            return ("ok", None, None, None, None)
        return transform_one(dest, rules[hit], kind, type_name, payload)

    return F.udf(run, out_type, useArrow=False).asNondeterministic()


def _declarative_fast_path(rules: list[dict[str, Any]], transforming: list[int], hit: Any) -> Any:
    """The transformed payload of a row LCR whose hit rule only has declarative transformations,
    as a Spark expression (``jobs/spark/declarative.py``, proven equal to the pipeline); NULL
    for every other row. None when no transforming rule of the set qualifies."""
    from pyspark.sql import functions as F

    from jobs.spark.declarative import declarative_column
    from rules.lang.migration import subsetting_operation_of

    branches = []
    for j in transforming:
        t = rules[j]["transform"]
        if t.get("custom_name") or subsetting_operation_of(t.get("action_context")) is not None:
            continue
        col = declarative_column(F.col("payload"), t.get("declarative") or [], table=None)
        if col is not None:
            branches.append(F.when((hit == F.lit(j)) & (F.col("kind") == "ROW_LCR"), col))
    return F.coalesce(*branches, F.lit(None).cast("string")) if branches else None


def decisions(df: Any, spec: dict[str, Any]) -> Any:
    """``df`` with ``dests`` (the destination queue ids that take each message) and, when a
    destination transforms, ``tx`` (its transformed copies or their errors)."""
    from pyspark.sql import functions as F

    sel = spec["selection"].get("condition")
    if sel:
        df = df.filter(_rule_columns([spec["selection"]])[0])
    takes, txs = [], []
    for i, d in enumerate(spec["destinations"]):
        pos = d.get("positive")
        neg = d.get("negative")
        pos_cols = _rule_columns(pos) if pos is not None else []
        perform = ~_any(_rule_columns(neg), False) if neg else F.lit(True)
        if pos is not None:
            perform = perform & _any(pos_cols, False)
        q = F.lit(d["queue_id"]).cast("long")
        transforming = [j for j, r in enumerate(pos or []) if r.get("transform")]
        if not transforming:
            takes.append(F.when(perform, q))
            continue
        # The first TRUE positive rule decides which transformation runs (pipeline.apply).
        hit = F.coalesce(*[F.when(c, F.lit(j)) for j, c in enumerate(pos_cols)], F.lit(None))
        hit = F.when(perform & hit.isin(transforming), hit)
        # Declarative-only rules on row LCRs run as Spark expressions; a row they cannot render
        # exactly (NULL) and every other transformation go through the Python pipeline.
        fast = _declarative_fast_path(pos, transforming, hit)
        name = f"t{i}"
        udf_hit = hit if fast is None else F.when(fast.isNull(), hit)
        df = df.withColumn(
            name,
            _transformer(d)(F.col("kind"), F.col("type_name"), F.col("payload"), udf_hit),
        )
        t = F.col(name)
        if fast is not None:
            status = F.when(fast.isNotNull(), F.lit("changed")).otherwise(t.status)
            kind = F.when(fast.isNotNull(), F.lit("ROW_LCR")).otherwise(t.kind)
            type_name = F.when(fast.isNotNull(), F.col("type_name")).otherwise(t.type_name)
            payload = F.coalesce(fast, t.payload)
        else:
            status, kind, type_name, payload = t.status, t.kind, t.type_name, t.payload
        takes.append(F.when(perform & (status != F.lit("discard")), q))
        txs.append(
            F.when(
                status.isin("changed", "error"),
                F.struct(
                    q.alias("dest"),
                    kind.alias("kind"),
                    type_name.alias("type_name"),
                    payload.alias("payload"),
                    t.error.alias("error"),
                ),
            )
        )
    dests = F.filter(F.array(*takes), lambda x: x.isNotNull()) if takes else F.array()
    cols = [F.col("id"), F.col("part"), dests.cast("array<long>").alias("dests")]
    if txs:
        cols.append(F.filter(F.array(*txs), lambda x: x.isNotNull()).alias("tx"))
    return df.select(*cols)


# --- progress and orphan watch ---------------------------------------------------------------


def _watch(sc: Any, stop: threading.Event, watch_pid: int | None) -> None:
    last = None
    tracker = sc.statusTracker()
    while not stop.wait(1.0):
        if watch_pid and not _alive(watch_pid):
            emit("error", message=f"the submitting process {watch_pid} is gone; stopping")
            os._exit(3)
        try:
            done = total = 0
            for jid in tracker.getJobIdsForGroup(JOB_GROUP):
                job = tracker.getJobInfo(jid)
                if job is None:
                    continue
                for sid in job.stageIds:
                    stage = tracker.getStageInfo(sid)
                    if stage is not None:
                        done += stage.numCompletedTasks
                        total += stage.numTasks
        except Exception:  # progress is best effort; the orphan watch above must go on
            continue
        if (done, total) != last and total:
            emit("progress", tasks_done=done, tasks_total=total)
            last = (done, total)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def done_parts(spec: dict[str, Any]) -> set[int]:
    import psycopg

    with psycopg.connect(spec["conninfo"]) as conn:
        rows = conn.execute(
            "SELECT part_no FROM aq_bulk_part WHERE job_id = %s", (spec["job_id"],)
        ).fetchall()
    return {r[0] for r in rows}


def run(spec: dict[str, Any]) -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from jobs.spark.sink import AqSink
    from jobs.spark.source import AqSource

    t0 = time.monotonic()
    spark = SparkSession.builder.appName(f"aq-bulk-job-{spec['job_id']}").getOrCreate()
    sc = spark.sparkContext
    sc.setLogLevel("WARN")
    emit("started", app_id=sc.applicationId, master=sc.master, startup_s=time.monotonic() - t0)
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(sc, stop, spec.get("watch_pid")), daemon=True)
    watcher.start()
    try:
        done = done_parts(spec) if not spec["dry_run"] else set()
        todo = [p for p in range(len(spec["parts"])) if p not in done]
        emit("plan", parts=len(spec["parts"]), done=len(done), todo=len(todo))
        if not todo:
            emit("finished", skipped_parts=len(done))
            return
        sc.setJobGroup(JOB_GROUP, f"bulk job {spec['job_id']}")
        spark.dataSource.register(AqSource)
        spark.dataSource.register(AqSink)
        text = json.dumps(spec)
        df = (
            spark.read.format("aqsource")
            .option("spec", text)
            .option("todo", ",".join(map(str, todo)))
            .load()
        )
        out = decisions(df, spec)
        if spec["dry_run"]:
            per = [
                F.sum(F.array_contains("dests", d["queue_id"]).cast("long")).alias(d["name"])
                for d in spec["destinations"]
            ]
            row = out.agg(
                F.count(F.lit(1)).alias("__read"),
                F.sum((F.size("dests") == 0).cast("long")).alias("__discarded"),
                *per,
            ).collect()[0]
            counts = row.asDict()
            emit(
                "dry_run",
                read=int(counts.pop("__read") or 0),
                discarded=int(counts.pop("__discarded") or 0),
                per_destination={k: int(v or 0) for k, v in counts.items()},
            )
        else:
            out.write.format("aqsink").option("spec", text).mode("append").save()
        emit("finished", seconds=time.monotonic() - t0)
    finally:
        stop.set()
        spark.stop()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: app.py SPEC_FILE", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    try:
        run(spec)
    except Exception as exc:  # reported to the Celery task, which fails the job with it
        emit("error", message=f"{type(exc).__name__}: {exc}"[:4000])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
