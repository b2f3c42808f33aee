"""API shapes. Serializers validate input shape only; the services decide and write."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.fields import JSONField, JSONObjectField
from core.api.serializers import KnownFieldsOnly, ModelSerializer
from core.validators import name_validator
from instances.choices import InstanceStatus
from queues import engine
from queues.choices import (
    DeliveryMode,
    DequeueDeliveryMode,
    DequeueMode,
    MessageKind,
    MessageState,
    Navigation,
    Privilege,
    Visibility,
)
from queues.models import (
    Agent,
    Message,
    Queue,
    QueuePrivilege,
    QueueTable,
    QueueTableOwnerMove,
    Subscriber,
)
from queues.selectors import message_origin, queue_table_instance_warnings, tag_hex
from queues.services import QUEUE_TABLE_NAME_MAX, STREAMS_QUEUE, STREAMS_QUEUE_TABLE
from rules.models import RuleSet

User = get_user_model()


@extend_schema_field(
    {
        "oneOf": [{"type": "string", "maxLength": 64}, {"type": "integer", "minimum": 0}],
        "nullable": True,
        "description": "An instance name, an instance number (INST_ID; 0 = none) or null.",
    }
)
class InstanceRefField(serializers.Field):
    """In: an instance name, an instance number (INST_ID) or null (none), resolved by the
    service (a new name is registered DOWN). Out: the instance's name."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, bool) or not isinstance(data, str | int):
            raise serializers.ValidationError(
                "Give an instance name, an instance number (INST_ID) or null."
            )
        return data

    def to_representation(self, value: Any) -> Any:
        return value.name if value is not None else None


class InstanceBriefSerializer(serializers.Serializer):
    """Where a queue table's (or a queue's) background work and service are: its owner."""

    inst_id = serializers.IntegerField()
    name = serializers.CharField()
    host = serializers.CharField()
    status = serializers.ChoiceField(choices=InstanceStatus.choices)


def instance_brief(inst: Any, status: str | None) -> dict[str, Any] | None:
    """An owner instance as a client needs it: its number, name, host and UP/DOWN."""
    if inst is None:
        return None
    return {"inst_id": inst.inst_id, "name": inst.name, "host": inst.host, "status": status}


class QueueTableSerializer(ModelSerializer):
    owner = serializers.SlugRelatedField(
        slug_field="username",
        read_only=True,
        allow_null=True,
        help_text="The user who created it; null once that user is removed.",
    )
    queue_count = serializers.IntegerField(read_only=True)
    primary_instance = InstanceRefField(help_text="Owns the queue table while it is up.")
    secondary_instance = InstanceRefField(
        help_text="Owns it while the primary instance is down; never the primary."
    )
    owner_instance = serializers.SerializerMethodField()
    warnings = serializers.SerializerMethodField()

    @extend_schema_field(InstanceBriefSerializer(allow_null=True))
    def get_owner_instance(self, qt: QueueTable) -> dict[str, Any] | None:
        """The instance that owns it now (its background work runs there), or null: none up."""
        return instance_brief(qt.owner_instance, getattr(qt, "owner_instance_status", None))

    def get_warnings(self, qt: QueueTable) -> list[str]:
        """A primary or secondary instance that is down or was never reported by a worker."""
        return queue_table_instance_warnings(qt)

    class Meta:
        model = QueueTable
        fields = [
            "id",
            "name",
            "owner",
            "sort_order",
            "multiple_consumers",
            "message_grouping",
            "secure",
            "payload_type",
            "payload_schema",
            "primary_instance",
            "secondary_instance",
            "owner_instance",
            "warnings",
            "comment",
            "queue_count",
            "created",
            "updated",
        ]
        read_only_fields = ["created", "updated"]
        # Uniqueness is the service's call (case-insensitive, with a 409); the name rule stays.
        extra_kwargs = {
            "name": {"validators": [name_validator], "max_length": QUEUE_TABLE_NAME_MAX}
        }


class QueueTableUpdateSerializer(ModelSerializer):
    """The fixed properties are accepted so the service can refuse a change to them by name,
    rather than the API ignoring them and answering 200."""

    primary_instance = InstanceRefField()
    secondary_instance = InstanceRefField()

    class Meta:
        model = QueueTable
        fields = [
            "name",
            "sort_order",
            "multiple_consumers",
            "message_grouping",
            "secure",
            "payload_type",
            "comment",
            "payload_schema",
            "primary_instance",
            "secondary_instance",
        ]
        extra_kwargs = {"name": {"validators": [name_validator]}}


