from __future__ import annotations

import json
from typing import Any

from django import forms

from core.forms import JSONTextField
from rules.choices import DeclarativeType, ValueType, VariableType
from rules.models import Rule, RuleSet


class RuleForm(forms.ModelForm):
    action_context = JSONTextField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "class": "font-monospace"}),
        help_text="A JSON object of name/value pairs handed back on TRUE.",
    )

    class Meta:
        model = Rule
        # The condition comes last: the live check is shown right under it, above Save.
        fields = ["name", "evaluation_context", "action_context", "comment", "condition"]
        widgets = {
            "condition": forms.Textarea(
                attrs={"rows": 4, "class": "font-monospace", "spellcheck": "false"}
            ),
            "comment": forms.Textarea(attrs={"rows": 2}),
        }

    def clean_action_context(self) -> dict:
        value = self.cleaned_data.get("action_context") or {}
        if not isinstance(value, dict):
            raise forms.ValidationError("Give a JSON object of name/value pairs.")
        return value


class RuleEditForm(RuleForm):
    class Meta(RuleForm.Meta):
        fields = ["evaluation_context", "action_context", "comment", "condition"]


class RuleSetForm(forms.ModelForm):
    class Meta:
        model = RuleSet
        fields = ["name", "evaluation_context", "comment"]
        widgets = {"comment": forms.Textarea(attrs={"rows": 2})}


class RuleSetEditForm(forms.ModelForm):
    class Meta:
        model = RuleSet
        fields = ["evaluation_context", "comment"]
        widgets = {"comment": forms.Textarea(attrs={"rows": 2})}


class RuleSetMemberForm(forms.Form):
    rule = forms.ModelChoiceField(queryset=Rule.objects.order_by("name"))
    enabled = forms.BooleanField(required=False, initial=True)


