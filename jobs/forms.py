"""Forms validate the shape of page input; jobs.services decides and writes."""

from __future__ import annotations

from typing import Any

from django import forms

from jobs.choices import SparkMode, SparkSelection
from jobs.models import Propagation, PropagationSchedule
from queues.choices import QueueKind
from queues.models import Queue
from rules.models import RuleSet

SCHEDULE_FIELDS = ("start_time", "duration", "next_time", "latency", "max_failures")


def _queues() -> Any:
    # Exception queues are never a source or a destination; the service says so if one is posted.
    return Queue.objects.filter(kind=QueueKind.NORMAL).order_by("name")


def _rule_sets() -> Any:
    return RuleSet.objects.order_by("name")


def _rule_set_field(help_text: str) -> forms.ModelChoiceField:
    return forms.ModelChoiceField(queryset=_rule_sets(), required=False, help_text=help_text)


class ScheduleFieldsMixin(forms.Form):
    """DBMS_AQADM.SCHEDULE_PROPAGATION's parameters. The service checks their meaning (a valid
    next_time, a positive duration, no negative latency) and names the field at fault."""

    start_time = forms.DateTimeField(
        required=False,
        # Seconds too: re-posting an unchanged alter-schedule form must not move the windows.
        widget=forms.DateTimeInput(
            attrs={"type": "datetime-local", "step": "1"}, format="%Y-%m-%dT%H:%M:%S"
        ),
        help_text="When the first window opens; empty: now.",
    )
    duration = forms.FloatField(
        required=False, help_text="Window length in seconds; empty: the window never ends."
    )
    next_time = forms.CharField(
        required=False,
        max_length=200,
        help_text=PropagationSchedule._meta.get_field("next_time").help_text,
    )
    latency = forms.FloatField(
        initial=3.0,
        help_text="Seconds: the longest a new message waits in an idle source queue.",
    )
    max_failures = forms.IntegerField(
        required=False,
        help_text="Consecutive failures after which the schedule disables itself; empty: 16.",
    )

    def schedule_params(self) -> dict[str, Any]:
        return {name: self.cleaned_data.get(name) for name in SCHEDULE_FIELDS}


class PropagationCreateForm(ScheduleFieldsMixin):
    name = forms.CharField(max_length=128)
    source_queue = forms.ModelChoiceField(queryset=_queues())
    destination_queue = forms.ModelChoiceField(queryset=_queues(), required=False)
    remote_destination = forms.CharField(
        required=False,
        max_length=260,
        label="Or a remote queue",
        help_text="QUEUE@LINK: a queue at the site of a database link (instead of a local one).",
    )
    positive_rule_set = _rule_set_field(
        "Only messages it says TRUE for are propagated; none chosen: every message. A chosen set without rules discards every message."
    )
    negative_rule_set = _rule_set_field("Messages it says TRUE for are not propagated.")
    queue_to_queue = forms.BooleanField(required=False, initial=True, label="Queue to queue")
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    schedule_now = forms.BooleanField(
        required=False,
        initial=True,
        label="Schedule now",
        help_text="Untick to create the propagation without a schedule (it moves nothing yet).",
    )

    field_order = [
        "name",
        "source_queue",
        "destination_queue",
        "remote_destination",
        "positive_rule_set",
        "negative_rule_set",
        "queue_to_queue",
        "comment",
        "schedule_now",
        *SCHEDULE_FIELDS,
    ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Fresh querysets per form: a module-level one would be evaluated once and cached.
        for name in ("source_queue", "destination_queue"):
            self.fields[name].queryset = _queues()
        for name in ("positive_rule_set", "negative_rule_set"):
            self.fields[name].queryset = _rule_sets()

    def clean(self) -> dict[str, Any]:
        d = super().clean() or {}
        if d.get("destination_queue") and (d.get("remote_destination") or "").strip():
            self.add_error("remote_destination", "Choose a local queue or a remote one, not both.")
        return d

    def service_kwargs(self) -> dict[str, Any]:
        d = self.cleaned_data
        remote = (d.get("remote_destination") or "").strip()
        kwargs: dict[str, Any] = {
            "name": d["name"].strip(),
            "source_queue": d["source_queue"],
            # QUEUE@LINK as text: the service asks the link's site (as the API does).
            "destination_queue": remote or d["destination_queue"],
            "positive_rule_set": d.get("positive_rule_set"),
            "negative_rule_set": d.get("negative_rule_set"),
            "queue_to_queue": d.get("queue_to_queue", False),
            "comment": d.get("comment", ""),
            "schedule": bool(d.get("schedule_now")),
        }
        if kwargs["schedule"]:
            kwargs.update(self.schedule_params())
        return kwargs


class PropagationEditForm(forms.Form):
    positive_rule_set = _rule_set_field(
        "Only messages it says TRUE for are propagated; none chosen: every message. A chosen set without rules discards every message."
    )
    negative_rule_set = _rule_set_field("Messages it says TRUE for are not propagated.")
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args: Any, propagation: Propagation, **kwargs: Any) -> None:
        kwargs.setdefault(
            "initial",
            {
                "positive_rule_set": propagation.positive_rule_set_id,
                "negative_rule_set": propagation.negative_rule_set_id,
                "comment": propagation.comment,
            },
        )
        super().__init__(*args, **kwargs)
        for name in ("positive_rule_set", "negative_rule_set"):
            self.fields[name].queryset = _rule_sets()


