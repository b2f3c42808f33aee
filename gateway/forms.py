"""Forms of the gateway pages: they check the shape of page input and turn it into the keyword
arguments of one gateway.services function; the services decide and name the field at fault.

Field names follow the services' error fields (``agent_name``, ``linkname``, ``job_name``,
``properties.<name>``, ``options.<name>``) so a DomainError lands next to its input."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from core.exceptions import DomainError
from gateway.choices import CleanupAction, Direction, Domain, LinkType, LogLevel
from gateway.drivers import driver_class
from gateway.models import DEFAULT_AGENT, Agent, ForeignQueue, Job, Link
from gateway.options import JOB_OPTIONS
from gateway.services import NO_CHANGE
from queues.choices import QueueKind
from queues.models import Queue

# Link properties that have their own input rather than a row in "properties": the password is
# write-only and stored encrypted, the log queue is a column of the link.
OWN_INPUT_PROPERTIES = ("outbound_log_queue",)
BOOL_CHOICES = [("TRUE", "yes"), ("FALSE", "no")]


def driver_for(link_type: str) -> Any:
    """The driver class of ``link_type``, or None while its module is missing or the type is
    unknown (drivers load lazily: a page must not fail because one driver is absent)."""
    try:
        return driver_class(link_type)
    except (ImportError, ValueError):
        return None


class GatewayForm(forms.Form):
    """Maps a service's error field to the input that shows it (see ``error_field``)."""

    # A model field whose input has the service's parameter name (Link.name is ``linkname``):
    # the model's own ValidationError names the model field.
    model_fields: dict[str, str] = {}

    def model_error_field(self, name: str) -> str:
        return self.model_fields.get(name, name)

    def error_field(self, exc: DomainError) -> str | None:
        field = exc.field
        if field == "properties.password" and "password" in self.fields:
            return "password"  # the form's own input for it
        if field == "options":
            # Option errors name the option in the message; put it on that option's input.
            for name in self.fields:
                if name.startswith("options.") and f" {name.split('.', 1)[1]} " in exc.message:
                    return name
        return field


def _options_lines(text: str) -> dict[str, str]:
    """``Name=value`` per line → a dict; ValidationError for a line without ``=``."""
    out: dict[str, str] = {}
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        name, sep, value = line.partition("=")
        if not sep or not name.strip():
            raise forms.ValidationError(f"Write one Name=value a line, not {line!r}.")
        out[name.strip()] = value.strip()
    return out


# --- agents --------------------------------------------------------------------------------------


class AgentCreateForm(GatewayForm):
    agent_name = forms.CharField(max_length=30, label="Name")
    username = forms.CharField(
        required=False,
        max_length=128,
        help_text="The PostgreSQL role the agent connects as; empty: the console's own user.",
    )
    password = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Stored encrypted.",
    )
    max_memory = forms.IntegerField(initial=64, help_text="MB (16-65536); checked, not enforced.")
    max_threads = forms.IntegerField(initial=1, help_text="Job threads (1-128).")
    service = forms.CharField(
        required=False,
        max_length=400,
        help_text="A queue's service name (DBA_SERVICES.NAME): the agent runs on the instance "
        "owning that queue's queue table. Empty: it follows its outbound jobs' queue tables.",
    )
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def service_kwargs(self) -> dict[str, Any]:
        d = self.cleaned_data
        return {
            "name": d["agent_name"],
            "username": d.get("username", ""),
            "password": d.get("password", ""),
            "max_memory": d["max_memory"],
            "max_threads": d["max_threads"],
            "service": d.get("service", ""),
            "comment": d.get("comment", ""),
        }


class AgentEditForm(GatewayForm):
    """ALTER_AGENT: a blank password leaves the stored one unchanged."""

    username = AgentCreateForm.base_fields["username"]
    password = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Leave blank to keep the stored password.",
    )
    max_memory = forms.IntegerField(help_text="MB (16-65536).")
    max_threads = forms.IntegerField(help_text="Job threads (1-128).")
    service = AgentCreateForm.base_fields["service"]
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args: Any, agent: Agent, **kwargs: Any) -> None:
        self.agent = agent
        kwargs.setdefault(
            "initial",
            {
                "username": agent.username,
                "max_memory": agent.max_memory,
                "max_threads": agent.max_threads,
                "service": agent.service,
                "comment": agent.comment,
            },
        )
        super().__init__(*args, **kwargs)
        if agent.status != "NOT_STARTED":
            for name in ("max_memory", "max_threads"):
                self.fields[
                    name
                ].help_text += (
                    f" Agent {agent.name} is {agent.status}: a change takes effect after restart."
                )

    def service_kwargs(self) -> dict[str, Any]:
        d = self.cleaned_data
        username = d.get("username", "").strip()
        return {
            "username": username if username != self.agent.username else NO_CHANGE,
            "password": d["password"] if d.get("password") else NO_CHANGE,
            "max_memory": d["max_memory"],
            "max_threads": d["max_threads"],
            "service": d.get("service", ""),
            "comment": d.get("comment", ""),
        }


