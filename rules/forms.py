from __future__ import annotations

from django import forms

from core.forms import JSONTextField
from rules.choices import VariableType
from rules.models import EvaluationContext, Rule, RuleSet


class RuleForm(forms.ModelForm):
    action_context = JSONTextField(
        required=False, help_text="A JSON object of name/value pairs handed back on TRUE."
    )

    class Meta:
        model = Rule
        fields = ["name", "condition", "evaluation_context", "action_context", "comment"]
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
        fields = ["condition", "evaluation_context", "action_context", "comment"]


class RuleSetForm(forms.ModelForm):
    class Meta:
        model = RuleSet
        fields = ["name", "evaluation_context", "comment"]
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


class ContextChoiceMixin:
    def limit_contexts(self) -> None:
        field = self.fields.get("evaluation_context")  # type: ignore[attr-defined]
        if field is not None:
            field.queryset = EvaluationContext.objects.order_by("name")
