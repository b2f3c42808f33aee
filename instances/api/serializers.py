from rest_framework import serializers

from instances.choices import InstanceStatus
from instances.models import Instance


class InstanceSerializer(serializers.ModelSerializer):
    status = serializers.ChoiceField(choices=InstanceStatus.choices, read_only=True)
    workers = serializers.SerializerMethodField()

    class Meta:
        model = Instance
        fields = ["inst_id", "name", "host", "status", "started_at", "last_heartbeat", "workers"]
        read_only_fields = fields

    def get_workers(self, obj: Instance) -> list[str]:
        """The workers that beat within the limit (none while DOWN)."""
        return sorted(obj.workers) if getattr(obj, "status", "") == InstanceStatus.UP else []
