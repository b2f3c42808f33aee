"""One FilterSet per list, used by the page and the API viewset alike."""

import django_filters
from django.db.models import Q, QuerySet

from core.filtersets import AnyBooleanWidget, BaseFilterSet, NameOrIdFilter
from queues.choices import DeliveryMode, MessageKind, MessageState, QueueKind, SortOrder
from queues.models import (
    Agent,
    Message,
    Queue,
    QueuePrivilege,
    QueueTable,
    QueueTableOwnerMove,
    Subscriber,
)


class SearchFilterSet(BaseFilterSet):
    q = django_filters.CharFilter(method="search", label="Search")
    search_fields: tuple[str, ...] = ("name",)

    def search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        cond = Q()
        for f in self.search_fields:
            cond |= Q(**{f"{f}__icontains": value})
        return queryset.filter(cond)


def owner_instance_filter(path: str) -> django_filters.CharFilter:
    """Owned by the instance of this name (S003's "queues whose active instance is mine")."""
    return django_filters.CharFilter(
        field_name=f"{path}owner_instance__name", lookup_expr="iexact", label="Owner instance"
    )


class QueueTableFilterSet(SearchFilterSet):
    search_fields = ("name", "comment")
    sort_order = django_filters.ChoiceFilter(choices=SortOrder.choices)
    owner_instance = owner_instance_filter("")

    class Meta(BaseFilterSet.Meta):
        model = QueueTable
        fields = ["q", "sort_order", "multiple_consumers", "secure", "owner_instance"]


class OwnerMoveFilterSet(SearchFilterSet):
    search_fields = ("queue_table_name", "from_instance__name", "to_instance__name", "reason")

    class Meta(BaseFilterSet.Meta):
        model = QueueTableOwnerMove
        fields = ["q"]


class QueueFilterSet(SearchFilterSet):
    search_fields = ("name", "comment", "queue_table__name")
    kind = django_filters.ChoiceFilter(choices=QueueKind.choices)
    queue_table = django_filters.ModelChoiceFilter(queryset=QueueTable.objects.all())
    multiple_consumers = django_filters.BooleanFilter(
        field_name="queue_table__multiple_consumers",
        label="Multi-consumer",
        widget=AnyBooleanWidget,
    )
    owner_instance = owner_instance_filter("queue_table__")

    class Meta(BaseFilterSet.Meta):
        model = Queue
        fields = [
            "q",
            "queue_table",
            "kind",
            "enqueue_enabled",
            "dequeue_enabled",
            "multiple_consumers",
            "owner_instance",
        ]


class MessageFilterSet(BaseFilterSet):
    state = django_filters.ChoiceFilter(choices=MessageState.choices)
    kind = django_filters.ChoiceFilter(choices=MessageKind.choices)
    delivery_mode = django_filters.ChoiceFilter(choices=DeliveryMode.choices)
    correlation = django_filters.CharFilter(lookup_expr="icontains")
    priority = django_filters.NumberFilter()
    queue = NameOrIdFilter(queryset=Queue.objects.all())
    replayed = django_filters.BooleanFilter(widget=AnyBooleanWidget)

    class Meta(BaseFilterSet.Meta):
        model = Message
        fields = ["queue", "state", "kind", "delivery_mode", "correlation", "priority", "replayed"]


class SubscriberFilterSet(SearchFilterSet):
    queue = NameOrIdFilter(queryset=Queue.objects.all())

    class Meta(BaseFilterSet.Meta):
        model = Subscriber
        fields = ["q", "queue"]


class AgentFilterSet(SearchFilterSet):
    class Meta(BaseFilterSet.Meta):
        model = Agent
        fields = ["q"]


class QueuePrivilegeFilterSet(BaseFilterSet):
    queue = NameOrIdFilter(queryset=Queue.objects.all())
    username = django_filters.CharFilter(
        field_name="user__username", lookup_expr="iexact", label="User"
    )

    class Meta(BaseFilterSet.Meta):
        model = QueuePrivilege
        fields = ["queue", "username", "privilege"]
