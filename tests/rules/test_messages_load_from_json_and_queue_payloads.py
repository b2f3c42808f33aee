"""Messages come from the evaluator's JSON (``{"kind": "row_lcr" | "ddl_lcr" | "user", ...}``) and
from the queue engine's rows (kind ROW_LCR / DDL_LCR / USER with the payload shapes of
queues/engine/); bad input raises MessageError naming the field. A message binds only the
variables of its kind."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from rules.lang import (
    DdlLCR,
    MessageError,
    RowLCR,
    UserMessage,
    bindings_for,
    message_from_json,
    message_from_queue,
    variable_name,
)

ROW = {
    "kind": "row_lcr",
    "source_database_name": "DBS1.EXAMPLE.COM",
    "command_type": "UPDATE",
    "object_owner": "HR",
    "object_name": "REGIONS",
    "tag": "0A",
    "old_values": {"REGION_ID": 4, "RATE": 1.5},
    "new_values": {"REGION_ID": 2, "ACTIVE": True},
}
DDL = {
    "kind": "ddl_lcr",
    "source_database_name": "DBS1.EXAMPLE.COM",
    "command_type": "CREATE INDEX",
    "object_type": "INDEX",
    "object_owner": None,
    "object_name": "C_IX",
    "base_table_owner": "HR",
    "base_table_name": "COUNTRIES",
    "ddl_text": "CREATE INDEX c_ix ON hr.countries(name)",
    "tag": None,
}


def test_a_row_lcr_loads_with_its_tag_and_column_values() -> None:
    lcr = message_from_json(ROW)
    assert isinstance(lcr, RowLCR)
    assert (lcr.object_owner, lcr.object_name, lcr.command_type) == ("HR", "REGIONS", "UPDATE")
    assert lcr.tag == b"\x0a" and lcr.null_tag == "N"
    assert lcr.old_values == {"REGION_ID": 4, "RATE": Decimal("1.5")}
    assert lcr.new_values == {"REGION_ID": 2, "ACTIVE": "true"}


def test_json_text_is_accepted_too() -> None:
    assert message_from_json(json.dumps(ROW)) == message_from_json(ROW)


def test_a_ddl_lcr_loads_with_null_owner() -> None:
    lcr = message_from_json(DDL)
    assert isinstance(lcr, DdlLCR)
    assert lcr.object_owner is None and lcr.base_table_owner == "HR"
    assert lcr.tag is None and lcr.null_tag == "Y"


def test_a_user_message_loads_with_its_type_and_payload() -> None:
    msg = message_from_json({"kind": "user", "type_name": "T", "payload": {"Region": "EU"}})
    assert isinstance(msg, UserMessage)
    assert msg.type_name == "T" and msg.attrs == {"REGION": "EU"}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"kind": "lcr"}, "kind"),
        ({"kind": None}, "kind"),
        ({"tag": "0"}, "tag"),
        ({"tag": "zz"}, "tag"),
        ({"tag": 2}, "tag"),
        ({"object_owner": 5}, "object_owner"),
        ({"object_name": None}, "object_name"),
        ({"old_values": [1, 2]}, "old_values"),
    ],
)
def test_bad_row_lcr_fields_are_named(change, field) -> None:
    with pytest.raises(MessageError) as info:
        message_from_json(ROW | change)
    assert info.value.field == field


def test_a_user_message_needs_a_payload_and_a_text_type() -> None:
    with pytest.raises(MessageError) as info:
        message_from_json({"kind": "user", "type_name": "T"})
    assert info.value.field == "payload"
    with pytest.raises(MessageError) as info:
        message_from_json({"kind": "user", "type_name": 3, "payload": {}})
    assert info.value.field == "type_name"


def test_not_json_or_not_an_object_is_refused() -> None:
    with pytest.raises(MessageError, match="not valid JSON"):
        message_from_json("{oops")
    with pytest.raises(MessageError, match="JSON object"):
        message_from_json("[1]")


def test_queue_payloads_load_as_the_same_messages() -> None:
    row_payload = {k: v for k, v in ROW.items() if k != "kind"} | {"transaction_id": "1.2.3"}
    assert message_from_queue("ROW_LCR", "", row_payload) == message_from_json(ROW)
    assert message_from_queue("ROW_LCR", None, json.dumps(row_payload)) == message_from_json(ROW)
    ddl_payload = {k: v for k, v in DDL.items() if k != "kind"}
    assert message_from_queue("DDL_LCR", "", ddl_payload) == message_from_json(DDL)
    user = message_from_queue("USER", "ORDERS", {"id": 1})
    assert user == UserMessage("ORDERS", {"id": 1})
    with pytest.raises(MessageError) as info:
        message_from_queue("BLOB", "", {})
    assert info.value.field == "kind"


def test_each_message_binds_only_the_variables_of_its_kind() -> None:
    row, ddl = message_from_json(ROW), message_from_json(DDL)
    user = UserMessage("T", {"x": 1})
    assert bindings_for(row) == {"DML": row, "DDL": None, "MSG": None}
    assert bindings_for(ddl) == {"DML": None, "DDL": ddl, "MSG": None}
    assert bindings_for(user, user_variable='"VAR$_52"') == {
        "DML": None,
        "DDL": None,
        "MSG": user,
        "VAR$_52": user,
    }


def test_variable_names_are_canonical() -> None:
    assert variable_name(":dml") == variable_name("DML") == variable_name(':"DML"') == "DML"
    assert variable_name(':"VAR$_52"') == variable_name("var$_52") == "VAR$_52"
    assert variable_name('"MixedCase"') == "MixedCase"
    with pytest.raises(ValueError):
        variable_name("not a name")


def test_a_queued_user_payload_that_is_a_json_string_stays_a_string():
    from rules.lang import bindings_for, compile_python, message_from_queue, parse

    message = message_from_queue("USER", "T", "02")
    rule = compile_python(parse(":msg = '02'"))
    assert rule(bindings_for(message)) is True


def test_a_date_that_an_offset_pushes_out_of_range_is_null_not_an_error():
    from rules.lang.values import to_date

    assert to_date("0001-01-01T00:00+01:00") is None
    assert to_date("9999-12-31T23:59-01:00") is None