class QueueSerializer(serializers.ModelSerializer):
    queue_table = serializers.SlugRelatedField(slug_field="name", queryset=QueueTable.objects.all())
    exception_queue = serializers.SlugRelatedField(
        slug_field="name",
        queryset=Queue.objects.filter(kind="EXCEPTION_QUEUE"),
        required=False,
        allow_null=True,
    )
    depth_ready = serializers.IntegerField(read_only=True)
    depth_waiting = serializers.IntegerField(read_only=True)
    depth_processed = serializers.IntegerField(read_only=True)
    depth_expired = serializers.IntegerField(read_only=True)
    oldest_ready = serializers.DateTimeField(read_only=True, allow_null=True)
    enqueued = serializers.IntegerField(read_only=True)
    dequeued = serializers.IntegerField(read_only=True)
    network_name = serializers.CharField(
        source="service_name",
        read_only=True,
        help_text="DBA_QUEUES.NETWORK_NAME: the queue's service name (DBA_SERVICES.NAME).",
    )
    owner_instance = serializers.SerializerMethodField()

    @extend_schema_field(InstanceBriefSerializer(allow_null=True))
    def get_owner_instance(self, queue: Queue) -> dict[str, Any] | None:
        """Where the queue's service resolves: its queue table's owner instance (null: none up)."""
        return instance_brief(
            queue.queue_table.owner_instance, getattr(queue, "owner_status", None)
        )

    class Meta:
        model = Queue
        fields = [
            "id",
            "name",
            "queue_table",
            "kind",
            "exception_queue",
            "max_retries",
            "retry_delay",
            "retention_time",
            "enqueue_enabled",
            "dequeue_enabled",
            "comment",
            "network_name",
            "owner_instance",
            "depth_ready",
            "depth_waiting",
            "depth_processed",
            "depth_expired",
            "oldest_ready",
            "enqueued",
            "dequeued",
            "created",
            "updated",
        ]
        read_only_fields = ["created", "updated"]
        extra_kwargs = {"name": {"validators": [name_validator]}}


class QueueFlagsSerializer(serializers.Serializer):
    """START_QUEUE / STOP_QUEUE: which side; the body may be left out (both)."""

    what = serializers.ChoiceField(
        choices=["enqueue", "dequeue", "both"],
        default="both",
        error_messages={"invalid_choice": "Use enqueue, dequeue or both."},
    )


class QueueUpdateSerializer(serializers.ModelSerializer):
    """Name, queue table and kind are accepted so the service can refuse changing them by name."""

    queue_table = serializers.SlugRelatedField(
        slug_field="name", queryset=QueueTable.objects.all(), required=False
    )
    exception_queue = serializers.SlugRelatedField(
        slug_field="name",
        queryset=Queue.objects.filter(kind="EXCEPTION_QUEUE"),
        required=False,
        allow_null=True,
    )

    class Meta:
        model = Queue
        fields = [
            "name",
            "queue_table",
            "kind",
            "exception_queue",
            "max_retries",
            "retry_delay",
            "retention_time",
            "comment",
            "enqueue_enabled",
            "dequeue_enabled",
        ]
        extra_kwargs = {"name": {"validators": [name_validator]}}


class MessagePropertiesMixin(serializers.Serializer):
    """Origin site, route and tag of a message row or a dequeued message (docs/SITES.md)."""

    origin_site = serializers.SerializerMethodField(
        help_text="The GLOBAL_NAME of the site the message was enqueued at (this site's for a "
        "message enqueued here): Oracle's source database name."
    )
    route = serializers.SerializerMethodField(
        help_text="The sites the message left on its way here, in order (empty: enqueued here)."
    )
    tag = serializers.SerializerMethodField(
        help_text="Oracle's Streams tag as upper-case hexadecimal text, or null."
    )

    def get_origin_site(self, obj: Any) -> str:
        return message_origin(obj.origin_site)

    def get_route(self, obj: Any) -> list[str]:
        return list(obj.route or [])

    def get_tag(self, obj: Any) -> str | None:
        return tag_hex(obj.tag)


