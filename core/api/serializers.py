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