class ScheduleForm(ScheduleFieldsMixin):
    """Schedule an unscheduled propagation, or alter its schedule (given ``schedule``)."""

    def __init__(
        self, *args: Any, schedule: PropagationSchedule | None = None, **kwargs: Any
    ) -> None:
        if schedule is not None:
            kwargs.setdefault(
                "initial", {name: getattr(schedule, name) for name in SCHEDULE_FIELDS}
            )
        super().__init__(*args, **kwargs)


class MaintenanceForm(forms.Form):
    restricted = forms.BooleanField(required=False, label="Maintenance mode on")
    reason = forms.CharField(required=False, max_length=500)


class TraceForm(forms.Form):
    """ "Trace a message": a start queue and a message, pasted as rules-message JSON or picked
    from a queue by its id. ``clean`` leaves the rules-engine message in ``rules_message``."""

    queue = forms.ModelChoiceField(
        queryset=Queue.objects.order_by("name"),
        required=False,
        label="Start queue",
        help_text="Empty with a message id: the queue that holds the message.",
    )
    message = forms.CharField(
        required=False,
        label="Message",
        widget=forms.Textarea(attrs={"rows": 8, "class": "font-monospace"}),
        help_text=(
            'Rules-message JSON, e.g. {"kind": "user", "type_name": "ORDER", '
            '"payload": {"region": "EU"}}, or a row_lcr / ddl_lcr.'
        ),
    )
    msgid = forms.IntegerField(required=False, min_value=1, label="Or a queued message's id")

    def clean(self) -> dict[str, Any]:
        from core.exceptions import DomainError
        from jobs.selectors import trace_message

        data = super().clean()
        if self.has_error("msgid") or self.has_error("queue"):
            return data
        text, msgid = (data.get("message") or "").strip(), data.get("msgid")
        if text and msgid is not None:
            self.add_error("msgid", "Give a pasted message or a message id, not both.")
        elif not text and msgid is None:
            self.add_error("message", "Paste a message, or give the id of a queued message.")
        else:
            try:
                data["rules_message"], holder = trace_message(message=text or None, msgid=msgid)
            except DomainError as exc:
                # message_for_test names message.<field>; the form has one message box.
                self.add_error("msgid" if exc.field == "msgid" else "message", exc.message)
                return data
            if data.get("queue") is None:
                data["queue"] = holder
        if data.get("queue") is None and "rules_message" in data:
            self.add_error("queue", "Choose the queue the message starts from.")
        return data


