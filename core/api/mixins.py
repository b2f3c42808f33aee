from django.http import Http404, QueryDict
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.serializers import BulkRequestSerializer, BulkResultSerializer
from core.bulk import BulkActions, bulk_run, outcome_counts
from core.exceptions import DomainError
from core.lookups import name_or_id_q


class NameOrIdLookupMixin:
    """Objects are addressed by id or by (case-insensitive) name: /api/queues/ORDERS/."""

    lookup_value_regex = r"[^/]+"

    def get_object(self):  # type: ignore[no-untyped-def]
        key = self.kwargs[self.lookup_field]  # type: ignore[attr-defined]
        qs = self.get_queryset()  # type: ignore[attr-defined]
        where = name_or_id_q(key)
        obj = None if where is None else qs.filter(where).first()
        if obj is None:
            raise Http404(f"No such object: {key}.")
        self.check_object_permissions(self.request, obj)  # type: ignore[attr-defined]
        return obj


class BulkActionMixin:
    """``POST <list>/bulk/ {"action": ..., "ids": [...]}`` or ``{"action": ..., "filter": {...},
    "expected_count": N}``: the list page's bulk actions through the same code (core.bulk). 200
    with each object's outcome, also when some were refused; 400 naming ``action``, ``ids``,
    ``filter`` or ``filter.<param>``; 409 when ``expected_count`` is not what the filter matches
    now; 403 for a role the verb's single-object action refuses. The viewset lets VIEW through
    (``action_capabilities["bulk"]``): core.bulk asks the verb's."""

    bulk_actions: BulkActions

    @extend_schema(request=BulkRequestSerializer, responses={200: BulkResultSerializer})
    @action(detail=False, methods=["post"], url_path="bulk")
    def bulk(self, request: Request) -> Response:
        data = request.data
        if not hasattr(data, "get"):
            raise DomainError('Send a JSON object, for example {"action": "...", "ids": [1, 2]}.')
        # A form body may repeat ``ids``; a JSON one gives a list.
        ids = data.getlist("ids") if isinstance(data, QueryDict) else data.get("ids")
        filter_ = data.get("filter")
        if isinstance(data, QueryDict) and isinstance(filter_, str):
            filter_ = QueryDict(filter_)  # a form body gives the filter as a query string
        action_name = data.get("action")
        outcomes = bulk_run(
            self.bulk_actions,
            user=request.user,
            action=action_name,
            ids=ids,
            filter=filter_,
            expected_count=data.get("expected_count"),
        )
        return Response(
            {
                "action": action_name,
                **outcome_counts(outcomes),
                "results": [o.as_dict() for o in outcomes],
            }
        )
