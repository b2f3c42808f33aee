"""Python, PostgreSQL and Spark give the same TRUE / FALSE / NULL for every generated condition
and message (the issue's "three compilers from one tree").

Each example is a batch: a few dozen conditions against a few dozen messages, evaluated in one
SQL query and one Spark collect. A failure prints every disagreeing (condition, message) pair,
with the row as stored and the message as the engine read it back.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from rules.lang.compile_sql import factor_rule_sets
from tests.rules.strategies import (
    condition_batch,
    message_of,
    mismatches,
    python_values,
    queue_rows,
    rule_sets,
    spark_values,
    sql_values,
    store,
    usable,
)

# No shrinking: a failure already lists every disagreeing pair, and shrinking a batch costs a
# query (and a Spark job) per step.
_SETTINGS = dict(
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(max_examples=60, **_SETTINGS)
@given(conds=condition_batch(40), rows=st.lists(queue_rows, min_size=10, max_size=30))
def test_postgresql_agrees_with_python(rules_pg, conds, rows) -> None:
    messages = store(rules_pg, rows)
    python = python_values(conds, messages)
    sql = sql_values(rules_pg, conds)
    bad = mismatches(conds, rows, messages, python=python, sql=sql)
    assert not bad, f"{len(bad)} disagreements:\n" + "\n".join(bad[:10])


@pytest.mark.spark
@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(max_examples=25, **_SETTINGS)
@given(conds=condition_batch(40), rows=st.lists(queue_rows, min_size=10, max_size=30))
def test_python_postgresql_and_spark_agree(rules_pg, spark, conds, rows) -> None:
    messages = store(rules_pg, rows)
    python = python_values(conds, messages)
    sql = sql_values(rules_pg, conds)
    on_spark = spark_values(spark, conds, messages)
    bad = mismatches(conds, rows, messages, python=python, sql=sql, spark=on_spark)
    assert not bad, f"{len(bad)} disagreements:\n" + "\n".join(bad[:10])


@settings(max_examples=200, deadline=None)
@given(cond=rule_sets(), rows=st.lists(queue_rows, min_size=1, max_size=8))
def test_factoring_a_rule_set_keeps_every_truth_value(cond, rows) -> None:
    # In Python alone: the rewrite both compilers apply before compiling.
    original = usable(cond)
    if original is None:
        return
    messages = [message_of(r) for r in rows]
    factored = factor_rule_sets(original)
    assert python_values([factored], messages) == python_values([original], messages)