class LogLevelForm(GatewayForm):
    log_level = forms.TypedChoiceField(choices=LogLevel.choices, coerce=int, label="Log level")


class CleanupForm(GatewayForm):
    """CLEANUP_GATEWAY: the action, and the job for the two RESET_SUB_* actions."""

    action = forms.ChoiceField(choices=CleanupAction.choices, widget=forms.RadioSelect)
    sarg = forms.ChoiceField(
        required=False,
        label="Job",
        help_text="For the RESET_SUB_* actions: the job whose recovery problem to reset.",
    )

    def __init__(self, *args: Any, agent: Agent, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        jobs = Job.objects.filter(link__agent=agent).order_by("name")
        self.fields["sarg"].choices = [("", "—")] + [
            (j.name, f"{j.name} (recovery: {j.recovery or 'none'})") for j in jobs
        ]


class AgentOptionForm(GatewayForm):
    name = forms.CharField(max_length=200, help_text="e.g. oracle.mgw.batch_size")
    value = forms.CharField(required=False, max_length=4000)
    encrypted = forms.BooleanField(
        required=False, help_text="Store it encrypted; pages and the API show <<ENCRYPTED>>."
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.is_bound and self.fields["encrypted"].widget.value_from_datadict(
            self.data, self.files, self.add_prefix("encrypted")
        ):
            # A refused encrypted value is not rendered back into the page.
            self.fields["value"].widget = forms.PasswordInput(render_value=False)


# --- links ---------------------------------------------------------------------------------------


class LinkTypeForm(forms.Form):
    """Step one of a new link: its type decides the properties asked next."""

    link_type = forms.ChoiceField(choices=LinkType.choices, label="Type")


class LinkForm(GatewayForm):
    model_fields = {"name": "linkname"}
    """CREATE_MSGSYSTEM_LINK (no ``link``) or ALTER_MSGSYSTEM_LINK (``link``): the type's
    properties from its driver, the write-only password, options limited to the driver's."""

    def __init__(self, *args: Any, link_type: str, link: Link | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.link_type, self.link = link_type, link
        self.driver = driver_for(link_type)
        current = dict(link.properties) if link else {}
        if link is None:
            self.fields["linkname"] = forms.CharField(max_length=30, label="Name")
            self.fields["agent"] = forms.ModelChoiceField(
                queryset=Agent.objects.order_by("name"),
                initial=Agent.objects.filter(name=DEFAULT_AGENT).first(),
                help_text="Fixed once the link exists.",
            )
        specs = self.driver.properties if self.driver else {}
        for name, (required, kind, default, help_text) in specs.items():
            if kind == "secret" or name in OWN_INPUT_PROPERTIES:
                continue
            value = current.get(name, default)
            label = f"{name}" + (" (required)" if required else "")
            extra = f" Default: {default}." if default not in (None, "") else ""
            if link is not None and name in ("host", "port"):
                extra += " Fixed (Table C-3): another server is a new link."
            if kind == "bool":
                field: forms.Field = forms.ChoiceField(
                    choices=BOOL_CHOICES, required=False, label=label, help_text=help_text + extra
                )
                value = "TRUE" if value else "FALSE"
            else:
                # Text for ints too: the driver checks the value and names the property.
                field = forms.CharField(
                    required=False, label=label, help_text=help_text + extra, max_length=1000
                )
                value = "" if value is None else str(value)
            field.initial = value
            self.fields[f"properties.{name}"] = field
        self.fields["password"] = forms.CharField(
            required=False,
            widget=forms.PasswordInput(render_value=False),
            help_text="Stored encrypted, never shown."
            + (" Leave blank to keep the stored one." if link else ""),
        )
        if link is not None:
            self.fields["clear_password"] = forms.BooleanField(
                required=False, label="Remove the stored password"
            )
        if "outbound_log_queue" in specs or link_type in ("AMQP", "REDIS"):
            help_text = specs.get("outbound_log_queue", (0, 0, 0, ""))[3] or (
                "Foreign-side log of outbound batches."
            )
            self.fields["outbound_log_queue"] = forms.CharField(
                required=False,
                max_length=255,
                initial=link.outbound_log_queue if link else "",
                help_text=help_text,
            )
        self.fields["max_connections"] = forms.IntegerField(
            initial=link.max_connections if link else 1, help_text="1-64."
        )
        for name, help_text in (self.driver.link_options if self.driver else {}).items():
            self.fields[f"options.{name}"] = forms.CharField(
                required=False,
                label=f"Option {name}",
                help_text=help_text,
                initial=(link.options if link else {}).get(name, ""),
            )
        self.fields["comment"] = forms.CharField(
            required=False,
            widget=forms.Textarea(attrs={"rows": 2}),
            initial=link.comment if link else "",
        )

    def _properties(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in self.cleaned_data.items():
            if key.startswith("properties.") and value not in ("", None):
                out[key.split(".", 1)[1]] = value
            elif key.startswith("properties.") and self.link is not None:
                out[key.split(".", 1)[1]] = ""  # cleared: back to the default (or "required")
        # The DBMS_MGWADM spelling, posted by a script rather than this form's password input:
        # heard, not dropped (the service makes it the link's password).
        if self.data.get("properties.password"):
            out["password"] = self.data["properties.password"]
        return out

    def _options(self) -> dict[str, str]:
        return {
            k.split(".", 1)[1]: v
            for k, v in self.cleaned_data.items()
            if k.startswith("options.") and v not in ("", None)
        }

    def service_kwargs(self) -> dict[str, Any]:
        d = self.cleaned_data
        kwargs: dict[str, Any] = {
            "properties": self._properties(),
            "options": self._options(),
            "max_connections": d["max_connections"],
            "comment": d.get("comment", ""),
        }
        if "outbound_log_queue" in self.fields:
            kwargs["outbound_log_queue"] = d.get("outbound_log_queue", "")
        if self.link is None:
            kwargs.update(
                name=d["linkname"],
                link_type=self.link_type,
                agent=d["agent"],
                password=d.get("password", ""),
            )
        elif d.get("clear_password"):
            kwargs["password"] = ""
        elif d.get("password"):
            kwargs["password"] = d["password"]
        return kwargs


class LinkOptionForm(GatewayForm):
    name = forms.ChoiceField(choices=[])
    value = forms.CharField(required=False, max_length=4000)

    def __init__(self, *args: Any, link: Link, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        driver = driver_for(link.link_type)
        known = driver.link_options if driver else {}
        self.fields["name"].choices = [(n, n) for n in sorted(known)]
        self.fields["name"].help_text = (
            " ".join(f"{n}: {h}" for n, h in sorted(known.items()))
            or f"{link.link_type} links take no options."
        )


# --- foreign queues ------------------------------------------------------------------------------


class ForeignQueueLinkForm(forms.Form):
    """Step one of a registration: the link decides the domains and options asked next."""

    link = forms.ModelChoiceField(queryset=Link.objects.order_by("name"))


class ForeignQueueForm(GatewayForm):
    """REGISTER_FOREIGN_QUEUE on ``link``."""

    name = forms.CharField(max_length=30, help_text="Our name for it; jobs write NAME@LINK.")
    provider_queue = forms.CharField(
        required=False,
        max_length=512,
        label="Provider name",
        help_text="Its name in the foreign system; empty: the name above.",
    )
    domain = forms.ChoiceField(choices=Domain.choices)
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args: Any, link: Link, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.link = link
        driver = driver_for(link.link_type)
        domains = driver.domains if driver else Domain.values
        self.fields["domain"].choices = [c for c in Domain.choices if c[0] in domains]
        for name, help_text in (driver.queue_options if driver else {}).items():
            self.fields[f"options.{name}"] = forms.CharField(
                required=False, label=f"Option {name}", help_text=help_text
            )
        self.order_fields(["name", "provider_queue", "domain"])

    def service_kwargs(self) -> dict[str, Any]:
        d = self.cleaned_data
        return {
            "name": d["name"],
            "link": self.link,
            "provider_queue": d.get("provider_queue", ""),
            "domain": d["domain"],
            "options": {
                k.split(".", 1)[1]: v
                for k, v in d.items()
                if k.startswith("options.") and v not in ("", None)
            },
            "comment": d.get("comment", ""),
        }


# --- jobs ----------------------------------------------------------------------------------------


def _our_queues(*, normal_only: bool = True) -> list[tuple[str, str]]:
    qs = Queue.objects.order_by("name")
    if normal_only:
        qs = qs.filter(kind=QueueKind.NORMAL)
    return [(q.name, q.name) for q in qs]


def _foreign_queues() -> list[tuple[str, str]]:
    fqs = ForeignQueue.objects.select_related("link").order_by("link__name", "name")
    return [
        (str(fq), f"{fq} ({fq.link.link_type} {fq.domain.lower()} {fq.provider_queue})")
        for fq in fqs
    ]


def _transformations() -> list[tuple[str, str]]:
    names = sorted(getattr(settings, "MGW_TRANSFORMATIONS", {}))
    return [("", "— none —")] + [(n, n) for n in names]


def _system_job_options_help() -> str:
    parts = []
    for link_type in LinkType.values:
        driver = driver_for(link_type)
        if driver and driver.job_options:
            parts.append(f"{link_type}: " + ", ".join(sorted(driver.job_options)))
    return "Other options, one Name=value a line" + (f" ({'; '.join(parts)})." if parts else ".")


class JobOptionFieldsMixin(GatewayForm):
    """MsgBatchSize and PreserveMessageID have their own inputs; the link type's job options go
    in the ``options`` box."""

    def _add_option_fields(self, current: dict[str, Any]) -> None:
        batch = JOB_OPTIONS["MsgBatchSize"]
        self.fields["options.MsgBatchSize"] = forms.CharField(
            required=False,
            label="MsgBatchSize",
            help_text=f"{batch.help} Empty: the default ({batch.default}).",
            initial=current.get("MsgBatchSize", ""),
        )
        self.fields["options.PreserveMessageID"] = forms.ChoiceField(
            required=False,
            label="PreserveMessageID",
            choices=[("", "default (FALSE)"), *BOOL_CHOICES],
            help_text=JOB_OPTIONS["PreserveMessageID"].help,
            initial=current.get("PreserveMessageID", ""),
        )
        other = {k: v for k, v in current.items() if k not in JOB_OPTIONS}
        self.fields["options"] = forms.CharField(
            required=False,
            widget=forms.Textarea(attrs={"rows": 2, "class": "font-monospace"}),
            help_text=_system_job_options_help(),
            initial="\n".join(f"{k}={v}" for k, v in sorted(other.items())),
        )

    def clean_options(self) -> dict[str, str]:
        return _options_lines(self.cleaned_data.get("options", ""))

    def options_given(self) -> dict[str, str]:
        d = self.cleaned_data
        out = dict(d.get("options") or {})
        for name in JOB_OPTIONS:
            if d.get(f"options.{name}") not in ("", None):
                out[name] = d[f"options.{name}"]
        return out


class JobCreateForm(JobOptionFieldsMixin):
    """CREATE_JOB for one direction (chosen first: it decides which queues are offered)."""

    job_name = forms.CharField(max_length=30, label="Name")
    propagation_type = forms.ChoiceField(
        choices=Direction.choices, widget=forms.HiddenInput, label="Direction"
    )
    source = forms.ChoiceField()
    destination = forms.ChoiceField()
    rule = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "class": "font-monospace"}),
        help_text="A rule condition on the source (multi-consumer source only), e.g. "
        ":msg.region = 'EU'; empty: every message.",
    )
    transformation = forms.ChoiceField(required=False, help_text="From MGW_TRANSFORMATIONS.")
    exception_queue = forms.ChoiceField(required=False)
    poll_interval = forms.FloatField(
        required=False, label="Poll interval", help_text="Seconds (0.1-3600); empty: default."
    )
    enabled = forms.BooleanField(required=False, initial=True)
    comments = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args: Any, direction: str, **kwargs: Any) -> None:
        kwargs.setdefault("initial", {})
        kwargs["initial"].setdefault("propagation_type", direction)
        super().__init__(*args, **kwargs)
        ours, foreign = _our_queues(), _foreign_queues()
        blank = [("", "— choose —")]
        if direction == Direction.OUTBOUND:
            self.fields["source"].choices = blank + ours
            self.fields["source"].help_text = "One of our queues (one job per queue source)."
            self.fields["destination"].choices = blank + foreign
            self.fields["destination"].help_text = "A registered foreign queue, NAME@LINK."
            self.fields["exception_queue"].choices = [("", "— none —"), *ours]
            self.fields[
                "exception_queue"
            ].help_text = (
                "One of our queues (not the source) for messages that cannot be converted."
            )
        else:
            self.fields["source"].choices = blank + foreign
            self.fields["source"].help_text = "A registered foreign queue, NAME@LINK."
            self.fields["destination"].choices = blank + ours
            self.fields["destination"].help_text = "One of our queues."
            self.fields["exception_queue"].choices = [("", "— none —"), *foreign]
            self.fields["exception_queue"].help_text = (
                "A foreign queue on the source's link (not the source) for messages that "
                "cannot be converted."
            )
            del self.fields["rule"]  # the foreign systems here have no message selectors
        self.fields["transformation"].choices = _transformations()
        self._add_option_fields({})

    def service_kwargs(self) -> dict[str, Any]:
        d = self.cleaned_data
        return {
            "job_name": d["job_name"],
            "propagation_type": d["propagation_type"],
            "source": d["source"],
            "destination": d["destination"],
            "rule": d.get("rule", ""),
            "transformation": d.get("transformation", ""),
            "exception_queue": d.get("exception_queue", ""),
            "poll_interval": d.get("poll_interval"),
            "options": self.options_given(),
            "enabled": bool(d.get("enabled")),
            "comments": d.get("comments", ""),
        }


class JobEditForm(JobOptionFieldsMixin):
    """ALTER_JOB: what differs from the job changes; an emptied field is cleared; the poll
    interval is kept, reset to the default or set."""

    rule = JobCreateForm.base_fields["rule"]
    transformation = forms.ChoiceField(required=False, help_text="Empty: none.")
    exception_queue = forms.ChoiceField(required=False, help_text="Empty: none.")
    poll_mode = forms.ChoiceField(
        choices=[("keep", "keep"), ("default", "reset to the default"), ("set", "set to")],
        initial="keep",
        widget=forms.RadioSelect,
        label="Poll interval",
    )
    poll_interval = forms.FloatField(
        required=False, label="Seconds", help_text="With 'set to': 0.1-3600."
    )
    comments = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args: Any, job: Job, **kwargs: Any) -> None:
        self.job = job
        kwargs.setdefault(
            "initial",
            {
                "rule": job.rule,
                "transformation": job.transformation,
                "exception_queue": job.exception_name,
                "poll_interval": job.poll_interval,
                "comments": job.comment,
            },
        )
        super().__init__(*args, **kwargs)
        if job.direction == Direction.OUTBOUND:
            self.fields["exception_queue"].choices = [("", "— none —"), *_our_queues()]
        else:
            del self.fields["rule"]
            self.fields["exception_queue"].choices = [("", "— none —"), *_foreign_queues()]
        self.fields["transformation"].choices = _transformations()
        self._add_option_fields(job.options)
        self.order_fields(
            ["rule", "transformation", "exception_queue", "poll_mode", "poll_interval"]
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("poll_mode") == "set" and data.get("poll_interval") is None:
            self.add_error("poll_interval", "Give the new interval in seconds.")
        return data

    def service_kwargs(self) -> dict[str, Any]:
        d, job = self.cleaned_data, self.job

        def changed(value: Any, current: Any) -> Any:
            return value if (value or "") != (current or "") else NO_CHANGE

        given = self.options_given()
        # Options absent from the form now but set on the job are removed (None).
        options = {**{k: None for k in job.options if k not in given}, **given}
        options = {k: v for k, v in options.items() if job.options.get(k) != v}
        mode = d.get("poll_mode")
        return {
            "rule": changed(d.get("rule", job.rule), job.rule),
            "transformation": changed(d.get("transformation"), job.transformation),
            "exception_queue": changed(d.get("exception_queue"), job.exception_name),
            "poll_interval": 0
            if mode == "keep"
            else (None if mode == "default" else d["poll_interval"]),
            "options": options or NO_CHANGE,
            "comments": d.get("comments", ""),
        }


class JobRemoveForm(forms.Form):
    force = forms.BooleanField(
        required=False,
        help_text="Remove it at once, leaving what the foreign system holds for it (its "
        "subscription, consumer or log records) in place.",
    )