class SparkJobForm(forms.Form):
    """A bulk propagation job on Spark. Shape only: jobs.services.spark_job_submit checks what
    the values mean (destinations, selection, master, sizes) and names the field at fault."""

    name = forms.CharField(required=False, max_length=128, help_text="Optional, for the lists.")
    source_queue = forms.ModelChoiceField(queryset=Queue.objects.none())
    destinations = forms.ModelMultipleChoiceField(
        queryset=Queue.objects.none(),
        required=False,
        label="Destination queues",
        help_text="Copies go there as they are (Ctrl-click for several).",
    )
    propagations = forms.ModelMultipleChoiceField(
        queryset=Propagation.objects.none(),
        required=False,
        label="Through propagations",
        help_text="Propagations out of the source: their rule sets and transformations decide "
        "what each destination gets, and a move consumes their subscribers' copies.",
    )
    selection = forms.ChoiceField(
        choices=SparkSelection.choices,
        initial=SparkSelection.ALL_READY,
        widget=forms.RadioSelect,
        label="Which messages",
        help_text="Messages READY at submission, at most.",
    )
    enq_time_from = forms.DateTimeField(
        required=False,
        label="Enqueued from",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"}),
    )
    enq_time_to = forms.DateTimeField(
        required=False,
        label="Enqueued before",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"}),
    )
    correlation = forms.CharField(
        required=False, max_length=128, help_text="% and _ are wildcards."
    )
    condition = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "class": "font-monospace"}),
        help_text="A rule condition, e.g. :msg.region = 'EU'.",
    )
    mode = forms.ChoiceField(
        choices=SparkMode.choices, initial=SparkMode.COPY, widget=forms.RadioSelect
    )
    dry_run = forms.BooleanField(
        required=False,
        label="Dry run",
        help_text="Only count what would go where; nothing is written.",
    )
    master = forms.CharField(
        required=False, max_length=255, label="Spark master", help_text="Empty: SPARK_MASTER."
    )
    executors = forms.IntegerField(initial=1)
    executor_cores = forms.IntegerField(initial=1, label="Cores per executor")
    executor_memory = forms.CharField(
        initial="1g", max_length=16, label="Memory per executor", help_text="e.g. 512m, 2g."
    )

    # Fields the page groups under "Which messages" (shown next to the selection).
    SELECTION_FIELDS = ("enq_time_from", "enq_time_to", "correlation", "condition")
    SPARK_FIELDS = ("master", "executors", "executor_cores", "executor_memory")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from django.conf import settings

        super().__init__(*args, **kwargs)
        # An exception queue may be copied from; it is never a destination (the service says so).
        self.fields["source_queue"].queryset = Queue.objects.order_by("name")
        self.fields["destinations"].queryset = _queues()
        self.fields["propagations"].queryset = Propagation.objects.select_related(
            "source_queue", "destination_queue"
        ).order_by("name")
        self.fields["propagations"].label_from_instance = lambda p: (
            # p.destination: QUEUE@LINK for a remote destination (no local queue).
            f"{p.name} ({p.source_queue.name if p.source_queue else '—'} → {p.destination})"
        )
        self.fields["master"].widget.attrs["placeholder"] = settings.SPARK_MASTER
        self.fields["master"].help_text = f"Empty: SPARK_MASTER ({settings.SPARK_MASTER})."

    def service_kwargs(self) -> dict[str, Any]:
        d = self.cleaned_data
        return {
            "name": d.get("name", "").strip(),
            "source_queue": d["source_queue"],
            "destinations": list(d.get("destinations") or []),
            "propagations": list(d.get("propagations") or []),
            "selection": d["selection"],
            "enq_time_from": d.get("enq_time_from"),
            "enq_time_to": d.get("enq_time_to"),
            "correlation": d.get("correlation", ""),
            "condition": d.get("condition", ""),
            "mode": d["mode"],
            "dry_run": bool(d.get("dry_run")),
            "master": d.get("master", "").strip(),
            "executors": d["executors"],
            "executor_cores": d["executor_cores"],
            "executor_memory": d["executor_memory"],
        }
