"""Message builders (the JSON the API and the "Test a message" form take) and a snapshot of the
rules tables, to prove a refused request changed nothing."""

from __future__ import annotations

from typing import Any

from core.models import ChangeLogEntry
from rules.models import EvaluationContext, EvaluationContextVariable, Rule, RuleSetRule
from tests.rules.lang_seed import SRC


def row_lcr(
    command: str = "INSERT",
    owner: str = "HR",
    name: str = "DEPARTMENTS",
    *,
    tag: str | None = None,
    src: str = SRC,
    old: dict[str, Any] | None = None,
    new: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "kind": "row_lcr",
        "source_database_name": src,
        "command_type": command,
        "object_owner": owner,
        "object_name": name,
        "tag": tag,
        "old_values": old or {},
        "new_values": new or {},
    }


def ddl_lcr(
    command: str,
    object_type: str,
    owner: str | None,
    name: str | None,
    *,
    base_owner: str | None = None,
    base_name: str | None = None,
    tag: str | None = None,
    src: str = SRC,
) -> dict[str, Any]:
    return {
        "kind": "ddl_lcr",
        "source_database_name": src,
        "command_type": command,
        "object_type": object_type,
        "object_owner": owner,
        "object_name": name,
        "base_table_owner": base_owner,
        "base_table_name": base_name,
        "ddl_text": f"{command} ...",
        "tag": tag,
    }


def user_message(type_name: str, **payload: Any) -> dict[str, Any]:
    return {"kind": "user", "type_name": type_name, "payload": payload}


class RulesSnapshot:
    """Everything a rules write could touch, including the change log."""

    def __init__(self) -> None:
        self.values = self.take()

    @staticmethod
    def take() -> dict[str, object]:
        from rules.models import RuleSet

        return {
            "contexts": sorted(EvaluationContext.objects.values_list("name", "comment")),
            "variables": sorted(
                EvaluationContextVariable.objects.values_list(
                    "context__name", "name", "variable_type", "user_type"
                )
            ),
            "rules": sorted(
                Rule.objects.values_list(
                    "name", "condition", "evaluation_context__name", "comment", "classification"
                )
            ),
            "rule_sets": sorted(RuleSet.objects.values_list("name", "comment", "updated")),
            "members": sorted(
                RuleSetRule.objects.values_list("rule_set__name", "rule__name", "enabled")
            ),
            "changelog": ChangeLogEntry.objects.count(),
        }

    def assert_unchanged(self) -> None:
        assert self.take() == self.values


def assert_form_error(response, field: str, *texts: str) -> str:  # type: ignore[no-untyped-def]
    """The page came back (400) with an error on ``field`` containing each of ``texts``."""
    html = response.content.decode()
    assert response.status_code == 400, html[:3000]
    errors = [chunk.split("</div>", 1)[0] for chunk in html.split(f'data-field="{field}">')[1:]]
    assert errors, html[:5000]
    for text in texts:
        assert any(text in e for e in errors), (text, errors)
    return html
