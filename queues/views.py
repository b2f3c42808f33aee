"""Pages of the queues app. Thin: validate the form, call one service, render."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django_tables2 import RequestConfig

from core.choices import Capability
from core.generic import (
    BoundedPaginator,
    ObjectListView,
    confirm_page,
    form_page,
    partial_request,
    require,
    run_action,
    run_service,
)
from core.roles import user_can
from queues import engine, selectors, services
from queues.bulk import QUEUE_BULK
from queues.choices import MessageGrouping
from queues.filtersets import (
    AgentFilterSet,
    MessageFilterSet,
    OwnerMoveFilterSet,
    QueueFilterSet,
    QueuePrivilegeFilterSet,
    QueueTableFilterSet,
)
from queues.forms import (
    AgentAccessForm,
    AgentForm,
    DequeueForm,
    EnqueueForm,
    MessageRuleTestForm,
    PrivilegeForm,
    PurgeForm,
    QueueCreateForm,
    QueueEditForm,
    QueueTableCreateForm,
    QueueTableEditForm,
    ReplayForm,
    SetUpQueueForm,
    SubscriberForm,
)
from queues.models import Agent, Queue, QueuePrivilege, QueueTable, Subscriber
from queues.tables import (
    AgentTable,
    MessageTable,
    OwnerMoveTable,
    QueueListTable,
    QueuePrivilegeTable,
    QueueTableTable,
)

# --- lists ---------------------------------------------------------------------------------------


class QueueTableListView(ObjectListView):
    title = "Queue tables"
    table_class = QueueTableTable
    filterset_class = QueueTableFilterSet
    selector = staticmethod(selectors.queue_table_list)
    add_url_name = "queues:queuetable_add"


class OwnerMoveListView(ObjectListView):
    """The ownership log: every change of a queue table's owner instance, newest first."""

    title = "Queue table ownership moves"
    table_class = OwnerMoveTable
    filterset_class = OwnerMoveFilterSet
    selector = staticmethod(selectors.owner_move_list)


class QueueListView(ObjectListView):
    title = "Queues"
    table_class = QueueListTable
    filterset_class = QueueFilterSet
    selector = staticmethod(selectors.queue_list)
    add_url_name = "queues:queue_add"
    poll_seconds = 3  # depths and counters move while the page is open
    extra_add = (("queues:set_up_queue", "Set up queue"),)
    bulk = QUEUE_BULK


class AgentListView(ObjectListView):
    title = "AQ agents"
    table_class = AgentTable
    filterset_class = AgentFilterSet
    selector = staticmethod(selectors.agent_list)
    template_name = "queues/agent_list.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        ctx = super().get_context_data(**kwargs)
        ctx.update(agent_form=AgentForm(), access_form=AgentAccessForm())
        return ctx


class QueuePrivilegeListView(ObjectListView):
    title = "Queue privileges"
    table_class = QueuePrivilegeTable
    filterset_class = QueuePrivilegeFilterSet
    selector = staticmethod(selectors.queue_privilege_list)
    template_name = "queues/privilege_list.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        ctx = super().get_context_data(**kwargs)
        ctx["grant_form"] = PrivilegeForm()
        return ctx


# --- queue tables --------------------------------------------------------------------------------


def queuetable_detail(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.VIEW)
    qt = get_object_or_404(selectors.queue_table_list(), pk=pk)
    queues = QueueListTable(selectors.queue_list().filter(queue_table=qt))
    RequestConfig(
        request, paginate={"per_page": 25, "paginator_class": BoundedPaginator}
    ).configure(queues)
    schema = (
        None
        if qt.payload_schema is None
        else json.dumps(qt.payload_schema, indent=2, ensure_ascii=False)
    )
    recent = list(selectors.owner_move_list().filter(queue_table=qt)[:10])
    return render(
        request,
        "queues/queuetable_detail.html",
        {
            "object": qt,
            "table": queues,
            "schema_json": schema,
            "instances": [
                (label, getattr(qt, f"{role}_instance"), getattr(qt, f"{role}_instance_status"))
                for label, role in (("Primary", "primary"), ("Secondary", "secondary"))
            ]
            + [("Owner", qt.owner_instance, qt.owner_instance_status)],
            "instance_warnings": selectors.queue_table_instance_warnings(qt),
            "moves": OwnerMoveTable(recent, orderable=False) if recent else None,
        },
    )


def queuetable_add(request: HttpRequest) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    form = QueueTableCreateForm(request.POST or None)
    return form_page(
        request,
        form,
        lambda: services.queue_table_create(user=request.user, **form.cleaned_data),
        title="New queue table",
    )


