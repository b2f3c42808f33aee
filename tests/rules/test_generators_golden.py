"""Golden tests G1-G15 of spec/rules.md §7.4 and every other condition the seed prints verbatim.

The expected strings are seed 002's own lines (tests/rules/golden.py, test data extracted once from
the seed, line numbers in the names); the generators build them from the grammar of §3.4.5 and the
templates of §3.5.2.
"""

from __future__ import annotations

from rules.lang import parse
from rules.lang.generators import (
    RuleType,
    StreamsRuleType,
    SubsettingOperation,
    global_rules,
    message_rule,
    schema_rules,
    subset_rules,
    table_rules,
)
from tests.rules.golden import (
    L299_GLOBAL_DML,
    L305_GLOBAL_DDL,
    L333_GLOBAL_DML_ALL,
    L335_GLOBAL_DDL_ALL,
    L376_SCHEMA_DML,
    L378_SCHEMA_DDL,
    L427_TABLE_DML,
    L438_TABLE_DDL,
    L509_SUBSET_INSERT,
    L525_SUBSET_UPDATE,
    L535_SUBSET_DELETE,
    L750_MESSAGE_EUROPE,
    L765_MESSAGE_AMERICAS,
    L831_SCHEMA_DML_APPLY,
    L849_NEGATIVE_TABLE,
    L889_AND_CONDITION_DML,
    L891_AND_CONDITION_DDL,
    SEED_LINES,
)

DBS1 = "dbs1.example.com"


def test_the_golden_data_holds_every_seed_line_whole():
    """Seventeen conditions, each one that parses: a line cut short or mangled in the data file
    would not."""
    assert len(SEED_LINES) == 17
    for line in SEED_LINES.values():
        parse(line)  # raises ConditionError, naming line and column


# --- global rules (§3.4.1) -----------------------------------------------------------------------


def test_g1_g2_global_rules_for_untagged_changes_match_the_seed_byte_for_byte():
    dml, ddl = global_rules(include_dml=True, include_ddl=True, include_tagged_lcr=False)
    assert dml.condition == L299_GLOBAL_DML
    assert ddl.condition == L305_GLOBAL_DDL
    assert (dml.rule_type, ddl.rule_type) == (RuleType.DML, RuleType.DDL)
    assert dml.streams_rule_type == ddl.streams_rule_type == StreamsRuleType.GLOBAL


def test_g3_g4_global_rules_with_tagged_lcrs_and_no_source_are_the_tautology_byte_for_byte():
    dml, ddl = global_rules(include_dml=True, include_ddl=True, include_tagged_lcr=True)
    assert dml.condition == L333_GLOBAL_DML_ALL
    assert ddl.condition == L335_GLOBAL_DDL_ALL


def test_global_rule_with_a_source_database_follows_the_grammar_inferred():
    # [INFER] §3.4.5: the seed does not print this combination; the spec derives it.
    (rule,) = global_rules(include_tagged_lcr=True, source_database=DBS1)
    assert rule.condition == "(:dml.get_source_database_name() = 'DBS1.EXAMPLE.COM' )"


# --- schema rules (§3.4.2) -----------------------------------------------------------------------


def test_g5_g6_schema_rules_match_the_seed_byte_for_byte():
    dml, ddl = schema_rules(
        schema_name="hr", include_dml=True, include_ddl=True, source_database=DBS1
    )
    assert dml.condition == L376_SCHEMA_DML
    assert ddl.condition == L378_SCHEMA_DDL
    assert (dml.schema, dml.object, dml.source_database) == ("HR", None, "DBS1.EXAMPLE.COM")
    assert dml.streams_rule_type == StreamsRuleType.SCHEMA
    assert dml.include_tagged_lcr is False


def test_schema_rule_for_dml_only_apply_matches_the_seed_byte_for_byte():
    rules = schema_rules(
        schema_name="hr", include_dml=True, include_ddl=False, source_database=DBS1
    )
    assert [r.condition for r in rules] == [L831_SCHEMA_DML_APPLY]


# --- table rules (§3.4.3, §3.4.4) ----------------------------------------------------------------


def test_g7_table_rule_for_dml_matches_the_seed_byte_for_byte():
    (rule,) = table_rules(
        table_name="hr.locations", include_dml=True, include_ddl=False, source_database=DBS1
    )
    assert rule.condition == L427_TABLE_DML
    assert (rule.schema, rule.object, rule.rule_type) == ("HR", "LOCATIONS", RuleType.DML)


