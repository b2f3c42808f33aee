"""API shapes of the parallel app; the message fields are the queues API's own."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from parallel.models import LogicalQueue, LogicalQueuePartition
from parallel.selectors import logical_queue_warnings
from queues.api.serializers import DequeueSerializer, EnqueueSerializer
from queues.choices import SortOrder

ROUTING = ("instance", "key", "partition", "session")


class PartitionSerializer(serializers.ModelSerializer):
    """One mapping row (S003's queue_table_view): the instances are the queue table's."""

    logical_queue = serializers.CharField(source="logical_queue.name", read_only=True)
    queue = serializers.CharField(source="queue.name", read_only=True)
    queue_table = serializers.CharField(source="queue.queue_table.name", read_only=True)
    primary_instance = serializers.SerializerMethodField()
    secondary_instance = serializers.SerializerMethodField()
    active_instance = serializers.SerializerMethodField()
    active_status = serializers.SerializerMethodField()

    class Meta:
        model = LogicalQueuePartition
        fields = [
            "id",
            "logical_queue",
            "position",
            "queue",
            "queue_table",
            "primary_instance",
            "secondary_instance",
            "active_instance",
            "active_status",
            "purpose",
        ]
        read_only_fields = [f for f in fields if f != "purpose"]

    def _name(self, p: LogicalQueuePartition, role: str) -> str | None:
        inst = getattr(p.queue.queue_table, f"{role}_instance")
        return inst.name if inst else None

    def get_primary_instance(self, p: LogicalQueuePartition) -> str | None:
        return self._name(p, "primary")

    def get_secondary_instance(self, p: LogicalQueuePartition) -> str | None:
        return self._name(p, "secondary")

    def get_active_instance(self, p: LogicalQueuePartition) -> str | None:
        """The queue table's owner instance now: where clients of this partition go."""
        return self._name(p, "owner")

    def get_active_status(self, p: LogicalQueuePartition) -> str | None:
        return getattr(p, "active_status", None) if p.queue.queue_table.owner_instance else None


class PartitionUpdateSerializer(serializers.Serializer):
    purpose = serializers.CharField(max_length=200, allow_blank=True)


class LogicalQueueSerializer(serializers.ModelSerializer):
    partition_count = serializers.IntegerField(read_only=True)
    partitions = serializers.SerializerMethodField()
    warnings = serializers.SerializerMethodField()

    class Meta:
        model = LogicalQueue
        fields = ["id", "name", "comment", "partition_count", "partitions", "warnings", "created"]
        read_only_fields = ["id", "partition_count", "partitions", "warnings", "created"]

    def get_partitions(self, lq: LogicalQueue) -> list[dict[str, Any]]:
        from parallel.selectors import partition_list

        return PartitionSerializer(partition_list().filter(logical_queue=lq), many=True).data

    def get_warnings(self, lq: LogicalQueue) -> list[str]:
        """Instances named that no worker has reported, or that are down now."""
        return logical_queue_warnings(lq)


class LogicalQueueCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    partitions = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="How many physical queues (default 3 times the instances named: S003's 3N).",
    )
    instances = serializers.ListField(
        child=serializers.JSONField(),
        required=False,
        allow_null=True,
        help_text="Instance names or INST_IDs, in ring order (default: every known instance). "
        "A name no worker has reported is registered DOWN, with a warning.",
    )
    sort_order = serializers.ChoiceField(choices=SortOrder.choices, default=SortOrder.ENQ_TIME)
    comment = serializers.CharField(required=False, allow_blank=True, default="")
    purpose = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)


class LogicalQueueUpdateSerializer(serializers.Serializer):
    comment = serializers.CharField(allow_blank=True)


class RebuildSerializer(serializers.Serializer):
    instances = serializers.ListField(
        child=serializers.JSONField(),
        required=False,
        allow_null=True,
        help_text="The ring's instances (default: the instances up now).",
    )


