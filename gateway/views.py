"""Messaging Gateway console pages: thin views over gateway.services (writes) and
gateway.selectors (reads). Validate the form, call one service, render; the live parts are HTMX
fragments the pages poll."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib import messages
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from core.choices import Capability
from core.exceptions import DomainError
from core.generic import (
    Action,
    ObjectListView,
    action_page,
    confirm_page,
    form_page,
    partial_request,
    require,
    run_action,
)
from gateway import selectors, services
from gateway.bulk import JOB_BULK
from gateway.choices import AgentStatus, CleanupAction, Direction, JobStatus, LinkType, ShutdownMode
from gateway.filtersets import AgentFilterSet, ForeignQueueFilterSet, JobFilterSet, LinkFilterSet
from gateway.forms import (
    AgentCreateForm,
    AgentEditForm,
    AgentOptionForm,
    CleanupForm,
    ForeignQueueForm,
    ForeignQueueLinkForm,
    GatewayForm,
    JobCreateForm,
    JobEditForm,
    JobRemoveForm,
    LinkForm,
    LinkOptionForm,
    LinkTypeForm,
    LogLevelForm,
    driver_for,
)
from gateway.models import Agent, ForeignQueue, Job, Link
from gateway.tables import AgentTable, ForeignQueueTable, JobTable, LinkTable

T = TypeVar("T")

LOG_LINES = 200  # the agent page shows this many log lines, newest first
SEVERITIES = [("", "all"), ("WARN", "WARN and ERROR"), ("ERROR", "ERROR only")]
NAV = "gateway/_nav.html"  # the gateway's tabs, above each of its pages


def _service(form: GatewayForm, call: Callable[[], T]) -> Callable[[], T]:
    """``call`` with its DomainError (or a model's ValidationError) moved to the input that shows
    it (form.error_field, form.model_error_field), so core.generic.run_service puts the message
    next to that input."""

    def wrapped() -> T:
        try:
            return call()
        except DomainError as exc:
            exc.field = form.error_field(exc)
            raise
        except DjangoValidationError as exc:
            if not hasattr(exc, "error_dict"):
                raise
            raise DjangoValidationError(
                {form.model_error_field(k): v for k, v in exc.error_dict.items()}
            ) from exc

    return wrapped


def _post_or_none(request: HttpRequest) -> Any:
    return request.POST if request.method == "POST" else None


# --- lists ---------------------------------------------------------------------------------------


class GatewayListView(ObjectListView):
    """A gateway list: filterable, and its table polls itself (with the page's own URL and
    filters) every two seconds."""

    template_name = "gateway/object_list.html"
    poll_seconds = 2
    table_id = "gateway-table"


class AgentListView(GatewayListView):
    title = "Gateway agents"
    table_class = AgentTable
    filterset_class = AgentFilterSet
    # Annotated (GROUP BY) querysets lose Meta.ordering: order them for stable pages.
    selector = staticmethod(lambda: selectors.agent_list().order_by("name"))
    add_url_name = "gateway:agent_add"

    def get_table_kwargs(self) -> dict[str, Any]:
        return {"live": selectors.live_agent_ids()}


class LinkListView(GatewayListView):
    title = "Messaging system links"
    table_class = LinkTable
    filterset_class = LinkFilterSet
    selector = staticmethod(lambda: selectors.link_list().order_by("name"))
    add_url_name = "gateway:link_add"


class ForeignQueueListView(GatewayListView):
    title = "Foreign queues"
    table_class = ForeignQueueTable
    filterset_class = ForeignQueueFilterSet
    selector = staticmethod(selectors.foreign_queue_list)
    add_url_name = "gateway:foreignqueue_add"


class JobListView(GatewayListView):
    title = "Gateway jobs"
    table_class = JobTable
    filterset_class = JobFilterSet
    selector = staticmethod(selectors.job_list)
    add_url_name = "gateway:job_add"
    bulk = JOB_BULK


# --- dashboard -----------------------------------------------------------------------------------


def _dashboard_context() -> dict[str, Any]:
    live = selectors.live_agent_ids()
    by_agent = selectors.jobs_by_agent_and_status()
    rows = [
        {
            "agent": a,
            "ping": selectors.agent_ping(a, live=live),
            "jobs": sorted(by_agent.get(a.pk, {}).items()),
            "diagnostics": selectors.agent_diagnostics(a),
        }
        for a in selectors.agent_list()
    ]
    totals: dict[str, int] = defaultdict(int)
    for counts in by_agent.values():
        for status, n in counts.items():
            totals[status] += n
    return {
        "rows": rows,
        "job_totals": [(s, totals.get(s, 0)) for s in JobStatus.values],
        "link_count": Link.objects.count(),
        "foreign_queue_count": ForeignQueue.objects.count(),
    }


def dashboard(request: HttpRequest) -> HttpResponse:
    require(request, Capability.VIEW)
    return render(
        request, "gateway/dashboard.html", {"title": "Messaging Gateway", **_dashboard_context()}
    )


def dashboard_status(request: HttpRequest) -> HttpResponse:
    """The dashboard's live part (HTMX polls it)."""
    require(request, Capability.VIEW)
    return render(request, "gateway/_dashboard_status.html", _dashboard_context())


# --- agents --------------------------------------------------------------------------------------


def _agent(pk: int) -> Agent:
    return get_object_or_404(selectors.agent_list(), pk=pk)


def _agent_status_context(agent: Agent) -> dict[str, Any]:
    return {
        "object": agent,
        "ping": selectors.agent_ping(agent),
        "diagnostics": selectors.agent_diagnostics(agent),
        "placement": selectors.agent_placement(agent),
        "jobs": sorted(selectors.jobs_by_status(agent).items()),
        "can_start": agent.status == AgentStatus.NOT_STARTED,
        "can_shutdown": agent.status not in (AgentStatus.NOT_STARTED, AgentStatus.BROKEN),
    }


def _agent_log_context(request: HttpRequest, agent: Agent) -> dict[str, Any]:
    severity = request.GET.get("severity", "")
    if severity not in dict(SEVERITIES):
        severity = ""
    return {
        "object": agent,
        "lines": selectors.agent_log(agent, limit=LOG_LINES, min_severity=severity),
        "severity": severity,
        "severities": SEVERITIES,
        "log_lines": LOG_LINES,
    }


def agent_detail(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.VIEW)
    agent = _agent(pk)
    ctx = {
        **_agent_status_context(agent),
        **_agent_log_context(request, agent),
        "title": f"Agent {agent.name}",
        "links": selectors.link_list().filter(agent=agent),
        "log_level_form": LogLevelForm(initial={"log_level": agent.log_level}),
        "option_form": AgentOptionForm(),
    }
    return render(request, "gateway/agent_detail.html", ctx)


def agent_status(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.VIEW)
    return render(request, "gateway/_agent_status.html", _agent_status_context(_agent(pk)))


def agent_log(request: HttpRequest, pk: int) -> HttpResponse:
    """The agent log (newest first), polled by the agent page with its severity filter."""
    require(request, Capability.VIEW)
    return render(request, "gateway/_agent_log.html", _agent_log_context(request, _agent(pk)))


def _to_agent(agent: Agent) -> HttpResponse:
    return redirect("gateway:agent", pk=agent.pk)


def agent_add(request: HttpRequest) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    form = AgentCreateForm(_post_or_none(request))
    return form_page(
        request,
        form,
        _service(form, lambda: services.agent_create(user=request.user, **form.service_kwargs())),
        title="New gateway agent",
        success=_to_agent,
        template="gateway/form.html",
        context={"submit_label": "Create"},
    )


def agent_edit(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    agent = get_object_or_404(Agent, pk=pk)
    form = AgentEditForm(_post_or_none(request), agent=agent)

    def done(a: Agent) -> HttpResponse:
        if a.restart_required:
            messages.warning(
                request,
                f"Agent {a.name} is {a.status}: {', '.join(a.restart_required)} take(s) effect "
                "after a restart.",
            )
        return _to_agent(a)

    return form_page(
        request,
        form,
        _service(
            form,
            lambda: services.agent_alter(user=request.user, agent=agent, **form.service_kwargs()),
        ),
        title=f"Alter agent {agent.name}",
        success=done,
        template="gateway/form.html",
    )


def agent_delete(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    agent = get_object_or_404(Agent, pk=pk)
    return confirm_page(
        request,
        agent,
        lambda: services.agent_remove(user=request.user, agent=agent),
        kind="agent",
        done=f"Agent {agent.name} removed.",
        gone_url="gateway:agent_list",
        title=f"Remove agent {agent.name}?",
        text="REMOVE_AGENT: refused for DEFAULT_AGENT, while the agent has links, and unless it "
        "is stopped.",
        submit="Remove agent",
        cancel_url=reverse("gateway:agent", args=[agent.pk]),
        nav=NAV,
    )


# One button each: the service and the message on success (each needs OPERATE, the default).
AGENT_ACTIONS: dict[str, Action] = {
    "start": Action(
        services.agent_startup,
        "Agent {obj.name}: start scheduled; a worker on mgw.{obj.name} starts it.",
    ),
    "shutdown": Action(
        services.agent_shutdown,
        "Agent {obj.name}: shutdown requested (batches in flight finish).",
        params={"mode": ShutdownMode.NORMAL},
    ),
    "shutdown_immediate": Action(
        services.agent_shutdown,
        "Agent {obj.name}: immediate shutdown requested (batches in flight roll back).",
        params={"mode": ShutdownMode.IMMEDIATE},
    ),
}


def agent_action(request: HttpRequest, pk: int, verb: str) -> HttpResponse:
    """Start or Shutdown (one the state does not allow: the service's message)."""
    return action_page(
        request,
        AGENT_ACTIONS,
        verb,
        get=lambda: get_object_or_404(Agent, pk=pk),
        arg="agent",
        back=_to_agent,
    )


def agent_log_level(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.OPERATE)
    agent = get_object_or_404(Agent, pk=pk)
    form = LogLevelForm(_post_or_none(request), initial={"log_level": agent.log_level})
    return form_page(
        request,
        form,
        _service(
            form,
            lambda: services.agent_set_log_level(
                user=request.user, agent=agent, log_level=form.cleaned_data["log_level"]
            ),
        ),
        title=f"Set the log level of {agent.name}",
        success=_to_agent,
        template="gateway/form.html",
    )


def agent_cleanup(request: HttpRequest, pk: int) -> HttpResponse:
    """CLEANUP_GATEWAY, with the warnings each action needs."""
    require(request, Capability.OPERATE)
    agent = get_object_or_404(Agent, pk=pk)
    form = CleanupForm(_post_or_none(request), agent=agent)

    def done(a: Agent) -> HttpResponse:
        messages.success(request, f"{form.cleaned_data['action']} done for agent {agent.name}.")
        return _to_agent(a)

    return form_page(
        request,
        form,
        _service(
            form,
            lambda: services.agent_cleanup(
                user=request.user,
                agent=agent,
                action=form.cleaned_data["action"],
                sarg=form.cleaned_data.get("sarg", ""),
            ),
        ),
        title=f"Clean up agent {agent.name}",
        success=done,
        template="gateway/cleanup.html",
        context={"object": agent, "actions": CleanupAction, "submit_label": "Run cleanup"},
    )


def agent_option_add(request: HttpRequest, pk: int) -> HttpResponse:
    """SET_OPTION(AGENT_JAVA_PROP)."""
    require(request, Capability.CONFIGURE)
    agent = get_object_or_404(Agent, pk=pk)
    form = AgentOptionForm(_post_or_none(request))
    return form_page(
        request,
        form,
        _service(
            form,
            lambda: services.agent_option_set(user=request.user, agent=agent, **form.cleaned_data),
        ),
        title=f"Set an option of agent {agent.name}",
        success=lambda _o: _to_agent(agent),
        template="gateway/form.html",
    )


def agent_option_remove(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    agent = get_object_or_404(Agent, pk=pk)
    name = request.POST.get("name", "")
    if request.method == "POST":
        run_action(
            request,
            lambda: services.agent_option_remove(user=request.user, agent=agent, name=name),
            f"Option {name} removed.",
        )
    return _to_agent(agent)


# --- links ---------------------------------------------------------------------------------------


def _to_link(link: Link) -> HttpResponse:
    return redirect("gateway:link", pk=link.pk)


def _guarantees(link: Link) -> dict[str, Any]:
    """The delivery guarantee of the link's jobs per direction (selectors.link_guarantees)."""
    if driver_for(link.link_type) is None:
        return {}
    found = selectors.link_guarantees(link)
    return {
        **found,
        "log_queue_matters": link.link_type in (LinkType.AMQP, LinkType.REDIS),
    }


def _shown_properties(link: Link) -> list[tuple[str, Any, str]]:
    """(name, value, help) of the link's properties; secrets never (they are not stored here
    either, but a driver's secret-kind property must not show even if one were)."""
    driver = driver_for(link.link_type)
    specs = driver.properties if driver else {}
    return [
        (name, value, specs.get(name, (0, 0, 0, ""))[3])
        for name, value in sorted(link.properties.items())
        if name != "password" and specs.get(name, (0, ""))[1] != "secret"
    ]


def link_detail(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.VIEW)
    link = get_object_or_404(selectors.link_list(), pk=pk)
    ctx = {
        "object": link,
        "title": f"Link {link.name}",
        "properties": _shown_properties(link),
        "guarantees": _guarantees(link),
        "foreign_queues": ForeignQueueTable(
            list(selectors.foreign_queue_list().filter(link=link)), orderable=False
        ),
        "jobs": JobTable(list(selectors.job_list().filter(link=link)), orderable=False),
        "option_form": LinkOptionForm(link=link),
        "driver_missing": driver_for(link.link_type) is None,
    }
    return render(request, "gateway/link_detail.html", ctx)


def link_test(request: HttpRequest, pk: int) -> HttpResponse:
    """Test connection: HTMX gets the result box, a plain POST a message on the link page."""
    require(request, Capability.OPERATE)
    link = get_object_or_404(Link, pk=pk)
    if request.method != "POST":
        return _to_link(link)
    try:
        ok, text = services.link_test(user=request.user, link=link)
    except (ImportError, ValueError) as exc:  # a driver not installed, a key that changed
        ok, text = False, str(exc)
    if partial_request(request):
        return render(request, "gateway/_link_test.html", {"ok": ok, "text": text})
    (messages.success if ok else messages.error)(
        request, f"Connection {'OK' if ok else 'failed'}: {text}"
    )
    return _to_link(link)


def link_add(request: HttpRequest) -> HttpResponse:
    """CREATE_MSGSYSTEM_LINK in two steps: the type (``?link_type=``), then its properties."""
    require(request, Capability.CONFIGURE)
    link_type = (request.GET.get("link_type") or "").upper()
    if link_type not in LinkType.values:
        return render(
            request,
            "gateway/choose.html",
            {
                "form": LinkTypeForm(),
                "title": "New messaging system link",
                "text": "Choose the type first: it decides the properties asked next.",
            },
        )
    form = LinkForm(_post_or_none(request), link_type=link_type)
    return form_page(
        request,
        form,
        _service(form, lambda: services.link_create(user=request.user, **form.service_kwargs())),
        title=f"New {LinkType(link_type).label} link",
        success=_to_link,
        template="gateway/form.html",
        context={"submit_label": "Create", "driver_missing": form.driver is None},
    )


def link_edit(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    link = get_object_or_404(Link.objects.select_related("agent"), pk=pk)
    form = LinkForm(_post_or_none(request), link_type=link.link_type, link=link)
    return form_page(
        request,
        form,
        _service(
            form, lambda: services.link_alter(user=request.user, link=link, **form.service_kwargs())
        ),
        title=f"Alter link {link.name}",
        success=_to_link,
        template="gateway/form.html",
        context={
            "locked": [("Agent", link.agent.name), ("Type", link.link_type)],
            "driver_missing": form.driver is None,
        },
    )


def link_delete(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    link = get_object_or_404(Link, pk=pk)
    return confirm_page(
        request,
        link,
        lambda: services.link_remove(user=request.user, link=link),
        kind="link",
        done=f"Link {link.name} removed.",
        gone_url="gateway:link_list",
        title=f"Remove link {link.name}?",
        text="REMOVE_MSGSYSTEM_LINK: refused while foreign queues are registered on it.",
        submit="Remove link",
        cancel_url=reverse("gateway:link", args=[link.pk]),
        nav=NAV,
    )


def link_option_add(request: HttpRequest, pk: int) -> HttpResponse:
    """SET_OPTION(MSGLINK_OPTION)."""
    require(request, Capability.CONFIGURE)
    link = get_object_or_404(Link, pk=pk)
    form = LinkOptionForm(_post_or_none(request), link=link)
    return form_page(
        request,
        form,
        _service(
            form,
            lambda: services.link_option_set(user=request.user, link=link, **form.cleaned_data),
        ),
        title=f"Set an option of link {link.name}",
        success=_to_link,
        template="gateway/form.html",
    )


def link_option_remove(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    link = get_object_or_404(Link, pk=pk)
    name = request.POST.get("name", "")
    if request.method == "POST":
        run_action(
            request,
            lambda: services.link_option_remove(user=request.user, link=link, name=name),
            f"Option {name} removed.",
        )
    return _to_link(link)


# --- foreign queues ------------------------------------------------------------------------------


def foreignqueue_add(request: HttpRequest) -> HttpResponse:
    """REGISTER_FOREIGN_QUEUE in two steps: the link (``?link=``), then name, domain, options."""
    require(request, Capability.CONFIGURE)
    chooser = ForeignQueueLinkForm(request.GET if "link" in request.GET else None)
    if not chooser.is_valid():
        return render(
            request,
            "gateway/choose.html",
            {
                "form": chooser,
                "title": "Register a foreign queue",
                "text": "Choose the link first: its type decides the domains and options.",
            },
        )
    link = chooser.cleaned_data["link"]
    form = ForeignQueueForm(_post_or_none(request), link=link)
    return form_page(
        request,
        form,
        _service(
            form,
            lambda: services.foreign_queue_register(user=request.user, **form.service_kwargs()),
        ),
        title=f"Register a foreign queue on {link.name} ({link.link_type})",
        success=lambda _fq: redirect("gateway:foreignqueue_list"),
        template="gateway/form.html",
        context={
            "submit_label": "Register",
            "note": "Registering records the queue's name only: it creates nothing in the "
            "foreign system.",
        },
    )


def foreignqueue_delete(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    fq = get_object_or_404(ForeignQueue.objects.select_related("link"), pk=pk)
    return confirm_page(
        request,
        fq,
        lambda: services.foreign_queue_unregister(user=request.user, foreign_queue=fq),
        kind="foreign queue",
        done=f"{fq} unregistered.",
        gone_url="gateway:foreignqueue_list",
        title=f"Unregister {fq}?",
        text="UNREGISTER_FOREIGN_QUEUE: refused while a job uses it. Nothing is removed from the "
        "foreign system.",
        submit="Unregister",
        # A foreign queue has no page of its own: the list is where it is shown.
        cancel_url=reverse("gateway:foreignqueue_list"),
        nav=NAV,
    )


# --- jobs ----------------------------------------------------------------------------------------


def _job(pk: int) -> Job:
    return get_object_or_404(selectors.job_list(), pk=pk)


def _to_job(job: Job) -> HttpResponse:
    return redirect("gateway:job", pk=job.pk)


def _job_status_context(job: Job) -> dict[str, Any]:
    pending = job.status == JobStatus.DELETE_PENDING
    return {
        "object": job,
        "pending": pending,
        "can_reset": not pending and job.status in (JobStatus.FAILED, JobStatus.RETRY),
    }


def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.VIEW)
    job = _job(pk)
    return render(
        request,
        "gateway/job_detail.html",
        {**_job_status_context(job), "title": f"Job {job.name}"},
    )


def job_status(request: HttpRequest, pk: int) -> HttpResponse:
    """The job page's live part: status, counters, last error and the buttons they allow."""
    require(request, Capability.VIEW)
    return render(request, "gateway/_job_status.html", _job_status_context(_job(pk)))


def job_add(request: HttpRequest) -> HttpResponse:
    """CREATE_JOB in two steps: the direction (``?direction=``), then its queues."""
    require(request, Capability.CONFIGURE)
    direction = (request.GET.get("direction") or "").upper()
    if direction not in Direction.values:
        return render(request, "gateway/job_direction.html", {"title": "New gateway job"})
    form = JobCreateForm(_post_or_none(request), direction=direction)
    return form_page(
        request,
        form,
        _service(form, lambda: services.job_create(user=request.user, **form.service_kwargs())),
        title=f"New {direction.lower()} job",
        success=_to_job,
        template="gateway/form.html",
        context={"submit_label": "Create"},
    )


def job_edit(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    job = _job(pk)
    form = JobEditForm(_post_or_none(request), job=job)
    return form_page(
        request,
        form,
        _service(
            form, lambda: services.job_alter(user=request.user, job=job, **form.service_kwargs())
        ),
        title=f"Alter job {job.name}",
        success=_to_job,
        template="gateway/form.html",
    )


JOB_ACTIONS: dict[str, Action] = {
    "enable": Action(services.job_enable, "Job {obj.name} enabled."),
    "disable": Action(
        services.job_disable, "Job {obj.name} disabled; its source keeps the messages."
    ),
    "reset": Action(
        services.job_reset, "Job {obj.name} reset: READY, failures 0, retried at once."
    ),
}


def job_action(request: HttpRequest, pk: int, verb: str) -> HttpResponse:
    """Enable, Disable, Reset: refused with the service's message on a DELETE_PENDING job."""
    return action_page(
        request,
        JOB_ACTIONS,
        verb,
        get=lambda: get_object_or_404(Job, pk=pk),
        arg="job",
        back=_to_job,
    )


def job_remove(request: HttpRequest, pk: int) -> HttpResponse:
    """REMOVE_JOB: DELETE_PENDING until the agent cleaned the foreign side, or at once with
    Force (leaving the foreign side as it is)."""
    require(request, Capability.CONFIGURE)
    job = _job(pk)
    form = JobRemoveForm(_post_or_none(request))
    if request.method == "POST" and form.is_valid():
        force = form.cleaned_data["force"]
        run_action(
            request,
            lambda: services.job_remove(user=request.user, job=job, force=force),
            f"Job {job.name} removed."
            if force
            else f"Job {job.name} is DELETE_PENDING: its agent removes it after cleaning the "
            "foreign side.",
        )
        if not Job.objects.filter(pk=pk).exists():
            return redirect("gateway:job_list")
        return _to_job(job)
    return render(
        request,
        "gateway/job_remove.html",
        {"object": job, "form": form, "title": f"Remove job {job.name}?"},
    )
