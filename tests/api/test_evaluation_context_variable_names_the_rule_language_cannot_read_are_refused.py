"""An evaluation-context variable must have a name a rule condition can refer to: ``0`` or
``a b`` is refused with a 400 naming the variable, and a bad name already stored breaks no rule."""

from __future__ import annotations

import pytest

from rules.models import EvaluationContext, EvaluationContextVariable, Rule


@pytest.mark.parametrize("name", ["0", "1abc", "a b", "x-y", ":", "\u00b9"])
def test_a_variable_name_the_language_cannot_read_is_a_400_naming_it(admin_api, snapshot, name):
    before = snapshot()

    response = admin_api.post(
        "/api/evaluation-contexts/",
        {
            "name": "CTX_BAD",
            "variables": [
                {"name": "ok", "variable_type": "SYS.LCR$_ROW_RECORD"},
                {"name": name, "variable_type": "SYS.LCR$_ROW_RECORD"},
            ],
        },
        format="json",
    )

    assert response.status_code == 400, response.content
    assert "variables[1].name" in response.json(), response.json()
    assert not EvaluationContext.objects.filter(name="CTX_BAD").exists()
    before.assert_unchanged()


@pytest.mark.parametrize("name", ["dml", '"VAR$_52"', ":ddl"])
def test_names_the_language_reads_are_taken(admin_api, name):
    response = admin_api.post(
        "/api/evaluation-contexts/",
        {"name": "CTX_OK", "variables": [{"name": name, "variable_type": "SYS.LCR$_ROW_RECORD"}]},
        format="json",
    )

    assert response.status_code == 201, response.content


def test_a_bad_name_already_stored_does_not_break_the_rules_of_its_context(admin_api):
    ctx = EvaluationContext.objects.create(name="CTX_OLD")
    # Stored before names were checked: no condition can name it, and none needs to.
    EvaluationContextVariable.objects.create(
        context=ctx, name="0", variable_type="SYS.LCR$_ROW_RECORD"
    )
    EvaluationContextVariable.objects.create(
        context=ctx, name="DML", variable_type="SYS.LCR$_ROW_RECORD"
    )

    created = admin_api.post(
        "/api/rules/",
        {
            "name": "R_OLD",
            "condition": ":dml.get_object_name() = 'T'",
            "evaluation_context": "CTX_OLD",
        },
        format="json",
    )
    naming_it = admin_api.post(
        "/api/rules/",
        {
            "name": "R_ZERO",
            "condition": ":\"0\".get_object_name() = 'T'",
            "evaluation_context": "CTX_OLD",
        },
        format="json",
    )

    assert created.status_code == 201, created.content
    assert naming_it.status_code == 400, naming_it.content
    assert "condition" in naming_it.json()
    assert not Rule.objects.filter(name="R_ZERO").exists()
