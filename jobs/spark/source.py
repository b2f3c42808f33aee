"""``aqsource``: a PySpark Python data source over a queue's messages.

One input partition per frozen part of the job (an id range cut at submission, so a re-run reads
the same parts). Each partition is read with a server-side cursor and yielded as Arrow batches:
``id``, ``part``, the payload text when a transformation needs it, and the rows that
``rules.lang.compile_spark`` conditions read, built vectorised by ``rules.lang.arrow_rows``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

FETCH = 10_000  # rows per Arrow batch


class Part(InputPartition):
    def __init__(self, part_no: int, lo: int, hi: int):
        super().__init__(part_no)
        self.part_no, self.lo, self.hi = part_no, lo, hi


def read_schema(spec: dict[str, Any]) -> StructType:
    """What the reader yields for this spec (the driver needs it to build the plan)."""
    from rules.lang.compile_spark import spark_schema

    fields = [StructField("id", LongType()), StructField("part", IntegerType())]
    if spec["needs_payload"]:
        fields.append(StructField("payload", StringType()))
    if spec["needs_rows"]:
        fields.extend(spark_schema().fields)
    return StructType(fields)


def selection_sql(spec: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The WHERE clause of the job's source messages (alias ``m``), the part range aside."""
    src = spec["source"]
    sel = spec["selection"]
    where = [
        "m.queue_id = %(src)s",
        "m.state = 'READY'",
        "m.commit_seq IS NOT NULL",
        # Persistent messages: a bulk job claims and writes logged storage in its parts'
        # transactions; buffered ones are the propagations' own runs' to move.
        "m.delivery_mode = 'PERSISTENT'",
        "m.id <= %(max_id)s",
    ]
    params: dict[str, Any] = {"src": src["id"], "max_id": spec["max_id"]}
    if sel.get("enq_time_from"):
        where.append("m.enq_time >= %(t_from)s::timestamptz")
        params["t_from"] = sel["enq_time_from"]
    if sel.get("enq_time_to"):
        where.append("m.enq_time < %(t_to)s::timestamptz")
        params["t_to"] = sel["enq_time_to"]
    if sel.get("correlation"):
        where.append("m.correlation LIKE %(corr)s")  # AQ's % and _ wildcards
        params["corr"] = sel["correlation"]
    if spec["mode"] == "MOVE" and src["multiple_consumers"]:
        # Only what one of the job's propagations still has to take.
        where.append(
            "EXISTS (SELECT 1 FROM aq_message_consumer mc WHERE mc.message_id = m.id "
            "AND mc.subscriber_id = ANY(%(subs)s))"
        )
        params["subs"] = [d["subscriber_id"] for d in spec["destinations"]]
    return " AND ".join(where), params


class AqReader(DataSourceReader):
    def __init__(self, spec: dict[str, Any], todo: list[int]):
        self.spec = spec
        self.todo = todo

    def partitions(self) -> list[InputPartition]:
        parts = self.spec["parts"]
        return [Part(p, parts[p][0], parts[p][1]) for p in self.todo]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import psycopg
        import pyarrow as pa

        assert isinstance(partition, Part)
        spec = self.spec
        where, params = selection_sql(spec)
        params.update(lo=partition.lo, hi=partition.hi)
        payload = spec["needs_payload"] or spec["needs_rows"]
        cols = "m.id, m.kind, m.type_name" + (", m.payload::text" if payload else "")
        sql = f"SELECT {cols} FROM aq_message m WHERE {where} AND m.id BETWEEN %(lo)s AND %(hi)s"
        needs = None
        # Spark compares the batches' Arrow schema with the declared one, nullability included.
        self.arrow_schema = _arrow_schema(read_schema(spec))
        if spec["needs_rows"]:
            from rules.lang.arrow_rows import referenced_paths

            needs = referenced_paths(_conditions(spec))
        with (
            psycopg.connect(spec["conninfo"], autocommit=False) as conn,
            conn.cursor(name=f"aqsource_{partition.part_no}") as cur,
        ):
            cur.itersize = FETCH
            cur.execute(sql, params)
            while rows := cur.fetchmany(FETCH):
                yield _batch(spec, partition.part_no, rows, needs, pa, self.arrow_schema)


def _arrow_schema(schema: StructType) -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema)


def _batch(
    spec: dict[str, Any], part_no: int, rows: list[tuple], needs: Any, pa: Any, schema: Any
) -> Any:
    ids = pa.array([r[0] for r in rows], pa.int64())
    arrays = [ids, pa.array([part_no] * len(rows), pa.int32())]
    names = ["id", "part"]
    texts = pa.array([r[3] for r in rows], pa.string()) if len(rows[0]) > 3 else None
    if spec["needs_payload"]:
        arrays.append(texts)
        names.append("payload")
    if spec["needs_rows"]:
        from rules.lang.arrow_rows import arrow_rows

        kinds = pa.array([r[1] for r in rows], pa.string())
        tnames = pa.array([r[2] or None for r in rows], pa.string())
        built = arrow_rows(ids, kinds, tnames, texts, needs)
        for name in built.schema.names[1:]:  # its first column is the id again
            arrays.append(built.column(name))
            names.append(name)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _conditions(spec: dict[str, Any]) -> list[Any]:
    """Every condition the job evaluates (selection and rules), parsed."""
    from rules.lang import parse

    texts = [spec["selection"]["condition"]] if spec["selection"].get("condition") else []
    for d in spec["destinations"]:
        for side in ("positive", "negative"):
            for rule in d.get(side) or ():
                texts.append(rule["condition"])
    return [parse(t) for t in texts]


class AqSource(DataSource):
    """Options: ``spec`` (the job's JSON spec) and ``todo`` (comma-separated part numbers)."""

    @classmethod
    def name(cls) -> str:
        return "aqsource"

    def schema(self) -> StructType:
        return read_schema(json.loads(self.options["spec"]))

    def reader(self, schema: StructType) -> DataSourceReader:
        todo = [int(p) for p in self.options["todo"].split(",") if p]
        return AqReader(json.loads(self.options["spec"]), todo)