class MessageSerializer(MessagePropertiesMixin, serializers.ModelSerializer):
    queue = serializers.SlugRelatedField(slug_field="name", read_only=True)
    original_queue = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )

    class Meta:
        model = Message
        fields = [
            "id",
            "queue",
            "state",
            "priority",
            "kind",
            "type_name",
            "correlation",
            "sender",
            "headers",
            "payload",
            "enq_time",
            "enq_user",
            "delay_until",
            "expiration",
            "expire_at",
            "attempts",
            "pending_consumers",
            "original_queue",
            "exception_reason",
            "replayed",
            "delivery_mode",
            "in_buffer",
            "origin_site",
            "route",
            "tag",
        ]


class NewMessageSerializer(KnownFieldsOnly):
    payload = JSONField()
    priority = serializers.IntegerField(default=1, min_value=-(2**31), max_value=2**31 - 1)
    delay = serializers.FloatField(default=0, min_value=0)
    expiration = serializers.FloatField(required=False, allow_null=True, min_value=0)
    correlation = serializers.CharField(required=False, allow_blank=True, max_length=128)
    sender = serializers.CharField(required=False, allow_blank=True, max_length=128)
    headers = JSONObjectField(required=False)
    kind = serializers.ChoiceField(choices=MessageKind.choices, default=MessageKind.USER)
    type_name = serializers.CharField(required=False, allow_blank=True, max_length=128)
    recipients = serializers.ListField(
        child=serializers.CharField(max_length=128), required=False, allow_null=True
    )
    tag = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        trim_whitespace=True,
        help_text="Oracle's Streams tag (RAW(2000)) as hexadecimal text, such as 1F02; null or "
        "empty: no tag. Rules read it with :dml.get_tag() / :dml.is_null_tag(); it travels "
        "unchanged with the message through propagations.",
    )

    def to_message(self, data: dict[str, Any]) -> engine.NewMessage:
        data = dict(data)
        if not data.get("tag"):
            data.pop("tag", None)  # empty: no tag (an empty RAW is NULL)
        return engine.NewMessage(**data)


class EnqueueSerializer(KnownFieldsOnly):
    """Either one message (its fields at the top level) or ``messages``: a list, one transaction."""

    # The schema lists the list form's keys only; the one-message form has the message's too.
    schema_closed = False

    messages = NewMessageSerializer(many=True, required=False)
    visibility = serializers.ChoiceField(
        choices=Visibility.choices,
        required=False,
        allow_null=True,
        default=None,
        help_text="ON_COMMIT (the default for persistent messages) or IMMEDIATE. Buffered "
        "messages are always IMMEDIATE; ON_COMMIT with BUFFERED is refused (ORA-25298).",
    )
    delivery_mode = serializers.ChoiceField(
        choices=DeliveryMode.choices,
        default=DeliveryMode.PERSISTENT,
        help_text="PERSISTENT (logged, transactional) or BUFFERED: kept without WAL, visible at "
        "once, outside any transaction, and lost if the database crashes before it is "
        "dequeued or spilled. Refused with 409 flow_control (ORA-25307) while the queue's "
        "subscribers are behind.",
    )

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, Mapping) and "messages" not in data:
            call = ("visibility", "delivery_mode")
            single = NewMessageSerializer(data=data, context={"other_keys": call})
            single.is_valid(raise_exception=True)
            rest = super().to_internal_value({k: data[k] for k in call if k in data})
            return {"messages": [single.validated_data], **rest}
        out = super().to_internal_value(data)
        if not out.get("messages"):
            raise serializers.ValidationError({"messages": ["Give at least one message."]})
        return out


class EnqueueResultSerializer(serializers.Serializer):
    ids = serializers.ListField(child=serializers.IntegerField())


