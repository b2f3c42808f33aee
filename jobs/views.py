"""Propagation console pages: thin views over jobs.services (writes) and jobs.selectors (reads).
Validate the form, call one service, render; live parts are HTMX fragments polled by the page."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from core.choices import Capability
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
from jobs import selectors, services
from jobs.bulk import PROPAGATION_BULK
from jobs.filtersets import PropagationFilterSet, PropagationRunFilterSet, SparkJobFilterSet
from jobs.forms import (
    MaintenanceForm,
    PropagationCreateForm,
    PropagationEditForm,
    ScheduleForm,
    SparkJobForm,
)
from jobs.models import Propagation, PropagationSchedule, SparkJob
from jobs.schedule import parse_next_time
from jobs.tables import PropagationRunTable, PropagationTable, SparkJobTable

HISTORY_RUNS = 30  # runs shown on a propagation's page; the runs page has them all

# --- lists ---------------------------------------------------------------------------------------


class PropagationListView(ObjectListView):
    title = "Propagations"
    table_class = PropagationTable
    filterset_class = PropagationFilterSet
    selector = staticmethod(selectors.propagation_list)
    add_url_name = "jobs:propagation_add"
    template_name = "jobs/propagation_list.html"
    bulk = PROPAGATION_BULK

    # The table polls itself (every few seconds) with the page's own URL and filters.
    poll_seconds = 3
    table_id = "propagation-table"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        ctx = super().get_context_data(**kwargs)
        if not partial_request(self.request):
            ctx["maintenance"] = selectors.maintenance()
        return ctx


class RunListView(ObjectListView):
    title = "Propagation runs"
    table_class = PropagationRunTable
    filterset_class = PropagationRunFilterSet
    selector = staticmethod(selectors.run_list)


# --- one propagation -----------------------------------------------------------------------------


def _get(pk: int) -> Propagation:
    try:
        return selectors.propagation_get(pk)
    except Propagation.DoesNotExist as exc:
        raise Http404("No such propagation.") from exc


def _status_context(prop: Propagation) -> dict[str, Any]:
    schedule: PropagationSchedule | None = getattr(prop, "schedule", None)
    run = schedule.run if schedule is not None else None
    history = PropagationRunTable(
        list(selectors.run_list(propagation=prop)[:HISTORY_RUNS]),
        exclude=("propagation",),
        orderable=False,
    )
    return {
        "object": prop,
        "schedule": schedule,
        "run": run,
        "stuck": run is not None and selectors.run_is_stuck(run),
        "totals": selectors.schedule_totals(schedule, run),
        "history": history,
        "history_size": HISTORY_RUNS,
    }


def propagation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.VIEW)
    prop = _get(pk)
    ctx = _status_context(prop)
    schedule = ctx["schedule"]
    next_time = None
    if schedule is not None and schedule.next_time:
        next_time = parse_next_time(schedule.next_time)
    ctx.update(
        maintenance=selectors.maintenance(),
        next_time_meaning=next_time.describe() if next_time is not None else None,
        warnings=selectors.propagation_warnings(prop),
        job_members=list(prop.job_members().only("id", "name")) if prop.shares_job else [],
    )
    return render(request, "jobs/propagation_detail.html", ctx)


def propagation_status(request: HttpRequest, pk: int) -> HttpResponse:
    """The detail page's live part (HTMX polls it): state, current run, counters, history."""
    require(request, Capability.VIEW)
    return render(request, "jobs/_propagation_status.html", _status_context(_get(pk)))


def propagation_add(request: HttpRequest) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    form = PropagationCreateForm(request.POST or None)
    return form_page(
        request,
        form,
        lambda: services.propagation_create(user=request.user, **form.service_kwargs()),
        title="New propagation",
        context={"submit_label": "Create"},
    )


