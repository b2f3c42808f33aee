"""The client pipeline (spec/rules.md §2.3, §4, §7.3): decide, then on a positive rule's hit run
row migration → declarative → custom. Nothing runs on DISCARD, nor for a negative-set hit."""

from __future__ import annotations

from typing import Any

import pytest

from rules.lang import RuleSetSpec, compile_rule
from rules.lang.generators import subset_rules
from rules.lang.pipeline import (
    CUSTOM,
    DECLARATIVE,
    ROW_MIGRATION,
    RuleTransforms,
    apply,
    apply_rules,
    message_to_json,
)
from rules.lang.transform import TransformationError, declarative
from rules.lang.values import DdlLCR, RowLCR, UserMessage, message_from_json

SRC = "DBS1.EXAMPLE.COM"
REGIONS = ":dml.get_object_owner() = 'HR' AND :dml.get_object_name() = 'REGIONS'"


def _regions(command: str, old: dict[str, Any], new: dict[str, Any]) -> RowLCR:
    return RowLCR(SRC, command, "HR", "REGIONS", None, old, new)


def _subset_set() -> tuple[RuleSetSpec, dict[str, dict[str, str]]]:
    """The seed's three subset rules on hr.regions (region_id = 2), with their action contexts."""
    generated = subset_rules(
        table_name="hr.regions", dml_condition="region_id=2", source_database="dbs1.example.com"
    )
    names = {f"REGIONS_{r.subsetting_operation}": r for r in generated}
    spec = RuleSetSpec([compile_rule(n, r.condition) for n, r in names.items()])
    return spec, {n: r.action_context for n, r in names.items()}


class Recorder:
    """A custom transformation that remembers what it was given and returns a changed copy."""

    def __init__(self, result: Any = "copy") -> None:
        self.seen: list[Any] = []
        self.result = result

    def __call__(self, message: Any) -> Any:
        self.seen.append(message)
        if self.result != "copy":
            return self.result
        return RowLCR(
            message.source_database_name,
            message.command_type,
            message.object_owner,
            message.object_name,
            message.tag,
            message.old_values,
            {**message.new_values, "SEEN_BY_CUSTOM": "Y"},
        )


def test_row_migration_runs_before_declarative_before_custom():
    positive, contexts = _subset_set()
    custom = Recorder()
    specs = {
        "REGIONS_INSERT": RuleTransforms(
            action_context=contexts["REGIONS_INSERT"],
            # Only an INSERT carries REGION_NAME in its new values: proves migration ran first.
            declarative=(
                declarative("RENAME COLUMN", from_column_name="REGION_NAME", to_column_name="NAME"),
            ),
            custom=custom,
            custom_name="RECORDER",
        )
    }
    lcr = _regions("UPDATE", {"REGION_ID": 4, "REGION_NAME": "Asia"}, {"REGION_ID": 2})

    result = apply(lcr, positive=positive, negative=None, transformations_for=specs)

    assert result.action == "PERFORM"
    assert result.rule.name == "REGIONS_INSERT"
    assert [s.kind for s in result.steps] == [ROW_MIGRATION, DECLARATIVE, CUSTOM]
    assert result.steps[0].detail == "INSERT rule: UPDATE → INSERT"
    [given] = custom.seen
    assert given.command_type == "INSERT"
    assert given.new_values == {"REGION_ID": 2, "NAME": "Asia"}  # declarative ran before custom
    assert result.message_out.new_values == {"REGION_ID": 2, "NAME": "Asia", "SEEN_BY_CUSTOM": "Y"}
    assert lcr.command_type == "UPDATE"
    assert lcr.old_values == {"REGION_ID": 4, "REGION_NAME": "Asia"}


def test_an_update_leaving_the_subset_becomes_a_delete_and_new_value_steps_then_find_nothing():
    positive, contexts = _subset_set()
    specs = {
        name: RuleTransforms(
            action_context=ctx,
            declarative=(declarative("ADD COLUMN", column_name="SRC", column_value="dbs1"),),
        )
        for name, ctx in contexts.items()
    }
    lcr = _regions("UPDATE", {"REGION_ID": 2, "REGION_NAME": "Americas"}, {"REGION_ID": 1})

    result = apply(lcr, positive=positive, negative=None, transformations_for=specs)

    out = result.message_out
    assert (result.rule.name, out.command_type) == ("REGIONS_DELETE", "DELETE")
    assert out.old_values == {"REGION_ID": 2, "REGION_NAME": "Americas"}
    assert out.new_values == {}  # ADD COLUMN (NEW) does not invent new values for a DELETE
    assert result.steps[1].changed is False


def test_nothing_runs_when_no_positive_rule_is_true():
    positive, _ = _subset_set()
    asked: list[str] = []

    def lookup(name: str) -> RuleTransforms:
        asked.append(name)
        return RuleTransforms(custom=Recorder())

    lcr = _regions("UPDATE", {"REGION_ID": 1}, {"REGION_ID": 1})  # the seed's "ignored" update
    result = apply(lcr, positive=positive, negative=None, transformations_for=lookup)

    assert (result.action, result.message_out, result.steps) == ("DISCARD", None, ())
    assert result.reason == "no positive rule is TRUE"
    assert asked == []