class DequeueSerializer(KnownFieldsOnly):
    mode = serializers.ChoiceField(choices=DequeueMode.choices, default=DequeueMode.REMOVE)
    navigation = serializers.ChoiceField(
        choices=Navigation.choices,
        default=Navigation.NEXT_MESSAGE,
        help_text="NEXT_MESSAGE (default) continues after `cursor`, or starts at the head without "
        "one; FIRST_MESSAGE always starts at the head. On TRANSACTIONAL queue tables NEXT_MESSAGE "
        "with `group_token` continues the group this consumer owns and NEXT_TRANSACTION skips the "
        "rest of it.",
    )
    group_token = serializers.UUIDField(
        required=False,
        allow_null=True,
        help_text="TRANSACTIONAL queue tables: the `group_token` of the previous answer, to go on "
        "with that transaction group (409 end_of_group once all of it was fetched).",
    )
    consumer_name = serializers.CharField(required=False, allow_null=True, max_length=128)
    correlation = serializers.CharField(required=False, allow_null=True, max_length=128)
    msgid = serializers.IntegerField(required=False, allow_null=True)
    batch = serializers.IntegerField(default=1, min_value=1, max_value=10_000)
    wait = serializers.FloatField(default=0, min_value=0, max_value=60)
    cursor = serializers.CharField(
        required=False,
        allow_null=True,
        help_text="The `cursor` of the previous answer: where NEXT_MESSAGE continues.",
    )
    condition = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text="Dequeue only messages this rule condition is TRUE for (AQ deq_condition).",
    )
    lease_seconds = serializers.FloatField(
        default=engine.DEFAULT_LEASE_S, min_value=1, max_value=86_400
    )
    delivery_mode = serializers.ChoiceField(
        choices=DequeueDeliveryMode.choices,
        default=DequeueDeliveryMode.PERSISTENT,
        help_text="Which messages: PERSISTENT (default, as in AQ), BUFFERED, or "
        "PERSISTENT_OR_BUFFERED. A REMOVE of buffered messages is immediate (outside any "
        "transaction); LOCKED takes persistent messages only.",
    )


class DequeuedMessageSerializer(MessagePropertiesMixin, serializers.Serializer):
    id = serializers.IntegerField()
    state = serializers.CharField()
    priority = serializers.IntegerField()
    kind = serializers.CharField()
    type_name = serializers.CharField()
    correlation = serializers.CharField()
    sender = serializers.CharField()
    headers = serializers.DictField()
    payload = JSONField()
    enq_time = serializers.DateTimeField()
    attempts = serializers.IntegerField()
    lock_token = serializers.UUIDField(allow_null=True)
    exception_reason = serializers.CharField()
    delivery_mode = serializers.ChoiceField(choices=DeliveryMode.choices)
    buffered_state = serializers.CharField(
        help_text="IN MEMORY or SPILLED for a buffered message (AQ$<queue table> MSG_STATE); "
        "empty for a persistent one."
    )
    transaction_group = serializers.IntegerField(
        allow_null=True, help_text="AQ's transaction_group: the enqueuing transaction's group."
    )
    group_position = serializers.IntegerField(
        allow_null=True, help_text="1-based place of the message in its transaction group."
    )
    group_size = serializers.IntegerField(
        allow_null=True,
        help_text="How many messages its transaction group has, as this consumer gets them "
        "(handed out before plus this answer's plus those left).",
    )
    last_in_group = serializers.BooleanField(
        help_text="True on the last message of its transaction group (AQ's end of group)."
    )
    group_token = serializers.UUIDField(
        allow_null=True, help_text="Owns the rest of the group: pass it to the next dequeue."
    )
    cursor = serializers.SerializerMethodField()

    def get_cursor(self, obj: engine.DequeuedMessage) -> str:
        return obj.position.token()


class DequeueResultSerializer(serializers.Serializer):
    messages = DequeuedMessageSerializer(many=True)
    cursor = serializers.CharField(allow_null=True)


class SetUpQueueSerializer(serializers.Serializer):
    """DBMS_STREAMS_ADM.SET_UP_QUEUE's parameters, with Oracle's defaults."""

    queue_table = serializers.CharField(
        default=STREAMS_QUEUE_TABLE, max_length=128, validators=[name_validator]
    )
    storage_clause = serializers.CharField(
        required=False, allow_null=True, allow_blank=True, help_text="Accepted and ignored."
    )
    queue_name = serializers.CharField(
        default=STREAMS_QUEUE, max_length=128, validators=[name_validator]
    )
    queue_user = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=150,
        help_text="The user to configure as a secure queue user (agent, access, privileges).",
    )
    comment = serializers.CharField(
        required=False, allow_null=True, allow_blank=True, max_length=4000
    )


