from rest_framework import serializers

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
