"""Custom transformations come only from the registry (AQ_TRANSFORMATIONS): a name it lacks is
refused and nothing is imported for it, whatever the name looks like."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from rules.lang.transform import TransformationError, resolve
from rules.lang.values import RowLCR, UserMessage
from rules.transformations_examples import mask_column, mask_phone_number, upper_last_name

NOT_A_CALLABLE = 42


def shout(message: Any) -> Any:
    return message


REGISTRY = {
    "SHOUT": "tests.rules.test_transformations_custom.shout",
    "COLON_FORM": "tests.rules.test_transformations_custom:shout",
    "MISSING_MODULE": "tests.rules.no_such_module.fn",
    "MISSING_ATTR": "tests.rules.test_transformations_custom.whisper",
    "NOT_CALLABLE": "tests.rules.test_transformations_custom.NOT_A_CALLABLE",
    "NO_DOT": "shout",
}


def test_a_registered_name_resolves_to_its_callable():
    assert resolve("SHOUT", REGISTRY) is shout
    assert resolve("COLON_FORM", REGISTRY) is shout


@pytest.mark.parametrize(
    "name",
    [
        "shout",  # names are exact
        "tests.rules.test_transformations_custom.shout",  # a registered path is not a name
        "wsgiref.simple_server.demo_app",
        "",
        None,
    ],
)
def test_a_name_the_registry_lacks_is_refused(name):
    with pytest.raises(TransformationError) as exc:
        resolve(name, REGISTRY)
    assert exc.value.field == "function"
    assert "not a registered transformation" in exc.value.message


def test_nothing_is_imported_for_a_name_the_registry_lacks():
    module = "wsgiref.simple_server"
    was_loaded = module in sys.modules
    with pytest.raises(TransformationError):
        resolve(f"{module}.demo_app", {})
    assert (module in sys.modules) == was_loaded


@pytest.mark.parametrize("name", ["MISSING_MODULE", "MISSING_ATTR", "NOT_CALLABLE", "NO_DOT"])
def test_a_broken_registry_entry_is_an_error_naming_the_entry(name):
    with pytest.raises(TransformationError) as exc:
        resolve(name, REGISTRY)
    assert exc.value.field == "function"
    assert name in exc.value.message


def test_the_shipped_registry_resolves():
    from django.conf import settings

    for name in settings.AQ_TRANSFORMATIONS:
        assert callable(resolve(name, settings.AQ_TRANSFORMATIONS))


# --- the shipped examples ------------------------------------------------------------------------


def _employee() -> RowLCR:
    return RowLCR(
        "DBS1.EXAMPLE.COM",
        "UPDATE",
        "HR",
        "EMPLOYEES",
        old_values={"LAST_NAME": "King", "PHONE_NUMBER": "515.123.4567"},
        new_values={"LAST_NAME": "de Gaulle", "PHONE_NUMBER": None},
    )


def test_upper_last_name_upper_cases_old_and_new_values_and_leaves_the_input():
    lcr = _employee()
    out = upper_last_name(lcr)
    assert (out.old_values["LAST_NAME"], out.new_values["LAST_NAME"]) == ("KING", "DE GAULLE")
    assert lcr.new_values["LAST_NAME"] == "de Gaulle"


def test_mask_phone_number_keeps_the_last_four_characters_and_nulls():
    out = mask_phone_number(_employee())
    assert out.old_values["PHONE_NUMBER"] == "********4567"
    assert out.new_values["PHONE_NUMBER"] is None


def test_examples_pass_other_messages_and_other_tables_columns_through():
    msg = UserMessage("ORDER", {"LAST_NAME": "x"})
    assert upper_last_name(msg) is msg
    no_column = RowLCR("D", "INSERT", "HR", "JOBS", new_values={"JOB_ID": "AD_PRES"})
    assert mask_column("PHONE_NUMBER", keep=0)(no_column) is no_column
