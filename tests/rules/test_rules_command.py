"""``python manage.py rules generate|eval|decide``."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.rules.golden import (
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
    L849_NEGATIVE_TABLE,
    L889_AND_CONDITION_DML,
    L891_AND_CONDITION_DDL,
)

ROOT = Path(__file__).resolve().parents[2]


def rules(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("rules", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def refused(*args: str) -> str:
    with pytest.raises(CommandError) as info:
        rules(*args)
    assert info.value.returncode == 2
    return str(info.value)


# --- generate ------------------------------------------------------------------------------------


def test_generate_global_without_streams_type_prints_the_dml_and_the_ddl_rule():
    out, _ = rules("generate", "global", "--include-tagged-lcr")
    assert out == f"{L333_GLOBAL_DML_ALL}\n{L335_GLOBAL_DDL_ALL}\n"


def test_generate_schema_rules_prints_the_seeds_conditions():
    out, _ = rules(
        "generate", "schema", "--schema-name", "hr", "--source-database", "dbs1.example.com"
    )
    assert out.splitlines() == [L376_SCHEMA_DML, L378_SCHEMA_DDL]


@pytest.mark.parametrize(
    ("table", "streams_type", "expected"),
    [("hr.locations", "dml", L427_TABLE_DML), ("hr.countries", "DDL", L438_TABLE_DDL)],
)
def test_generate_one_table_rule_per_streams_type(table, streams_type, expected):
    out, _ = rules(
        "generate",
        "table",
        "--table-name",
        table,
        "--streams-type",
        streams_type,
        "--source-database",
        "dbs1.example.com",
    )
    assert out == expected + "\n"


def test_generate_a_negative_table_rule():
    out, err = rules(
        "generate",
        "table",
        "--table-name=hr.job_history",
        "--streams-type=dml",
        "--include-tagged-lcr=true",
        "--source-database=dbs1.example.com",
        "--inclusion-rule=false",
    )
    assert out == L849_NEGATIVE_TABLE + "\n"
    assert err == ""


def test_generate_a_negative_rule_without_tagged_lcrs_warns_on_stderr():
    out, err = rules(
        "generate", "table", "--table-name=hr.job_history", "--inclusion-rule", "FALSE"
    )
    assert len(out.splitlines()) == 2
    assert "--include-tagged-lcr" in err


def test_generate_with_an_and_condition():
    out, _ = rules(
        "generate",
        "table",
        "--table-name",
        "hr.departments",
        "--include-tagged-lcr",
        "--source-database",
        "dbs1.example.com",
        "--and-condition",
        ":lcr.get_tag() = HEXTORAW('02')",
    )
    assert out.splitlines() == [L889_AND_CONDITION_DML, L891_AND_CONDITION_DDL]


def test_generate_subset_prints_insert_update_delete():
    out, _ = rules(
        "generate",
        "subset",
        "--table-name",
        "hr.regions",
        "--dml-condition",
        "region_id=2",
        "--source-database",
        "dbs1.example.com",
    )
    assert out.splitlines() == [L509_SUBSET_INSERT, L525_SUBSET_UPDATE, L535_SUBSET_DELETE]


def test_generate_subset_with_a_column_type():
    out, _ = rules(
        "generate",
        "subset",
        "--table-name=hr.regions",
        "--dml-condition=region_id IS NULL",
        "--column-type=region_id=NUMBER",
        "--include-tagged-lcr",
    )
    assert len(out.splitlines()) == 3
    assert ".AccessNumber() IS NULL" in out


def test_generate_message_rule():
    out, _ = rules(
        "generate",
        "message",
        "--message-type",
        "strmadmin.region_pri_msg",
        "--rule-condition",
        ":msg.region = 'EUROPE' AND :msg.priority = '1' ",
        "--variable-number",
        "52",
    )
    assert out == L750_MESSAGE_EUROPE + "\n"


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["global", "--table-name", "hr.t"], "--table-name does not apply to global rules"),
        (["table"], "table rules need --table-name"),
        (["schema", "--dml-condition", "a=1", "--schema-name", "hr"], "--dml-condition"),
        (["table", "--table-name", "locations"], "--table-name: 'locations' must name"),
        (["table", "--table-name", "hr.t", "--and-condition", "1=1"], "--and-condition"),
        (
            ["table", "--table-name", "hr.t", "--and-condition", ":lcr.get_object_type() = 'X'"],
            "GET_OBJECT_TYPE",
        ),
        (["global", "--source-database", "a b"], "--source-database"),
        (["global", "--inclusion-rule", "maybe"], "--inclusion-rule takes true or false"),
        (["global", "--include-tagged-lcr", "sometimes"], "--include-tagged-lcr takes"),
        (["subset", "--table-name", "hr.regions"], "subset rules need --dml-condition"),
        (
            [
                "subset",
                "--table-name=hr.regions",
                "--dml-condition=region_id=2",
                "--inclusion-rule=false",
            ],
            "--inclusion-rule: Subset rules can only be added to a positive rule set",
        ),
        (
            [
                "subset",
                "--table-name=hr.regions",
                "--dml-condition=region_id=2",
                "--streams-type=ddl",
            ],
            "--streams-type: Subset rules are DML rules only",
        ),
        (
            [
                "subset",
                "--table-name=hr.regions",
                "--dml-condition=region_id=2",
                "--and-condition=x",
            ],
            "--and-condition does not apply to subset rules",
        ),
        (
            ["subset", "--table-name=hr.regions", "--dml-condition=region_id=2", "--column-type=x"],
            "--column-type takes COLUMN=TYPE",
        ),
        (
            ["message", "--message-type=a.b", "--rule-condition=:msg.x = 1"],
            "message rules need --variable-number",
        ),
        (
            ["message", "--message-type=a.b", "--rule-condition=:msg.x = 1", "--variable-number=0"],
            "--variable-number takes a positive whole number",
        ),
        (
            [
                "message",
                "--message-type=a.b",
                "--rule-condition=:msg.x = 1",
                "--variable-number=1",
                "--streams-type=dml",
            ],
            "--streams-type does not apply to message rules",
        ),
        (["global", "--streams-type", "both"], "invalid choice: 'both'"),
        (["view"], "invalid choice: 'view'"),
    ],
)
def test_generate_refuses_bad_input_naming_the_option_with_exit_code_2(args, names):
    assert names in refused("generate", *args)


def test_generate_from_the_shell_prints_one_condition_per_line_and_exits_2_on_bad_input():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "console.settings"}
    ok = subprocess.run(
        [sys.executable, "manage.py", "rules", "generate", "global"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (ok.returncode, ok.stdout) == (
        0,
        "(:dml.is_null_tag() = 'Y' )\n(:ddl.is_null_tag() = 'Y' )\n",
    )
    bad = subprocess.run(
        [sys.executable, "manage.py", "rules", "generate", "table", "--table-name", "t"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert "--table-name" in bad.stderr


# --- eval and decide -----------------------------------------------------------------------------

ROW = {
    "kind": "row_lcr",
    "source_database_name": "DBS1.EXAMPLE.COM",
    "command_type": "INSERT",
    "object_owner": "HR",
    "object_name": "DEPARTMENTS",
    "tag": None,
    "old_values": {},
    "new_values": {"DEPARTMENT_ID": 280},
}


@pytest.mark.parametrize(
    ("condition", "message", "expected"),
    [
        ("(:dml.is_null_tag() = 'Y' )", ROW, "TRUE"),
        ("(:dml.is_null_tag() = 'Y' )", {**ROW, "tag": "02"}, "FALSE"),
        (L376_SCHEMA_DML, {**ROW, "object_owner": "OE"}, "FALSE"),
        (L889_AND_CONDITION_DML, {**ROW, "command_type": "UPDATE"}, "NULL"),
        (L889_AND_CONDITION_DML, {**ROW, "command_type": "UPDATE", "tag": "02"}, "TRUE"),
        (
            ":msg.region = 'EUROPE' AND :msg.priority = '1'",
            {
                "kind": "user",
                "type_name": "STRMADMIN.REGION_PRI_MSG",
                "payload": {"region": "EUROPE", "priority": 1},
            },
            "TRUE",
        ),
    ],
)
def test_eval_prints_the_three_valued_result(condition, message, expected):
    out, _ = rules("eval", "--condition", condition, "--message", json.dumps(message))
    assert out == expected + "\n"


def test_eval_binds_a_message_rules_own_variable_to_the_user_message():
    message = {
        "kind": "user",
        "type_name": "STRMADMIN.REGION_PRI_MSG",
        "payload": {"region": "EUROPE", "priority": 1},
    }
    out, _ = rules("eval", "--condition", L750_MESSAGE_EUROPE, "--message", json.dumps(message))
    assert out == "TRUE\n"
    message["payload"]["priority"] = 2
    out, _ = rules("eval", "--condition", L750_MESSAGE_EUROPE, "--message", json.dumps(message))
    assert out == "FALSE\n"


def test_eval_reports_a_syntax_error_with_its_position_and_exit_code_2():
    message = refused("eval", "--condition", ":dml.is_null_tag() = ", "--message", json.dumps(ROW))
    assert "--condition" in message
    assert "line 1" in message and "column" in message


def test_eval_refuses_a_message_that_is_not_json():
    assert "--message is not valid JSON" in refused(
        "eval", "--condition", "1 = 1", "--message", "{kind: row}"
    )


@pytest.mark.parametrize(
    ("positive", "negative", "message", "expected"),
    [
        (None, None, ROW, "PERFORM"),  # D1
        ([L376_SCHEMA_DML], None, ROW, "PERFORM"),  # D2
        ([L376_SCHEMA_DML], None, {**ROW, "object_owner": "OE"}, "DISCARD"),  # D3
        (None, [L849_NEGATIVE_TABLE], {**ROW, "object_name": "JOB_HISTORY"}, "DISCARD"),  # D4
        ([L376_SCHEMA_DML], [L849_NEGATIVE_TABLE], ROW, "PERFORM"),  # D7
        ([], None, ROW, "DISCARD"),  # D10
        ([], [], ROW, "DISCARD"),  # D11
        (None, [], ROW, "PERFORM"),  # D8
    ],
)
def test_decide_prints_perform_or_discard(positive, negative, message, expected):
    out, _ = rules(
        "decide",
        "--positive",
        json.dumps(positive),
        "--negative",
        json.dumps(negative),
        "--message",
        json.dumps(message),
    )
    assert out == expected + "\n"


def test_decide_names_the_condition_with_a_syntax_error():
    message = refused(
        "decide",
        "--positive",
        json.dumps([L376_SCHEMA_DML, ":dml.get_object_owner() = "]),
        "--negative",
        "null",
        "--message",
        json.dumps(ROW),
    )
    assert message.startswith("--positive: condition 2: line 1, column 27: ")


def test_decide_refuses_a_message_of_an_unknown_kind():
    message = refused(
        "decide", "--positive", "null", "--negative", "null", "--message", '{"kind": "email"}'
    )
    assert message.startswith("--message: kind:")


def test_decide_refuses_a_rule_set_that_is_not_a_list_of_conditions():
    message = refused(
        "decide", "--positive", '{"a": 1}', "--negative", "null", "--message", json.dumps(ROW)
    )
    assert "--positive takes a JSON list of conditions, or null" in message