def test_g8_table_rule_for_ddl_matches_the_seed_byte_for_byte():
    (rule,) = table_rules(
        table_name="hr.countries", include_dml=False, include_ddl=True, source_database=DBS1
    )
    assert rule.condition == L438_TABLE_DDL
    assert rule.rule_type == RuleType.DDL


def test_g9_negative_table_rule_with_tagged_lcrs_matches_the_seed_byte_for_byte():
    (rule,) = table_rules(
        table_name="hr.job_history",
        include_dml=True,
        include_ddl=False,
        include_tagged_lcr=True,
        source_database=DBS1,
        inclusion_rule=False,
    )
    assert rule.condition == L849_NEGATIVE_TABLE
    assert rule.inclusion_rule is False
    assert rule.include_tagged_lcr is True


# --- and_condition (§3.8) ------------------------------------------------------------------------


def test_g10_g11_and_condition_rules_match_the_seed_byte_for_byte():
    dml, ddl = table_rules(
        table_name="hr.departments",
        include_dml=True,
        include_ddl=True,
        include_tagged_lcr=True,
        source_database=DBS1,
        inclusion_rule=True,
        # The PL/SQL literal ':lcr.get_tag() = HEXTORAW(''02'')' of seed line 886, unescaped.
        and_condition=":lcr.get_tag() = HEXTORAW('02')",
    )
    assert dml.condition == L889_AND_CONDITION_DML
    assert ddl.condition == L891_AND_CONDITION_DDL
    assert dml.and_condition == ":lcr.get_tag() = HEXTORAW('02')"


# --- subset rules (§3.5.1) -----------------------------------------------------------------------


def test_g12_g13_g14_subset_rules_match_the_seed_byte_for_byte():
    insert, update, delete = subset_rules(
        table_name="hr.regions",
        dml_condition="region_id=2",
        include_tagged_lcr=False,
        source_database=DBS1,
    )
    assert insert.condition == L509_SUBSET_INSERT
    assert update.condition == L525_SUBSET_UPDATE
    assert delete.condition == L535_SUBSET_DELETE
    assert [r.subsetting_operation for r in (insert, update, delete)] == [
        SubsettingOperation.INSERT,
        SubsettingOperation.UPDATE,
        SubsettingOperation.DELETE,
    ]


# --- message rules (§3.6) ------------------------------------------------------------------------


def test_g15_message_rule_for_europe_matches_the_seed_byte_for_byte():
    # The PL/SQL of seed line 741: ':msg.region = ''EUROPE'' AND ' || ':msg.priority = ''1'' '.
    rule = message_rule(
        message_type="strmadmin.region_pri_msg",
        rule_condition=":msg.region = 'EUROPE' AND " + ":msg.priority = '1' ",
        variable_number=52,
    )
    assert rule.condition == L750_MESSAGE_EUROPE
    assert rule.message_rule_variable == "VAR$_52"
    assert rule.message_type == "STRMADMIN.REGION_PRI_MSG"
    assert rule.variables == {"VAR$_52": "user:STRMADMIN.REGION_PRI_MSG"}
    assert (rule.streams_rule_type, rule.rule_type) == (StreamsRuleType.MESSAGE, None)


def test_message_rule_for_americas_matches_the_seed_byte_for_byte():
    rule = message_rule(
        message_type="strmadmin.region_pri_msg",
        rule_condition=":msg.region = 'AMERICAS' AND " + ":msg.priority = '2' ",
        variable_number=56,
    )
    assert rule.condition == L765_MESSAGE_AMERICAS


# --- what every generated rule carries -----------------------------------------------------------


def test_the_original_condition_is_the_generated_condition():
    rules = [
        *global_rules(include_ddl=True),
        *subset_rules(table_name="hr.regions", dml_condition="region_id=2"),
    ]
    assert all(r.original_condition == r.condition for r in rules)


def test_model_fields_use_blank_strings_where_oracle_has_null():
    (rule,) = global_rules()
    fields = rule.model_fields()
    assert fields["schema_name"] == fields["object_name"] == fields["subsetting_operation"] == ""
    assert fields["streams_rule_type"] == "GLOBAL" and fields["rule_type"] == "DML"
    assert fields["include_tagged_lcr"] is False


def test_rules_use_the_streams_evaluation_context_variables():
    dml, ddl = table_rules(table_name="hr.t", include_ddl=True)
    assert dml.variables == {"DML": "row_lcr"}
    assert ddl.variables == {"DDL": "ddl_lcr"}
