"""Forms validate the shape of page input; the services decide and write."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.core.validators import MaxLengthValidator, MinValueValidator

from core.exceptions import DomainError
from core.forms import JSONPayloadField, JSONTextField
from core.validators import is_ascii_id, name_validator
from queues import engine
from queues.choices import (
    DeliveryMode,
    DequeueDeliveryMode,
    DequeueMode,
    MessageGrouping,
    MessageKind,
    MessageState,
    Navigation,
    Privilege,
    Visibility,
)
from queues.models import Agent, Queue, QueueTable
from queues.services import QUEUE_TABLE_NAME_MAX, STREAMS_QUEUE, STREAMS_QUEUE_TABLE
from rules.models import RuleSet


def _instance_field(label: str, help_text: str) -> forms.CharField:
    """A primary or secondary instance: a name (the service registers a new one DOWN) or empty."""
    return forms.CharField(max_length=64, required=False, label=label, help_text=help_text)


PRIMARY_HELP = (
    "The instance (AQ_INSTANCE_NAME of its Celery workers) that owns the queue table while it is "
    "up; empty: any instance."
)
SECONDARY_HELP = "Owns it while the primary instance is down; must differ from the primary."


class QueueTableCreateForm(forms.ModelForm):
    primary_instance = _instance_field("Primary instance", PRIMARY_HELP)
    secondary_instance = _instance_field("Secondary instance", SECONDARY_HELP)

    # Left out (older clients of the page): NONE, as CREATE_QUEUE_TABLE's default.
    message_grouping = forms.ChoiceField(
        choices=MessageGrouping.choices,
        required=False,
        initial=MessageGrouping.NONE,
        help_text="Transactional: each enqueuing transaction's messages form a group that "
        "dequeue hands out whole, in order, to one consumer. Fixed once created.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        name = self.fields["name"]
        name.max_length = QUEUE_TABLE_NAME_MAX
        name.validators.append(MaxLengthValidator(QUEUE_TABLE_NAME_MAX))
        name.widget.attrs["maxlength"] = str(QUEUE_TABLE_NAME_MAX)

    def clean_message_grouping(self) -> str:
        return self.cleaned_data.get("message_grouping") or MessageGrouping.NONE

    payload_schema = JSONTextField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "class": "font-monospace"}),
        help_text="JSON Schema for typed payloads; leave empty for payload type ANY.",
    )

    class Meta:
        model = QueueTable
        fields = [
            "name",
            "sort_order",
            "multiple_consumers",
            "message_grouping",
            "secure",
            "payload_type",
            "payload_schema",
            "comment",
        ]
        widgets = {"comment": forms.Textarea(attrs={"rows": 2})}


class SetUpQueueForm(forms.Form):
    """DBMS_STREAMS_ADM.SET_UP_QUEUE's parameters, with Oracle's defaults."""

    queue_table = forms.CharField(
        max_length=128,
        initial=STREAMS_QUEUE_TABLE,
        validators=[name_validator],
        help_text="Created if missing (ANY payload, multi-consumer, secure, transactional, "
        "commit-time ordering); an existing table keeps its ordering.",
    )
    queue_name = forms.CharField(max_length=128, initial=STREAMS_QUEUE, validators=[name_validator])
    queue_user = forms.CharField(
        max_length=150,
        required=False,
        help_text="User made a secure queue user: an agent of the same name, access, and ENQUEUE "
        "and DEQUEUE privileges. Rerun with another user to add that user.",
    )
    storage_clause = forms.CharField(required=False, help_text="Accepted and ignored.")
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


class QueueTableEditForm(forms.ModelForm):
    payload_schema = JSONTextField(
        required=False, widget=forms.Textarea(attrs={"rows": 6, "class": "font-monospace"})
    )
    primary_instance = _instance_field("Primary instance", PRIMARY_HELP)
    secondary_instance = _instance_field("Secondary instance", SECONDARY_HELP)

    class Meta:
        model = QueueTable
        fields = ["comment", "payload_schema"]
        widgets = {"comment": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for role in ("primary_instance", "secondary_instance"):
            inst = getattr(self.instance, role, None)
            self.fields[role].initial = inst.name if inst is not None else ""


class QueueCreateForm(forms.ModelForm):
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
            "enqueue_enabled",
            "dequeue_enabled",
            "comment",
        ]
        widgets = {"comment": forms.Textarea(attrs={"rows": 2})}
        help_texts = {
            "retry_delay": "Seconds before a failed message is retried.",
            "retention_time": "Seconds a processed message is kept.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["exception_queue"].queryset = Queue.objects.filter(kind="EXCEPTION_QUEUE")
        not_negative(self, "retry_delay", "retention_time")

    def _post_clean(self) -> None:
        # The service validates the exception queue against the queue table; skip the model's
        # own full_clean here so errors are reported once, by the service.
        self.instance.name = self.cleaned_data.get("name", "")


class QueueEditForm(forms.ModelForm):
    class Meta:
        model = Queue
        fields = ["exception_queue", "max_retries", "retry_delay", "retention_time", "comment"]
        widgets = {"comment": forms.Textarea(attrs={"rows": 2})}
        help_texts = QueueCreateForm.Meta.help_texts

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["exception_queue"].queryset = Queue.objects.filter(
            kind="EXCEPTION_QUEUE", queue_table=self.instance.queue_table_id
        )
        not_negative(self, "retry_delay", "retention_time")


def not_negative(form: forms.Form, *names: str) -> None:
    """The model's MinValueValidator(0) runs only in full_clean; check in the form too, so that
    every bad field is reported at once."""
    for name in names:
        field = form.fields[name]
        field.validators.append(MinValueValidator(0))
        field.widget.attrs["min"] = "0"


class EnqueueForm(forms.Form):
    payload = JSONPayloadField(widget=forms.Textarea(attrs={"rows": 6, "class": "font-monospace"}))
    kind = forms.ChoiceField(choices=MessageKind.choices, initial=MessageKind.USER)
    type_name = forms.CharField(required=False, max_length=128)
    priority = forms.IntegerField(initial=1)
    delay = forms.FloatField(initial=0, min_value=0, help_text="Seconds (WAITING until due).")
    expiration = forms.FloatField(required=False, min_value=0, help_text="Seconds once READY.")
    correlation = forms.CharField(required=False, max_length=128)
    sender = forms.CharField(required=False, max_length=128)
    recipients = forms.CharField(
        required=False, help_text="Comma-separated subscriber names (multi-consumer queues)."
    )
    tag = forms.CharField(
        required=False,
        help_text="Streams tag (RAW) as hexadecimal text, such as 1F02; empty: no tag. Rules "
        "read it with :dml.get_tag(); it travels with the message.",
    )
    visibility = forms.ChoiceField(
        choices=[("", "Default (on commit; buffered: immediate)"), *Visibility.choices],
        required=False,
    )
    delivery_mode = forms.ChoiceField(
        choices=DeliveryMode.choices,
        initial=DeliveryMode.PERSISTENT,
        required=False,
        help_text="Buffered: no WAL, visible at once, lost if the database crashes before it "
        "is dequeued or spilled.",
    )

    def clean_delivery_mode(self) -> str:
        return self.cleaned_data.get("delivery_mode") or DeliveryMode.PERSISTENT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Own ids: the queue page also holds the dequeue form and the message filter, which have
        # fields of the same names (a label must point at its own input).
        kwargs.setdefault("auto_id", "enq_%s")
        super().__init__(*args, **kwargs)

    def clean_tag(self) -> str | None:
        # Checked by the engine (a 400 naming tag), as for the API; empty is no tag.
        return self.cleaned_data.get("tag") or None

    def clean_recipients(self) -> list[str] | None:
        raw = self.cleaned_data.get("recipients") or ""
        names = [n.strip() for n in raw.split(",") if n.strip()]
        return names or None


class DequeueForm(forms.Form):
    mode = forms.ChoiceField(choices=DequeueMode.choices, initial=DequeueMode.REMOVE)
    navigation = forms.ChoiceField(
        choices=Navigation.choices,
        initial=Navigation.NEXT_MESSAGE,
        help_text="Next: after the last message shown here (from the head the first time). "
        "First: always from the head.",
    )
    # Where NEXT_MESSAGE continues: the position of the last message this form dequeued, with a
    # digest of the fields it was dequeued under (see SELECTING), as "position@digest".
    cursor = forms.CharField(required=False, max_length=128, widget=forms.HiddenInput)
    # TRANSACTIONAL queue tables: the group this page's consumer owns (from its last dequeue).
    group_token = forms.UUIDField(required=False, widget=forms.HiddenInput)
    consumer_name = forms.CharField(
        required=False, max_length=128, help_text="The subscriber (multi-consumer queues)."
    )
    correlation = forms.CharField(required=False, max_length=128)
    condition = forms.CharField(
        required=False, help_text="Only messages this rule condition is TRUE for, e.g. :msg.x = 1."
    )
    batch = forms.IntegerField(initial=1, min_value=1, max_value=1000)
    wait = forms.FloatField(
        initial=0, min_value=0, max_value=60, help_text="Seconds to wait for a message, at most 60."
    )
    delivery_mode = forms.ChoiceField(
        choices=DequeueDeliveryMode.choices,
        initial=DequeueDeliveryMode.PERSISTENT,
        required=False,
        help_text="Persistent messages (as in AQ), buffered ones, or both.",
    )

    def clean_delivery_mode(self) -> str:
        return self.cleaned_data.get("delivery_mode") or DequeueDeliveryMode.PERSISTENT

    def __init__(
        self, *args: Any, browse_only: bool = False, grouped: bool = False, **kwargs: Any
    ) -> None:
        kwargs.setdefault("auto_id", "deq_%s")  # see EnqueueForm
        super().__init__(*args, **kwargs)
        navigation = self.fields["navigation"]
        if grouped:
            navigation.help_text = (
                str(navigation.help_text) + " Next transaction: leave the rest of the group this "
                "page holds in the queue and take the next group."
            )
        else:
            # Only a TRANSACTIONAL queue table has groups to skip: elsewhere the choice could only
            # be refused (ORA-25234). As for BROWSE below, the field still accepts it.
            navigation.widget.choices = [
                c for c in Navigation.choices if c[0] != Navigation.NEXT_TRANSACTION
            ]
        if browse_only:
            # A role that may only look is offered only BROWSE; the field still accepts the
            # other modes, so that asking for one is refused by the service (403), not the form.
            self.fields["mode"].initial = DequeueMode.BROWSE
            self.fields["mode"].widget.choices = [(DequeueMode.BROWSE, DequeueMode.BROWSE.label)]
        # True when the cursor was made under other SELECTING fields and so not used.
        self.cursor_dropped = False

    # The fields that choose which messages a dequeue sees. A position is only meaningful under
    # the ones it was made with: after switching consumer (or mode, correlation, condition),
    # continuing after it would skip that selection's earlier messages.
    SELECTING = ("mode", "consumer_name", "correlation", "condition", "delivery_mode")

    @classmethod
    def _digest(cls, data: dict[str, Any]) -> str:
        fields = json.dumps([str(data.get(f) or "") for f in cls.SELECTING])
        return hashlib.sha256(fields.encode("utf-8", "surrogatepass")).hexdigest()[:16]

    def cursor_after(self, position: str) -> str:
        """The hidden cursor for continuing after ``position`` under this form's selection."""
        return f"{position}@{self._digest(self.cleaned_data)}"

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        raw = data.get("cursor") or ""
        data["cursor"] = None
        if not raw:
            return data
        position, _, digest = raw.partition("@")
        try:
            engine.Position.parse(position)
        except DomainError:
            self.add_error(
                "cursor",
                "The saved position is not one this form made; choose First message to start "
                "from the head.",
            )
            return data
        if digest == self._digest(data):
            data["cursor"] = position
        else:
            self.cursor_dropped = True
        return data