class RoutingSerializer(serializers.Serializer):
    instance = serializers.CharField(
        required=False,
        allow_null=True,
        max_length=64,
        help_text="Fixed-client mode: the caller's instance. Left out: server mode, the "
        "instance of the process that answers (AQ_INSTANCE_NAME).",
    )
    key = serializers.CharField(
        required=False,
        allow_null=True,
        max_length=128,
        help_text="An ordered group: every message with this key goes to one partition.",
    )
    partition = serializers.CharField(
        required=False,
        allow_null=True,
        max_length=128,
        help_text="The partition the previous answer named: kept while it is active on the "
        "instance (the paper's session), else another is picked.",
    )
    session = serializers.UUIDField(
        required=False,
        allow_null=True,
        help_text="The client session the previous answer named: send it back so the calls "
        "count as one client and keep its partition. Left out: a new session. When its "
        "partition has moved to another instance since, the call is refused with 409 "
        "partition_moved (partition, from, to), once.",
    )


def _split(data: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    if not hasattr(data, "items"):
        raise serializers.ValidationError({"detail": ["Send a JSON object."]})
    routing = RoutingSerializer(data={k: v for k, v in data.items() if k in ROUTING})
    routing.is_valid(raise_exception=True)
    return dict(routing.validated_data), {k: v for k, v in data.items() if k not in ROUTING}


class LogicalEnqueueSerializer(EnqueueSerializer, RoutingSerializer):
    def to_internal_value(self, data: Any) -> dict[str, Any]:
        routing, rest = _split(data)
        return {**EnqueueSerializer().to_internal_value(rest), **routing}


class LogicalDequeueSerializer(DequeueSerializer, RoutingSerializer):
    ordered = serializers.BooleanField(
        default=False,
        help_text="One consumer at a time per partition, so each group's messages are consumed "
        "in enqueue order.",
    )


class PlacedSerializer(serializers.Serializer):
    partition = serializers.CharField(help_text="The physical queue used.")
    position = serializers.IntegerField()
    instance = serializers.CharField(allow_null=True, help_text="Its active instance.")
    ids = serializers.ListField(child=serializers.IntegerField())
    session = serializers.UUIDField(help_text="The client session: send it back.")


class RebuildResultSerializer(serializers.Serializer):
    instances = serializers.ListField(child=serializers.CharField())
    changed = serializers.ListField(child=serializers.CharField())


class PartitionBalanceSerializer(serializers.Serializer):
    position = serializers.IntegerField()
    partition_id = serializers.IntegerField()
    queue = serializers.CharField()
    queue_id = serializers.IntegerField()
    queue_table = serializers.CharField()
    primary_instance = serializers.CharField(allow_null=True)
    secondary_instance = serializers.CharField(allow_null=True)
    active_instance = serializers.CharField(allow_null=True)
    active_status = serializers.CharField()
    purpose = serializers.CharField(allow_blank=True)
    depth = serializers.IntegerField(help_text="Ready and waiting messages.")
    enqueued = serializers.IntegerField()
    dequeued = serializers.IntegerField()
    enqueue_rate = serializers.FloatField(
        allow_null=True, help_text="Per second, the latest monitoring sample (null before two)."
    )
    dequeue_rate = serializers.FloatField(allow_null=True)
    clients = serializers.IntegerField(help_text="Client sessions keeping this partition.")


class InstanceBalanceSerializer(serializers.Serializer):
    instance = serializers.CharField()
    status = serializers.CharField()
    partitions = serializers.IntegerField()
    depth = serializers.IntegerField()
    clients = serializers.IntegerField(help_text="Client sessions on this instance.")


class BalanceSerializer(serializers.Serializer):
    logical_queue = serializers.CharField()
    estimates = serializers.BooleanField(help_text="Always true: the figures are estimates.")
    partitions = PartitionBalanceSerializer(many=True)
    depth_max = serializers.IntegerField()
    depth_min = serializers.IntegerField()
    max_min_ratio = serializers.FloatField(
        allow_null=True, help_text="null: an empty partition beside a non-empty one."
    )
    ratio_limit = serializers.FloatField()
    balanced = serializers.BooleanField()
    instance = serializers.CharField(help_text="Whose least-loaded queue this is.")
    least_loaded_queue = serializers.CharField(allow_null=True)
    per_instance = InstanceBalanceSerializer(many=True)
    clients = serializers.IntegerField(
        help_text="Client sessions that made a call within session_lease_s."
    )
    session_lease_s = serializers.FloatField(help_text="AQ_PARALLEL_SESSION_LEASE_S.")
