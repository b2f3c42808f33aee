"""The Spark compiler, construct by construct (the same hand-picked cases as the SQL compiler),
and the row layout it reads: number keys that sort like numbers, date keys that sort like dates,
attribute paths that resolve as ``values.Struct`` does."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rules.lang import UserMessage, parse
from rules.lang import values as v
from rules.lang.compile_spark import (
    compile_spark,
    date_key,
    message_row,
    messages_to_rows,
    number_key,
    spark_schema,
)
from tests.rules.strategies import python_values, queue_row, spark_values, store
from tests.rules.test_compile_sql import ALL_CASES, IDS
from tests.rules.test_seed_conditions_evaluate_as_the_spec_says import CASES as SEED_CASES


@pytest.fixture(scope="module")
def spark_matrix(rules_pg, spark):
    """Every condition against every message in one DataFrame and one collect; and in Python."""
    messages = store(rules_pg, [queue_row(c[2]) for c in ALL_CASES])
    conds = [parse(c[1]) for c in ALL_CASES]
    return spark_values(spark, conds, messages), python_values(conds, messages)


@pytest.mark.spark
@pytest.mark.parametrize(("case", "condition", "message", "expected"), ALL_CASES, ids=IDS)
def test_condition_has_the_same_value_in_spark_and_python(
    spark_matrix, case, condition, message, expected
) -> None:
    i = IDS.index(case)
    on_spark, python = spark_matrix
    if case.startswith("S") and "-" in case:
        assert (on_spark[i][i] is True) == expected
    else:
        assert on_spark[i][i] is expected
    assert on_spark[i][i] is python[i][i]


@pytest.mark.spark
def test_every_condition_agrees_on_every_other_message_too(spark_matrix) -> None:
    on_spark, python = spark_matrix
    bad = [
        (IDS[i], IDS[j], on_spark[i][j], python[i][j])
        for i in range(len(IDS))
        for j in range(len(IDS))
        if on_spark[i][j] is not python[i][j]
    ]
    assert not bad


@pytest.mark.spark
def test_filter_keeps_the_rows_whose_condition_is_true(spark) -> None:
    # The seed's cases as one DataFrame: each rule keeps exactly the messages it is TRUE for.
    df = spark.createDataFrame(messages_to_rows([c[2] for c in SEED_CASES]), spark_schema()).cache()
    for _, text, _, _ in SEED_CASES[:6]:
        kept = df.filter(compile_spark(parse(text))).count()
        assert kept == sum(
            python_values([parse(text)], [m])[0][0] is True for _, _, m, _ in SEED_CASES
        )
    df.unpersist()


@pytest.mark.spark
def test_a_typed_user_variable_is_bound_only_to_its_type(spark) -> None:
    variables = {'"VAR$_52"': "user:STRMADMIN.REGION_PRI_MSG"}
    cond = parse(":\"VAR$_52\".region = 'EUROPE'")
    messages = [
        UserMessage("strmadmin.region_pri_msg", {"region": "EUROPE"}),
        UserMessage("OTHER", {"region": "EUROPE"}),
    ]
    assert spark_values(spark, [cond], messages, variables) == [[True, None]]


# --- the row layout (no Spark needed) ------------------------------------------------------------

numbers = st.one_of(
    st.integers(),
    st.decimals(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, -0, Decimal("-0.0"), Decimal("1E+500"), Decimal("-1E-500"), 10**40]),
)


@settings(max_examples=300)
@given(numbers, numbers)
def test_number_keys_compare_like_the_numbers(a, b) -> None:
    ka, kb = number_key(a), number_key(b)
    assert (ka < kb, ka == kb, ka > kb) == (a < b, a == b, a > b)


@settings(max_examples=100)
@given(st.datetimes(), st.datetimes())
def test_date_keys_compare_like_the_dates(a, b) -> None:
    assert (date_key(a) < date_key(b)) == (a < b)
    assert (date_key(a) == date_key(b)) == (a == b)


def test_a_date_key_reads_back_as_its_date() -> None:
    d = datetime(999, 1, 2, 3, 4, 5) + timedelta(microseconds=7)
    assert v.to_date(date_key(d)) == d


def test_attribute_paths_resolve_as_struct_attrs() -> None:
    m = UserMessage("T", {"region": 1, "Region": 2, "a": {"B": {"c": 3}}, "x\x1fy": 4})
    _, _, *_, attrs, names = message_row(m)
    first = names["\x1eREGION"]
    assert attrs[first][1] == "1"  # the first of the keys that differ only in case
    b = names[names["\x1eA"] + "\x1eB"]
    assert attrs[names[b + "\x1eC"]][1] == "3"
    assert attrs[names["\x1eX\x1fY"]][1] == "4"


def test_carried_nulls_are_kept_and_absent_columns_are_not() -> None:
    m = v.RowLCR("DB", "UPDATE", "HR", "T", None, {"A": None}, {"B": 1})
    row = dict(zip([f.name for f in spark_schema().fields], message_row(m), strict=True))
    assert row["old_values"] == {"A": (None, None, None, None, None, None, None)}
    assert set(row["new_values"]) == {"B"}
    assert row["kind"] == "ROW_LCR" and row["attrs"] is None


def test_the_module_loads_without_spark() -> None:
    code = "import sys; sys.modules['pyspark'] = None; import rules.lang.compile_spark"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])
