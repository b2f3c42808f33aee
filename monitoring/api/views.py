from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from monitoring import selectors
from monitoring.api import serializers as s


class RatesView(APIView):
    """Message rates over time for the console, a queue, a propagation or a gateway job, from
    the series beat samples (docs/METRICS.md, "Message rates")."""

    @extend_schema(parameters=[s.RatesQuerySerializer], responses=s.RatesSerializer)
    def get(self, request: Request) -> Response:
        query = s.RatesQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        obj = query.validated_data["object"]
        range_ = query.validated_data["range"]
        data = selectors.rates_get(kind=obj["kind"], object_id=obj["id"], range_=range_)
        label = obj["kind"] if obj["kind"] == "global" else f"{obj['kind']}:{obj['id']}"
        return Response(
            s.RatesSerializer({"object": label, "name": obj["name"], "range": range_, **data}).data
        )