def queuetable_edit(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    qt = get_object_or_404(QueueTable, pk=pk)
    form = QueueTableEditForm(request.POST or None, instance=qt)
    return form_page(
        request,
        form,
        lambda: services.queue_table_update(user=request.user, queue_table=qt, **form.cleaned_data),
        title=f"Edit {qt.name}",
    )


def queuetable_delete(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    qt = get_object_or_404(QueueTable, pk=pk)
    return confirm_page(
        request,
        qt,
        lambda: services.queue_table_delete(user=request.user, queue_table=qt),
        kind="queue table",
        done=f"Queue table {qt.name} dropped.",
        gone_url="queues:queuetable_list",
    )


# --- queues --------------------------------------------------------------------------------------


def queue_detail(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.VIEW)
    try:
        queue = selectors.queue_get(pk)
    except Queue.DoesNotExist as exc:
        raise Http404("No such queue.") from exc
    if partial_request(request) and request.GET.get("fragment") == "summary":
        return render(request, "queues/_queue_summary.html", {"object": queue})
    filterset = MessageFilterSet(request.GET or None, queryset=selectors.message_list(queue=queue))
    table = MessageTable(
        filterset.qs if filterset.is_bound else filterset.queryset,
        # Why a message is there matters only in an exception queue; elsewhere the columns would
        # push the payload out of sight.
        exclude=(() if queue.is_exception else ("original_queue", "exception_reason", "replayed"))
        + (() if queue.queue_table.message_grouping == "TRANSACTIONAL" else ("txn_group",)),
    )
    RequestConfig(
        request, paginate={"per_page": 20, "paginator_class": BoundedPaginator}
    ).configure(table)
    if partial_request(request) and request.GET.get("fragment") == "messages":
        return render(request, "core/_table.html", {"table": table})
    return render(
        request,
        "queues/queue_detail.html",
        {
            "object": queue,
            "table": table,
            "filter": filterset,
            "subscribers": queue.subscribers.all(),
            "enqueue_form": EnqueueForm(),
            "dequeue_form": DequeueForm(
                browse_only=not user_can(request.user, Capability.OPERATE),
                grouped=queue.queue_table.message_grouping == MessageGrouping.TRANSACTIONAL,
            ),
            "purge_form": PurgeForm(queue=queue),
            "replay_form": ReplayForm(),
            "subscriber_form": SubscriberForm(),
            "rule_test_form": MessageRuleTestForm(),
            "commit_time_warning": queue.queue_table.sort_order == "priority,commit_time",
        },
    )


def set_up_queue(request: HttpRequest) -> HttpResponse:
    """DBMS_STREAMS_ADM.SET_UP_QUEUE: the same service as the API's; on success, the queue."""
    require(request, Capability.CONFIGURE)
    form = SetUpQueueForm(request.POST or None)
    return form_page(
        request,
        form,
        lambda: services.set_up_queue(user=request.user, **form.cleaned_data),
        title="Set up queue (DBMS_STREAMS_ADM.SET_UP_QUEUE)",
        success=lambda done: _set_up_done(request, done, form.cleaned_data["queue_user"]),
        context={"submit_label": "Set up"},
    )


def _set_up_done(
    request: HttpRequest, done: services.SetUpQueueResult, queue_user: str
) -> HttpResponse:
    """Land on the queue and say what the call did: a rerun changes only the queue user's part,
    which the queue page itself does not show."""

    def made(created: bool) -> str:
        return "created" if created else "already existed"

    said = [
        f"Queue table {done.queue_table.name} {made(done.queue_table_created)}",
        f"queue {done.queue.name} {made(done.queue_created)}",
    ]
    if done.agent is not None:
        said.append(
            f"{queue_user} is a secure queue user as agent {done.agent.name} "
            f"({'new' if done.agent_created else 'existing'}) with ENQUEUE and DEQUEUE on "
            f"{done.queue.name}"
        )
    messages.success(request, "; ".join(said) + ".")
    return redirect(done.queue)


def queue_add(request: HttpRequest) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    initial = {"queue_table": request.GET.get("queue_table")}
    form = QueueCreateForm(request.POST or None, initial=initial)
    return form_page(
        request,
        form,
        lambda: services.queue_create(user=request.user, **form.cleaned_data),
        title="New queue",
    )


def queue_edit(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    queue = get_object_or_404(Queue, pk=pk)
    form = QueueEditForm(request.POST or None, instance=queue)
    return form_page(
        request,
        form,
        lambda: services.queue_update(user=request.user, queue=queue, **form.cleaned_data),
        title=f"Edit {queue.name}",
    )


def queue_delete(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    queue = get_object_or_404(Queue, pk=pk)
    return confirm_page(
        request,
        queue,
        lambda: services.queue_delete(user=request.user, queue=queue),
        kind="queue",
        done=f"Queue {queue.name} dropped.",
        gone_url="queues:queue_list",
    )


def queue_toggle(request: HttpRequest, pk: int, verb: str) -> HttpResponse:
    """Start or stop enqueue and/or dequeue (``what`` = enqueue, dequeue or both)."""
    require(request, Capability.OPERATE)
    queue = get_object_or_404(Queue, pk=pk)
    if request.method == "POST":
        what = request.POST.get("what", "both")
        flags = {"enqueue": what in ("enqueue", "both"), "dequeue": what in ("dequeue", "both")}
        service = services.queue_start if verb == "start" else services.queue_stop
        run_action(
            request,
            lambda: service(user=request.user, queue=queue, **flags),
            f"{verb.capitalize()}ed {what} on {queue.name}.",
        )
    return redirect(queue)


# Sent (HX-Trigger) after an enqueue or a dequeue that changed messages: the queue page's message
# table listens for it and reloads itself with its current filters.
MESSAGES_CHANGED = "aq-messages-changed"


def queue_enqueue(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.OPERATE)
    queue = get_object_or_404(Queue, pk=pk)
    form = EnqueueForm(request.POST or None)
    result = None
    if request.method == "POST" and form.is_valid():
        data = dict(form.cleaned_data)
        visibility = data.pop("visibility") or None
        delivery_mode = data.pop("delivery_mode")
        msg = engine.NewMessage(**data)
        result = run_service(
            request,
            form,
            lambda: services.message_enqueue(
                user=request.user,
                queue=queue,
                messages=[msg],
                visibility=visibility,
                delivery_mode=delivery_mode,
            ),
        )
        if result is not None and not partial_request(request):
            return redirect(queue)
    response = render(
        request,
        "queues/_enqueue.html",
        {
            "object": queue,
            "enqueue_form": form if result is None else EnqueueForm(),
            "enqueued": result,
        },
        status=400 if form.errors else 200,
    )
    if result:
        response["HX-Trigger"] = MESSAGES_CHANGED
    return response


def queue_dequeue(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.VIEW)
    queue = get_object_or_404(Queue, pk=pk)
    browse_only = not user_can(request.user, Capability.OPERATE)
    grouped = queue.queue_table.message_grouping == MessageGrouping.TRANSACTIONAL
    form = DequeueForm(request.POST or None, browse_only=browse_only, grouped=grouped)
    got = None
    mode = None
    restarted = exhausted = False
    if request.method == "POST" and form.is_valid():
        req = services.DequeueRequest(**form.cleaned_data)
        req.consumer_name = req.consumer_name or None
        req.correlation = req.correlation or None
        mode = req.mode
        got = run_service(
            request,
            form,
            lambda: services.message_dequeue(user=request.user, queue=queue, request=req),
        )
        next_message = req.navigation == engine.NEXT_MESSAGE
        restarted = next_message and form.cursor_dropped and got is not None
        exhausted = next_message and req.cursor is not None and got == []
        cursor = None
        if got:
            # The next NEXT_MESSAGE submit continues after the last message shown.
            cursor = form.cursor_after(got[-1].position.token())
        elif form.cursor_dropped and not form.errors:
            cursor = ""  # made under another selection: forget it
        # TRANSACTIONAL queue tables: the page keeps the token of the group it took last, also
        # past the group's end, so that Next message then says end of group (ORA-25235) as AQ
        # does and Next transaction moves on. An answer without a token (BROWSE, nothing found)
        # keeps the one it has: forgetting it would strand the rest of a half-taken group under
        # a lease nobody holds.
        posted = request.POST.get("group_token") or ""
        token = str(got[-1].group_token) if got and got[-1].group_token else posted
        if cursor is not None or token != posted:
            data = request.POST.copy()
            if cursor is not None:
                data["cursor"] = cursor
            data["group_token"] = token
            form = DequeueForm(data, browse_only=browse_only, grouped=grouped)
    response = render(
        request,
        "queues/_dequeue.html",
        {
            "object": queue,
            "dequeue_form": form,
            "dequeued": got,
            "dequeue_mode": mode,
            "cursor_restarted": restarted,
            "cursor_exhausted": exhausted,
        },
        status=400 if form.errors else 200,
    )
    if got and mode != engine.BROWSE:
        response["HX-Trigger"] = MESSAGES_CHANGED
    return response


def queue_purge(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.OPERATE)
    queue = get_object_or_404(Queue, pk=pk)
    form = PurgeForm(request.POST or None, queue=queue)
    if request.method == "POST" and form.is_valid():
        cond = engine.PurgeCondition(
            states=form.cleaned_data["states"],
            correlation=form.cleaned_data["correlation"] or None,
            ids=form.cleaned_data["ids"],
        )
        removed = run_service(
            request,
            form,
            lambda: services.queue_purge(user=request.user, queue=queue, condition=cond),
        )
        if removed is not None:
            messages.success(request, f"Purged {removed} message(s) from {queue.name}.")
            return redirect(queue)
    return render(
        request,
        "core/form.html",
        {"form": form, "title": f"Purge {queue.name}", "danger": True, "submit_label": "Purge"},
        status=400 if form.errors else 200,
    )


def queue_replay(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.OPERATE)
    queue = get_object_or_404(Queue, pk=pk)
    form = ReplayForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        moved = run_service(
            request,
            form,
            lambda: services.exception_queue_replay(
                user=request.user, queue=queue, ids=form.cleaned_data["ids"]
            ),
        )
        if moved is not None:
            messages.success(request, f"Replayed {moved} message(s) to their original queues.")
            return redirect(queue)
    return render(
        request,
        "core/form.html",
        {"form": form, "title": f"Replay from {queue.name}", "submit_label": "Replay"},
        status=400 if form.errors else 200,
    )


def subscriber_add(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    queue = get_object_or_404(Queue.objects.select_related("queue_table"), pk=pk)
    form = SubscriberForm(request.POST or None)
    return form_page(
        request,
        form,
        lambda: services.subscriber_add(user=request.user, queue=queue, **form.cleaned_data),
        title=f"Add subscriber to {queue.name}",
        success=lambda _sub: redirect(queue),
        context={"submit_label": "Add"},
    )


def subscriber_remove(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    sub = get_object_or_404(Subscriber.objects.select_related("queue"), pk=pk)
    if request.method == "POST":
        run_action(
            request,
            lambda: services.subscriber_remove(user=request.user, subscriber=sub),
            f"Subscriber {sub.name} removed.",
        )
    return redirect(sub.queue)


# --- agents and privileges -----------------------------------------------------------------------


def agent_add(request: HttpRequest) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    form = AgentForm(request.POST or None)
    return form_page(
        request,
        form,
        lambda: services.agent_create(user=request.user, **form.cleaned_data),
        title="New AQ agent",
        success=lambda _agent: redirect("queues:agent_list"),
    )


def agent_delete(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    agent = get_object_or_404(Agent, pk=pk)
    if request.method == "POST":
        run_action(
            request,
            lambda: services.agent_delete(user=request.user, agent=agent),
            f"Agent {agent.name} dropped.",
        )
    return redirect("queues:agent_list")


def agent_access(request: HttpRequest, verb: str) -> HttpResponse:
    """ENABLE_DB_ACCESS / DISABLE_DB_ACCESS."""
    require(request, Capability.CONFIGURE)
    form = AgentAccessForm(request.POST or None)
    service = (
        services.agent_enable_db_access if verb == "enable" else services.agent_disable_db_access
    )

    def call() -> bool:
        d = form.cleaned_data
        service(user=request.user, agent=d["agent"], db_user=d["user"])
        return True

    return form_page(
        request,
        form,
        call,
        title=f"{verb.capitalize()} DB access",
        success=lambda _done: redirect("queues:agent_list"),
        context={"submit_label": verb.capitalize()},
    )


def privilege_grant(request: HttpRequest) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    form = PrivilegeForm(request.POST or None)
    return form_page(
        request,
        form,
        lambda: services.queue_privilege_grant(
            user=request.user,
            queue=form.cleaned_data["queue"],
            grantee=form.cleaned_data["user"],
            privilege=form.cleaned_data["privilege"],
        ),
        title="Grant queue privilege",
        success=lambda _grant: redirect("queues:privilege_list"),
        context={"submit_label": "Grant"},
    )


def privilege_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    require(request, Capability.CONFIGURE)
    grant = get_object_or_404(QueuePrivilege.objects.select_related("queue", "user"), pk=pk)
    if request.method == "POST":
        run_action(
            request,
            lambda: services.queue_privilege_revoke(user=request.user, grant=grant),
            "Privilege revoked.",
        )
    return redirect(reverse("queues:privilege_list"))


def queue_rule_test(request: HttpRequest, pk: int) -> HttpResponse:
    """ "Test a message" with a message picked from this queue: PERFORM or DISCARD and every
    rule's value. Read-only."""
    require(request, Capability.VIEW)
    queue = get_object_or_404(Queue, pk=pk)
    form = MessageRuleTestForm(request.POST or None)
    result = None
    if request.method == "POST" and form.is_valid():
        message = selectors.message_list(queue=queue).filter(pk=form.cleaned_data["message_id"])
        if not message:
            form.add_error("message_id", f"Queue {queue.name} has no message with that id.")
        else:
            result = selectors.message_rule_test(
                message[0],
                positive=form.cleaned_data["positive"],
                negative=form.cleaned_data["negative"],
            )
    return render(
        request,
        "queues/_rule_test.html",
        {"object": queue, "rule_test_form": form, "result": result},
        status=400 if form.errors else 200,
    )