def test_a_negative_hit_discards_and_its_rules_transformations_never_run():
    rule = compile_rule("REGIONS_ANY", REGIONS)
    negative = RuleSetSpec([rule])
    positive = RuleSetSpec([rule])
    custom = Recorder()
    specs = {"REGIONS_ANY": RuleTransforms(custom=custom)}

    result = apply(
        _regions("INSERT", {}, {"REGION_ID": 2}),
        positive=positive,
        negative=negative,
        transformations_for=specs,
    )

    assert (result.action, result.message_out, result.steps) == ("DISCARD", None, ())
    assert result.rule.name == "REGIONS_ANY"
    assert result.reason == "negative rule REGIONS_ANY is TRUE"
    assert custom.seen == []


def test_without_a_positive_rule_set_the_message_passes_untransformed():
    lcr = _regions("INSERT", {}, {"REGION_ID": 2})
    result = apply(
        lcr,
        positive=None,
        negative=RuleSetSpec([]),
        transformations_for=lambda name: pytest.fail(f"asked for {name}"),
    )
    assert (result.action, result.message_out, result.rule) == ("PERFORM", lcr, None)


def test_an_empty_positive_rule_set_discards():
    result = apply(
        _regions("INSERT", {}, {}), positive=RuleSetSpec([]), negative=None, transformations_for={}
    )
    assert (result.action, result.message_out) == ("DISCARD", None)


def test_a_rule_without_transformations_passes_the_message_as_it_is():
    lcr = _regions("INSERT", {}, {"REGION_ID": 2})
    positive = RuleSetSpec([compile_rule("R", REGIONS)])
    result = apply_rules(lcr, positive=positive, negative=None, transformations_for={})
    assert (result.action, result.message_out, result.steps) == ("PERFORM", lcr, ())


def test_only_the_first_true_positive_rule_transforms():
    positive = RuleSetSpec([compile_rule("FIRST", REGIONS), compile_rule("SECOND", REGIONS)])
    first, second = Recorder(), Recorder()
    specs = {"FIRST": RuleTransforms(custom=first), "SECOND": RuleTransforms(custom=second)}
    apply(
        _regions("INSERT", {}, {"A": 1}),
        positive=positive,
        negative=None,
        transformations_for=specs,
    )
    assert (len(first.seen), len(second.seen)) == (1, 0)


def test_a_custom_transformation_returning_none_discards_the_message():
    positive = RuleSetSpec([compile_rule("R", REGIONS)])
    specs = {"R": RuleTransforms(custom=Recorder(result=None), custom_name="DROP_ALL")}

    result = apply(
        _regions("INSERT", {}, {"A": 1}),
        positive=positive,
        negative=None,
        transformations_for=specs,
    )

    assert (result.action, result.message_out) == ("DISCARD", None)
    assert "custom transformation DROP_ALL discarded the message" in result.reason
    assert [s.kind for s in result.steps] == [CUSTOM]


def test_a_custom_transformation_that_fails_names_the_rule():
    def boom(message: Any) -> Any:
        raise RuntimeError("no")

    positive = RuleSetSpec([compile_rule("R", REGIONS)])
    with pytest.raises(TransformationError, match="BOOM of rule R failed"):
        apply(
            _regions("INSERT", {}, {}),
            positive=positive,
            negative=None,
            transformations_for={"R": RuleTransforms(custom=boom, custom_name="BOOM")},
        )


def test_a_custom_transformation_must_return_a_message():
    positive = RuleSetSpec([compile_rule("R", REGIONS)])
    with pytest.raises(TransformationError, match="returned int"):
        apply(
            _regions("INSERT", {}, {}),
            positive=positive,
            negative=None,
            transformations_for={"R": RuleTransforms(custom=Recorder(result=42))},
        )


def test_custom_transformations_may_change_ddl_lcrs_where_declarative_ones_do_nothing():
    ddl = DdlLCR(SRC, "CREATE TABLE", "TABLE", "HR", "REGIONS", ddl_text="CREATE TABLE ...")
    positive = RuleSetSpec([compile_rule("DDL_R", ":ddl.get_object_owner() = 'HR'")])

    def rename_owner(message: DdlLCR) -> DdlLCR:
        return DdlLCR(
            message.source_database_name,
            message.command_type,
            message.object_type,
            "HR_COPY",
            message.object_name,
            ddl_text=message.ddl_text,
        )

    spec = RuleTransforms(
        declarative=(declarative("RENAME SCHEMA", from_schema_name="HR", to_schema_name="X"),),
        custom=rename_owner,
    )
    result = apply(ddl, positive=positive, negative=None, transformations_for={"DDL_R": spec})

    assert result.message_out.object_owner == "HR_COPY"
    assert [s.kind for s in result.steps] == [CUSTOM]


def test_results_serialise_back_to_the_message_json_shape():
    lcr = message_from_json(
        {
            "kind": "row_lcr",
            "source_database_name": SRC,
            "command_type": "UPDATE",
            "object_owner": "HR",
            "object_name": "REGIONS",
            "tag": "1A02",
            "old_values": {"REGION_ID": 2.5, "NAME": "x"},
            "new_values": {"AT": "2024-05-01 10:00:00"},
        }
    )
    assert message_from_json(message_to_json(lcr)) == lcr
    user = UserMessage("ORDER", {"id": 1, "lines": [{"sku": "A"}]})
    assert message_to_json(user) == {
        "kind": "user",
        "type_name": "ORDER",
        "payload": {"id": 1, "lines": [{"sku": "A"}]},
    }