class EvaluationContextForm(forms.Form):
    name = forms.CharField(max_length=128)
    variables = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "class": "font-monospace"}),
        help_text=(
            "One variable per line: NAME TYPE, where TYPE is SYS.LCR$_ROW_RECORD, "
            "SYS.LCR$_DDL_RECORD or the name of a user message type."
        ),
    )
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def clean_variables(self) -> list[dict[str, str]]:
        out = []
        for n, line in enumerate(self.cleaned_data["variables"].splitlines(), start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 2:
                raise forms.ValidationError(f"Line {n}: write NAME TYPE.")
            name, vtype = parts
            if vtype.upper() in (VariableType.ROW_LCR, VariableType.DDL_LCR):
                out.append({"name": name, "variable_type": vtype.upper()})
            else:
                out.append({"name": name, "variable_type": VariableType.USER, "user_type": vtype})
        if not out:
            raise forms.ValidationError("Declare at least one variable.")
        return out


class TestMessageForm(forms.Form):
    """A message to try rules on (a queued message is tried from its queue's page)."""

    message = JSONTextField(
        widget=forms.Textarea(attrs={"rows": 8, "class": "font-monospace"}),
        help_text='{"kind": "row_lcr" | "ddl_lcr" | "user", …} as in `manage.py rules eval`.',
    )
    negative_rule_set = forms.ModelChoiceField(
        queryset=RuleSet.objects.order_by("name"),
        required=False,
        help_text="Optional: a negative rule set evaluated first.",
    )


# --- rule-based transformations ------------------------------------------------------------------


class DeclarativeTransformationForm(forms.Form):
    """One declarative transformation; fill the names its type takes (the service says which are
    missing or do not apply)."""

    declarative_type = forms.ChoiceField(choices=DeclarativeType.choices)
    step_number = forms.IntegerField(
        min_value=0,
        initial=0,
        required=False,
        help_text="0 keeps Oracle's default order; otherwise lower steps run first.",
    )
    value_type = forms.ChoiceField(
        choices=[("", "Default (NEW for add column, * otherwise)"), *ValueType.choices],
        required=False,
    )
    column_name = forms.CharField(max_length=128, required=False, help_text="Delete / add column.")
    column_list = forms.CharField(
        max_length=4000, required=False, help_text="Keep columns: names separated by commas."
    )
    column_value = forms.CharField(
        max_length=4000,
        required=False,
        help_text='Add column: a JSON value (2, "text", null); unquoted text is taken as text.',
    )
    from_column_name = forms.CharField(max_length=128, required=False)
    to_column_name = forms.CharField(max_length=128, required=False)
    from_table_name = forms.CharField(max_length=257, required=False, help_text="schema.table")
    to_table_name = forms.CharField(max_length=257, required=False, help_text="schema.table")
    from_schema_name = forms.CharField(max_length=128, required=False)
    to_schema_name = forms.CharField(max_length=128, required=False)

    def clean_column_list(self) -> list[str]:
        text = self.cleaned_data.get("column_list") or ""
        return [c.strip() for c in text.split(",") if c.strip()]

    def clean_column_value(self) -> Any:
        text = (self.cleaned_data.get("column_value") or "").strip()
        if not text:
            return None
        try:
            return json.loads(text)
        except ValueError:
            return text  # a bare word is text, as a user typing ACTIVE means it

    def params(self) -> dict[str, Any]:
        """The service's keyword arguments: only what was filled in."""
        d = self.cleaned_data
        out: dict[str, Any] = {
            "declarative_type": d["declarative_type"],
            "step_number": d.get("step_number") or 0,
        }
        for name, value in d.items():
            if name not in out and value not in (None, "", []):
                out[name] = value
        if d["declarative_type"] == DeclarativeType.ADD_COLUMN:
            out["column_value"] = d.get("column_value")  # an empty box adds a NULL column
        return out


class CustomTransformationForm(forms.Form):
    function = forms.ChoiceField(
        choices=(),
        help_text="A Python callable registered in the AQ_TRANSFORMATIONS setting.",
    )

    def __init__(self, *args: Any, registry: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["function"].choices = [
            (name, f"{name} ({path})") for name, path in sorted((registry or {}).items())
        ]


GENERATOR_FIELDS: dict[str, tuple[str, ...]] = {
    "global": (
        "include_dml",
        "include_ddl",
        "include_tagged_lcr",
        "source_database",
        "inclusion_rule",
        "and_condition",
        "rule_set",
    ),
    "schema": (
        "schema_name",
        "include_dml",
        "include_ddl",
        "include_tagged_lcr",
        "source_database",
        "inclusion_rule",
        "and_condition",
        "rule_set",
    ),
    "table": (
        "table_name",
        "include_dml",
        "include_ddl",
        "include_tagged_lcr",
        "source_database",
        "inclusion_rule",
        "and_condition",
        "rule_set",
    ),
    "subset": ("table_name", "dml_condition", "include_tagged_lcr", "source_database", "rule_set"),
    "message": ("message_type", "rule_condition", "inclusion_rule", "rule_set"),
    "exclude_table": (
        "table_name",
        "include_dml",
        "include_ddl",
        "include_tagged_lcr",
        "source_database",
        "rule_set",
        "negative_rule_set",
    ),
}
GENERATOR_TITLES = {
    "global": "ADD_GLOBAL_RULES",
    "schema": "ADD_SCHEMA_RULES",
    "table": "ADD_TABLE_RULES",
    "subset": "ADD_SUBSET_RULES",
    "message": "ADD_MESSAGE_RULE",
    "exclude_table": "Exclude a table from a schema",
}


class GeneratorForm(forms.Form):
    """One DBMS_STREAMS_ADM generator; the fields are Oracle's parameter names, and only those
    of the chosen kind are shown."""

    schema_name = forms.CharField(max_length=128, help_text="e.g. hr")
    table_name = forms.CharField(max_length=257, help_text="schema.table, e.g. hr.locations")
    include_dml = forms.BooleanField(required=False, initial=True)
    include_ddl = forms.BooleanField(required=False, initial=False)
    include_tagged_lcr = forms.BooleanField(
        required=False, initial=False, help_text="Also take changes that carry a Streams tag."
    )
    source_database = forms.CharField(
        max_length=256, required=False, help_text="e.g. dbs1.example.com"
    )
    inclusion_rule = forms.BooleanField(
        required=False,
        initial=True,
        help_text="Ticked: positive rule set. Unticked: negative rule set (discard).",
    )
    and_condition = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "class": "font-monospace"}),
        help_text="Extra condition on :lcr, e.g. :lcr.get_tag() = HEXTORAW('02')",
    )
    dml_condition = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2, "class": "font-monospace"}),
        help_text="Row subset, e.g. region_id=2",
    )
    message_type = forms.CharField(max_length=257, help_text="owner.type, e.g. strmadmin.order_t")
    rule_condition = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2, "class": "font-monospace"}),
        help_text="On :msg, e.g. :msg.region = 'EUROPE' AND :msg.priority = '1'",
    )
    rule_set = forms.CharField(
        max_length=128,
        required=False,
        help_text="Rule set to add the rules to (created when absent).",
    )
    negative_rule_set = forms.CharField(
        max_length=128, required=False, help_text="Negative rule set (created when absent)."
    )

    def __init__(self, *args: Any, kind: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.kind = kind
        keep = GENERATOR_FIELDS[kind]
        for name in list(self.fields):
            if name not in keep:
                del self.fields[name]

    def params(self) -> dict[str, Any]:
        """The generator's keyword arguments (blank optional text means Oracle's NULL)."""
        out = {}
        for k, v in self.cleaned_data.items():
            if k in ("rule_set", "negative_rule_set"):
                continue
            out[k] = v if v != "" else None
        if self.kind == "message":
            out.pop("include_dml", None)
        return {k: v for k, v in out.items() if v is not None}
