"""A PySpark Python data source whose reader yields ``arrow_rows`` batches, as the bulk jobs'
reader does (a module of its own so that the Python workers import it by name)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader
from pyspark.sql.types import LongType, StructField, StructType

from rules.lang import parse
from rules.lang.arrow_rows import arrow_rows, referenced_paths
from rules.lang.compile_spark import spark_schema


class ArrowRowsSource(DataSource):
    """Options: ``texts`` (a JSON list of user payloads as JSON text), ``condition``."""

    @classmethod
    def name(cls) -> str:
        return "arrow_rows_test"

    def schema(self) -> StructType:
        return StructType([StructField("id", LongType(), nullable=False), *spark_schema().fields])

    def reader(self, schema: StructType) -> DataSourceReader:
        return _Reader(json.loads(self.options["texts"]), self.options["condition"])


class _Reader(DataSourceReader):
    def __init__(self, texts: list[str], condition: str) -> None:
        self.texts, self.condition = texts, condition

    def read(self, partition) -> Iterator[pa.RecordBatch]:
        n, half = len(self.texts), len(self.texts) // 2
        needs = referenced_paths([parse(self.condition)])
        types = ["ORDER_T"] * (n - 1) + ["T"]
        for lo, hi in ((0, half), (half, n)):  # two batches, as a reader yields them
            yield arrow_rows(
                pa.array(range(lo, hi), pa.int64()),
                pa.array(["USER"] * (hi - lo)),
                pa.array(types[lo:hi]),
                pa.array(self.texts[lo:hi]),
                needs,
            )
