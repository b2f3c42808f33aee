"""The recommended way to exclude one table from a schema (spec/rules.md §3.7 (c)): a positive
schema rule plus a negative table rule."""

from __future__ import annotations

import pytest

from rules.lang.generators import GeneratorError, StreamsRuleType, exclude_table

# Seed 002, lines 831 and 849: the worked example "apply all hr DML except hr.job_history".
L831 = (
    "((:dml.get_object_owner() = 'HR') and :dml.is_null_tag() = 'Y' and "
    ":dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )"
)
L849 = (
    "(((:dml.get_object_owner() = 'HR' and :dml.get_object_name() = 'JOB_HISTORY')) and "
    ":dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )"
)


def test_excluding_job_history_gives_the_seeds_two_rules_byte_for_byte():
    recipe = exclude_table(table_name="hr.job_history", source_database="dbs1.example.com")
    assert [r.condition for r in recipe.positive] == [L831]
    assert [r.condition for r in recipe.negative] == [L849]
    (positive,) = recipe.positive
    (negative,) = recipe.negative
    assert (positive.streams_rule_type, positive.inclusion_rule) == (StreamsRuleType.SCHEMA, True)
    assert (negative.streams_rule_type, negative.inclusion_rule) == (StreamsRuleType.TABLE, False)
    # The seed's advice: the negative rule includes tagged LCRs, so they are discarded too.
    assert negative.include_tagged_lcr is True
    assert recipe.rules == [positive, negative]


def test_excluding_a_table_for_dml_and_ddl_gives_two_rules_on_each_side():
    recipe = exclude_table(table_name='"Hr"."JobHistory"', include_ddl=True)
    assert [r.rule_type for r in recipe.positive] == ["DML", "DDL"]
    assert [r.rule_type for r in recipe.negative] == ["DML", "DDL"]
    assert all(r.schema == "Hr" for r in recipe.rules)
    assert [r.object for r in recipe.negative] == ["JobHistory", "JobHistory"]


def test_excluding_a_table_needs_its_schema():
    with pytest.raises(GeneratorError) as info:
        exclude_table(table_name="job_history")
    assert info.value.parameter == "table_name"
