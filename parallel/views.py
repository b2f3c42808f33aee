"""Pages of the parallel app. Thin: validate the form, call one service, render."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from core.choices import Capability
from core.generic import ObjectListView, confirm_page, form_page, require, run_action
from parallel import selectors, services
from parallel.filtersets import LogicalQueueFilterSet
from parallel.forms import LogicalQueueCreateForm, PurposeForm, RebuildForm
from parallel.models import LogicalQueue, LogicalQueuePartition
from parallel.tables import LogicalQueueTable


class LogicalQueueListView(ObjectListView):
    title = "Parallel queues"
    template_name = "parallel/logicalqueue_list.html"
    table_class = LogicalQueueTable
    add_url_name = "parallel:logicalqueue_add"
    selector = staticmethod(selectors.logical_queue_list)
    filterset_class = LogicalQueueFilterSet


def logicalqueue_add(request: HttpRequest) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    form = LogicalQueueCreateForm(request.POST or None)
    return form_page(
        request,
        form,
        lambda: services.logical_queue_create(user=request.user, **form.cleaned_data),
        title="New logical queue",
    )


def logicalqueue_detail(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.VIEW)
    try:
        lq = selectors.logical_queue_get(pk)
    except LogicalQueue.DoesNotExist as exc:
        raise Http404("No such logical queue.") from exc
    balance = selectors.logical_queue_balance(lq, instance=request.GET.get("instance") or None)
    return render(
        request,
        "parallel/logicalqueue_detail.html",
        {
            "object": lq,
            "balance": balance,
            "warnings": selectors.logical_queue_warnings(lq),
            "rebuild_form": RebuildForm(),
        },
    )


def logicalqueue_rebuild(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    lq = get_object_or_404(LogicalQueue, pk=pk)
    form = RebuildForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        run_action(
            request,
            lambda: services.logical_queue_rebuild(
                user=request.user, logical_queue=lq, instances=form.cleaned_data["instances"]
            ),
            "Ring rebuilt over {result.instances}; moved: {result.changed}.",
        )
    return redirect(lq)


def logicalqueue_delete(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    lq = get_object_or_404(LogicalQueue, pk=pk)
    return confirm_page(
        request,
        lq,
        lambda: services.logical_queue_delete(user=request.user, logical_queue=lq),
        kind="logical queue",
        done=f"Logical queue {lq.name} dropped with its queues.",
        gone_url="parallel:logicalqueue_list",
    )


def partition_purpose(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    part = get_object_or_404(LogicalQueuePartition.objects.select_related("logical_queue"), pk=pk)
    form = PurposeForm(request.POST or None, initial={"purpose": part.purpose})
    return form_page(
        request,
        form,
        lambda: (
            services.logical_partition_update(
                user=request.user, partition=part, purpose=form.cleaned_data["purpose"]
            ).logical_queue
        ),
        title=f"Purpose of {part.queue.name}",
    )