def propagation_edit(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    prop = get_object_or_404(Propagation, pk=pk)
    form = PropagationEditForm(request.POST or None, propagation=prop)
    return form_page(
        request,
        form,
        lambda: services.propagation_update(
            user=request.user, propagation=prop, **form.cleaned_data
        ),
        title=f"Edit propagation {prop.name}",
    )


def propagation_delete(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    prop = get_object_or_404(Propagation, pk=pk)
    return confirm_page(
        request,
        prop,
        lambda: services.propagation_delete(user=request.user, propagation=prop),
        kind="propagation",
        done=f"Propagation {prop.name} dropped.",
        gone_url="jobs:propagation_list",
        text=(
            f"Its schedule, its run history and its subscription to {prop.source_queue.name} "
            "go: the source stops keeping messages for it. A running window stops at its next "
            f"batch. Messages already at {prop.destination} stay. This cannot be undone."
        ),
    )


# One button each: the service and the message on success (each needs OPERATE, the default).
ACTIONS: dict[str, Action] = {
    "start": Action(services.propagation_start, "Propagation {obj.name} started."),
    "stop": Action(services.propagation_stop, "Propagation {obj.name} stopped."),
    "enable": Action(services.schedule_enable, "Schedule of {obj.name} enabled."),
    "disable": Action(services.schedule_disable, "Schedule of {obj.name} disabled."),
    "reset": Action(
        services.schedule_reset,
        "Failures of {obj.name} cleared; the schedule is enabled and runs at once.",
    ),
}


def propagation_action(request: HttpRequest, pk: int, verb: str) -> HttpResponse:
    """A button on the propagation's page (stop a stopped one: the service's message)."""
    return action_page(
        request,
        ACTIONS,
        verb,
        get=lambda: get_object_or_404(Propagation, pk=pk),
        arg="propagation",
    )


def schedule_add(request: HttpRequest, pk: int) -> HttpResponse:
    """DBMS_AQADM.SCHEDULE_PROPAGATION for a propagation that has no schedule."""
    require(request, Capability.CONFIGURE)
    prop = get_object_or_404(Propagation, pk=pk)
    form = ScheduleForm(request.POST or None)
    return form_page(
        request,
        form,
        lambda: services.schedule_create(
            user=request.user, propagation=prop, **form.schedule_params()
        ),
        title=f"Schedule propagation {prop.name}",
        success=lambda _s: redirect(prop),
        context={"submit_label": "Schedule"},
    )


def schedule_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """DBMS_AQADM.ALTER_PROPAGATION_SCHEDULE."""
    require(request, Capability.CONFIGURE)
    prop = get_object_or_404(Propagation.objects.select_related("schedule"), pk=pk)
    form = ScheduleForm(request.POST or None, schedule=getattr(prop, "schedule", None))
    return form_page(
        request,
        form,
        lambda: services.schedule_update(
            user=request.user, propagation=prop, **form.schedule_params()
        ),
        title=f"Alter the schedule of {prop.name}",
        success=lambda _s: redirect(prop),
    )


def schedule_delete(request: HttpRequest, pk: int) -> HttpResponse:
    """DBMS_AQADM.UNSCHEDULE_PROPAGATION (the propagation stays)."""
    require(request, Capability.CONFIGURE)
    prop = get_object_or_404(Propagation, pk=pk)
    if request.method == "POST":
        run_action(
            request,
            lambda: services.schedule_delete(user=request.user, propagation=prop),
            f"Propagation {prop.name} unscheduled; it moves nothing until it is scheduled again.",
        )
    return redirect(prop)


# --- workers and maintenance mode ----------------------------------------------------------------


def worker_list(request: HttpRequest) -> HttpResponse:
    require(request, Capability.VIEW)
    ctx = {"workers": selectors.worker_list(), "title": "Workers"}
    if partial_request(request):
        return render(request, "jobs/_worker_table.html", ctx)
    return render(request, "jobs/worker_list.html", ctx)


def maintenance_set(request: HttpRequest) -> HttpResponse:
    """Maintenance mode on or off (the switch on the propagation list and the dashboard)."""
    require(request, Capability.OPERATE)
    back = request.POST.get("next") or request.GET.get("next") or ""
    if not url_has_allowed_host_and_scheme(back, {request.get_host()}, request.is_secure()):
        back = ""
    form = MaintenanceForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        on = form.cleaned_data["restricted"]
        run_action(
            request,
            lambda: services.maintenance_set(
                user=request.user, restricted=on, reason=form.cleaned_data["reason"]
            ),
            "Maintenance mode is on: no new propagation run starts; running ones finish."
            if on
            else "Maintenance mode is off: enabled schedules resume.",
        )
    return redirect(back or reverse("jobs:propagation_list"))


# --- topology graph and "trace a message" --------------------------------------------------------

TRACE_MAX_HOPS = 16  # a trace stops this deep (and says so); cycles stop it earlier


def topology(request: HttpRequest) -> HttpResponse:
    """Queues and propagations as a graph (Cytoscape.js). The page carries its data; the graph
    asks the same URL with ``?format=json`` every few seconds and updates itself in place. The
    JSON takes ``?q=`` (part of a queue name): the part of the graph around those queues."""
    from django.http import JsonResponse

    from gateway.choices import JobStatus
    from jobs.choices import ScheduleState

    require(request, Capability.VIEW)
    q = request.GET.get("q", "")[:128]
    if request.GET.get("format") == "json":
        return JsonResponse(selectors.topology_filter(selectors.topology(q=q), q))
    # The page carries the whole graph: its filter box hides and shows parts without a reload.
    graph = selectors.topology()
    names = {n["id"]: n["name"] for n in graph["nodes"]}
    edges = [
        {**e, "source_name": names.get(e["source"], ""), "target_name": names.get(e["target"], "")}
        for e in graph["edges"]
    ]
    return render(
        request,
        "jobs/topology.html",
        {
            "graph": {**graph, "edges": edges},
            "states": ScheduleState.values,
            "job_states": JobStatus.values,
            "counts": {
                kind: sum(e["kind"] == kind for e in graph["edges"])
                for kind in (selectors.EDGE_PROPAGATION, selectors.EDGE_GATEWAY_JOB)
            },
            "q": q,
            "title": "Topology",
        },
    )


def trace(request: HttpRequest) -> HttpResponse:
    """Where a message would go from a queue, hop by hop, and which rule decides each hop. A dry
    run (nothing is enqueued), so a GET: a trace is a link that can be shared."""
    import json

    from core.exceptions import DomainError
    from jobs.forms import TraceForm
    from rules.lang.pipeline import message_to_json

    require(request, Capability.VIEW)
    asked = "message" in request.GET or "msgid" in request.GET
    # A link with only ?queue= (from a queue's page) preselects the queue without errors.
    form = TraceForm(request.GET if asked else None, initial=request.GET.dict())
    result, message_json = None, ""
    if asked and form.is_valid():
        message = form.cleaned_data["rules_message"]
        try:
            result = selectors.trace(
                queue=form.cleaned_data["queue"], message=message, max_hops=TRACE_MAX_HOPS
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            message_json = json.dumps(message_to_json(message), indent=2, ensure_ascii=False)
            for hop in result["hops"]:
                hop["indent"] = 0.5 + 1.5 * hop["depth"]
                if hop.get("message_out") is not None:
                    hop["message_out_json"] = json.dumps(
                        hop["message_out"], indent=2, ensure_ascii=False
                    )
    return render(
        request,
        "jobs/trace.html",
        {
            "form": form,
            "result": result,
            "message_json": message_json,
            "max_hops": TRACE_MAX_HOPS,
            "title": "Trace a message",
        },
        status=400 if form.errors else 200,
    )


# --- Spark bulk propagation jobs -----------------------------------------------------------------


class SparkJobListView(ObjectListView):
    title = "Spark jobs"
    table_class = SparkJobTable
    filterset_class = SparkJobFilterSet
    selector = staticmethod(selectors.spark_job_list)
    template_name = "jobs/spark_list.html"

    # The table polls itself (every few seconds) with the page's own URL and filters.
    poll_seconds = 3
    table_id = "spark-table"


def _spark_get(pk: int) -> SparkJob:
    try:
        return selectors.spark_job_get(pk)
    except SparkJob.DoesNotExist as exc:
        raise Http404("No such Spark job.") from exc


def _spark_status_context(job: SparkJob) -> dict[str, Any]:
    from jobs.choices import SPARK_ACTIVE_STATES, SparkJobState

    counters = selectors.spark_job_counters(job)
    dry = job.dry_run_result or {}
    return {
        "object": job,
        "counters": counters,
        "parts": list(selectors.spark_job_parts(job)),
        "destination_names": list(counters["propagated"]),
        "dry_run_rows": sorted((dry.get("per_destination") or {}).items()),
        "active": job.state in SPARK_ACTIVE_STATES,
        "can_cancel": job.state in SPARK_ACTIVE_STATES,
        "can_rerun": job.state in (SparkJobState.FAILED, SparkJobState.CANCELLED),
    }


def spark_job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    from django.conf import settings

    require(request, Capability.VIEW)
    ctx = _spark_status_context(_spark_get(pk))
    ctx.update(default_master=settings.SPARK_MASTER, title=str(ctx["object"]))
    return render(request, "jobs/spark_detail.html", ctx)


def spark_job_status(request: HttpRequest, pk: int) -> HttpResponse:
    """The detail page's live part (HTMX polls it while the job is SUBMITTED or RUNNING)."""
    require(request, Capability.VIEW)
    return render(request, "jobs/_spark_status.html", _spark_status_context(_spark_get(pk)))


def spark_job_add(request: HttpRequest) -> HttpResponse:
    """Submit a bulk propagation job. Every role sees the form; submitting needs OPERATE."""
    from django.conf import settings

    require(request, Capability.VIEW if request.method in ("GET", "HEAD") else Capability.OPERATE)
    form = SparkJobForm(request.POST or None)
    return form_page(
        request,
        form,
        lambda: services.spark_job_submit(user=request.user, **form.service_kwargs()),
        title="Submit a Spark job",
        success=lambda job: redirect("spark:job", pk=job.pk),
        template="jobs/spark_form.html",
        context={"submit_label": "Submit", "default_master": settings.SPARK_MASTER},
    )


SPARK_ACTIONS: dict[str, Action] = {
    "cancel": Action(services.spark_job_cancel, "Spark job {obj.pk}: cancel requested."),
    "rerun": Action(
        services.spark_job_rerun, "Spark job {obj.pk} submitted again (attempt {{result.attempt}})."
    ),
}


def spark_job_action(request: HttpRequest, pk: int, verb: str) -> HttpResponse:
    """Cancel or Re-run (one the state does not allow: the service's message)."""
    return action_page(
        request,
        SPARK_ACTIONS,
        verb,
        get=lambda: get_object_or_404(SparkJob, pk=pk),
        arg="job",
        back=lambda job: redirect("spark:job", pk=job.pk),
    )
