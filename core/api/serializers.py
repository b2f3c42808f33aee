from collections.abc import Mapping
from typing import Any

from django.db import models
from rest_framework import serializers

from core.api.fields import JSONField
from core.models import ChangeLogEntry


class ChangeLogEntrySerializer(serializers.ModelSerializer):
    class Meta:
        model = ChangeLogEntry
        fields = [
            "id",
            "time",
            "username",
            "action",
            "verb",
            "object_type",
            "object_id",
            "object_repr",
            "before",
            "after",
        ]


class ModelSerializer(serializers.ModelSerializer):
    """DRF's, with a model's JSONField served by :class:`core.api.fields.JSONField` (the JSON
    parser's checks also for JSON given as text in a form body)."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.JSONField: JSONField,
    }


class KnownFieldsOnly(serializers.Serializer):
    """Refuses a key the serializer has no field for, naming it. DRF drops such keys without a
    word: for a message that means a misspelt property (``priorty``) or one given at the wrong
    level (``delivery_mode`` inside a message) is stored as its default, and a message cannot be
    taken back."""

    # The request schema says so (additionalProperties: false; core.api.schema.AutoSchema).
    schema_closed = True
    # What a form post of DRF's browsable API adds to the fields.
    FORM_KEYS = frozenset({"csrfmiddlewaretoken"})

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            # context["other_keys"]: keys of the same body that another serializer reads.
            other = self.FORM_KEYS.union(self.context.get("other_keys", ()))
            unknown = sorted(str(k) for k in data if k not in self.fields and k not in other)
            if unknown:
                known = ", ".join(name for name, f in self.fields.items() if not f.read_only)
                raise serializers.ValidationError(
                    {k: [f"Unknown field: this request takes {known}."] for k in unknown}
                )
        return super().to_internal_value(data)


class BulkRequestSerializer(serializers.Serializer):
    """The body of ``POST /api/<list>/bulk/`` (the schema's; core.bulk checks the body itself,
    with the same messages as the list page)."""

    action = serializers.CharField(help_text="One of the list's bulk verbs.")
    ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        min_length=1,
        max_length=500,
        required=False,
        help_text="The objects' ids; each is done on its own, in this order. Or give ``filter``.",
    )
    filter = serializers.DictField(
        required=False,
        help_text='Instead of ids: the list endpoint\'s filter parameters (``{"kind": '
        '"NORMAL", "q": "ORD"}``); every object they match when the action runs, at '
        "most AQ_BULK_MAX (10,000). A bad parameter is a 400 naming ``filter.<param>``.",
    )
    expected_count = serializers.IntegerField(
        required=False,
        min_value=0,
        help_text="How many objects the client saw; if the action would take another number, "
        "409 with the actual ``count`` and nothing is done.",
    )


class BulkOutcomeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    outcome = serializers.ChoiceField(choices=["done", "refused"])
    detail = serializers.CharField(help_text="What was done, or the service's reason to refuse.")
    code = serializers.CharField(required=False, help_text="The refusal's code (refused only).")


class BulkResultSerializer(serializers.Serializer):
    action = serializers.CharField()
    done = serializers.IntegerField()
    refused = serializers.IntegerField()
    results = BulkOutcomeSerializer(many=True)