class PurgeForm(forms.Form):
    states = forms.MultipleChoiceField(
        choices=MessageState.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked and no other condition: every message of the queue is purged.",
    )
    correlation = forms.CharField(required=False, max_length=128, help_text="% and _ wildcards.")
    ids = forms.CharField(
        required=False, label="Message ids", help_text="Comma-separated message ids."
    )
    confirm = forms.CharField(help_text="Type the queue's name to confirm.")

    def __init__(self, *args: Any, queue: Queue, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.queue = queue

    def clean_ids(self) -> list[int] | None:
        return parse_ids(self.cleaned_data.get("ids") or "", field="ids")

    def clean_confirm(self) -> str:
        value = self.cleaned_data["confirm"]
        if value.strip().upper() != self.queue.name.upper():
            raise forms.ValidationError(f"Type {self.queue.name} to confirm the purge.")
        return value


class ReplayForm(forms.Form):
    ids = forms.CharField(
        required=False, label="Message ids", help_text="Comma-separated ids; empty replays all."
    )

    def clean_ids(self) -> list[int] | None:
        return parse_ids(self.cleaned_data.get("ids") or "", field="ids")


def parse_ids(raw: str, *, field: str) -> list[int] | None:
    parts = [p.strip() for p in raw.replace(" ", ",").split(",") if p.strip()]
    if not parts:
        return None
    out = []
    for i, p in enumerate(parts):
        if not is_ascii_id(p):
            raise forms.ValidationError(f"Item {i + 1} ({p!r}) is not a message id.")
        out.append(int(p))
    return out


class SubscriberForm(forms.Form):
    name = forms.CharField(max_length=128)
    address = forms.CharField(max_length=256, required=False)
    rule = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "class": "font-monospace"}),
        help_text="Optional rule condition, e.g. :msg.region = 'EUROPE' (empty: every message).",
    )


class AgentForm(forms.ModelForm):
    class Meta:
        model = Agent
        fields = ["name", "address", "comment"]
        widgets = {"comment": forms.Textarea(attrs={"rows": 2})}


class AgentAccessForm(forms.Form):
    agent = forms.ModelChoiceField(queryset=Agent.objects.all())
    user = forms.ModelChoiceField(queryset=get_user_model().objects.order_by("username"))


class PrivilegeForm(forms.Form):
    queue = forms.ModelChoiceField(queryset=Queue.objects.filter(kind="NORMAL_QUEUE"))
    user = forms.ModelChoiceField(queryset=get_user_model().objects.order_by("username"))
    privilege = forms.ChoiceField(choices=Privilege.choices)


class MessageRuleTestForm(forms.Form):
    """Try a queued message against a client's rule sets (Table 5-1)."""

    message_id = forms.IntegerField(min_value=1, label="Message id")
    positive = forms.ModelChoiceField(
        queryset=RuleSet.objects.order_by("name"),
        required=False,
        label="Positive rule set",
        help_text="Empty: no positive rule set (every message not discarded is performed).",
    )
    negative = forms.ModelChoiceField(
        queryset=RuleSet.objects.order_by("name"), required=False, label="Negative rule set"
    )