class SetUpQueueResultSerializer(serializers.Serializer):
    queue_table = QueueTableSerializer()
    queue = QueueSerializer()
    agent = serializers.CharField(allow_null=True)
    queue_table_created = serializers.BooleanField()
    queue_created = serializers.BooleanField()
    agent_created = serializers.BooleanField()


class LeaseSerializer(serializers.Serializer):
    msgid = serializers.IntegerField()
    lock_token = serializers.UUIDField()
    consumer_name = serializers.CharField(required=False, allow_null=True, max_length=128)
    failed = serializers.BooleanField(default=True, help_text="Release only: count an attempt.")


class PurgeSerializer(serializers.Serializer):
    all = serializers.BooleanField(default=False, help_text="Required to purge every message.")
    states = serializers.ListField(
        child=serializers.ChoiceField(choices=MessageState.choices), required=False
    )
    correlation = serializers.CharField(required=False, allow_null=True, max_length=128)
    ids = serializers.ListField(child=serializers.IntegerField(), required=False, allow_null=True)
    enqueued_before = serializers.DateTimeField(required=False, allow_null=True)
    priority = serializers.IntegerField(required=False, allow_null=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        cond = self.condition(attrs)
        if cond.is_all() and not attrs.get("all"):
            raise serializers.ValidationError(
                {"all": ["No condition given: set all=true to purge every message."]}
            )
        return attrs

    @staticmethod
    def condition(attrs: dict[str, Any]) -> engine.PurgeCondition:
        return engine.PurgeCondition(
            states=attrs.get("states") or (),
            correlation=attrs.get("correlation"),
            ids=attrs.get("ids"),
            enqueued_before=attrs.get("enqueued_before"),
            priority=attrs.get("priority"),
        )


class ReplaySerializer(serializers.Serializer):
    ids = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        allow_null=True,
        help_text="Omit to replay every message of the exception queue.",
    )


class CountSerializer(serializers.Serializer):
    count = serializers.IntegerField()


class SubscriberSerializer(serializers.ModelSerializer):
    queue = serializers.SlugRelatedField(slug_field="name", queryset=Queue.objects.all())

    class Meta:
        model = Subscriber
        fields = ["id", "queue", "name", "address", "rule", "created"]
        read_only_fields = ["created"]
        validators: list = []
        extra_kwargs = {"name": {"validators": [name_validator]}}


class AgentSerializer(serializers.ModelSerializer):
    users = serializers.SlugRelatedField(slug_field="username", many=True, read_only=True)

    class Meta:
        model = Agent
        fields = ["id", "name", "address", "comment", "users", "created"]
        read_only_fields = ["created"]
        extra_kwargs = {"name": {"validators": [name_validator]}}


class AgentAccessSerializer(serializers.Serializer):
    user = serializers.SlugRelatedField(slug_field="username", queryset=User.objects.all())


class QueuePrivilegeSerializer(serializers.ModelSerializer):
    queue = serializers.SlugRelatedField(slug_field="name", queryset=Queue.objects.all())
    user = serializers.SlugRelatedField(slug_field="username", queryset=User.objects.all())
    privilege = serializers.ChoiceField(choices=Privilege.choices)

    class Meta:
        model = QueuePrivilege
        fields = ["id", "queue", "user", "privilege", "created"]
        read_only_fields = ["created"]
        validators: list = []


class MessageRuleTestSerializer(serializers.Serializer):
    positive = serializers.SlugRelatedField(
        slug_field="name",
        queryset=RuleSet.objects.all(),
        allow_null=True,
        help_text="Positive rule set name, or null for none.",
    )
    negative = serializers.SlugRelatedField(
        slug_field="name",
        queryset=RuleSet.objects.all(),
        allow_null=True,
        required=False,
        help_text="Negative rule set name, or null for none.",
    )


class OwnerMoveSerializer(serializers.ModelSerializer):
    """One move of a queue table's owner instance; instances by name (null: none, Oracle's 0)."""

    queue_table = serializers.CharField(source="queue_table_name", read_only=True)
    from_instance = serializers.SlugRelatedField(slug_field="name", read_only=True)
    to_instance = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = QueueTableOwnerMove
        fields = ["id", "at", "queue_table", "from_instance", "to_instance", "reason"]
        read_only_fields = fields
