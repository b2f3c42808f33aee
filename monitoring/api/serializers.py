"""API shapes of the monitoring app: the rates query and its answer."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from monitoring import selectors
from monitoring.choices import COUNTERS, GAUGES, RateRange, SeriesKind

OBJECT_HELP = (
    "`global`, or `queue:<id or name>`, `propagation:<id or name>`, `gateway_job:<id or name>`."
)


class RatesQuerySerializer(serializers.Serializer):
    object = serializers.CharField(
        default=SeriesKind.GLOBAL, max_length=300, trim_whitespace=False, help_text=OBJECT_HELP
    )
    range = serializers.ChoiceField(
        choices=RateRange.choices,
        default=RateRange.TEN_MINUTES,
        help_text="How far back: 10m (5 s points), 1h (1 min points) or 1d (10 min points).",
    )

    def validate_object(self, value: str) -> dict[str, Any]:
        if value == SeriesKind.GLOBAL:
            return {"kind": SeriesKind.GLOBAL, "id": 0, "name": None}
        kind, sep, key = value.partition(":")
        if not sep or kind not in selectors.SERIES_MODELS:
            raise serializers.ValidationError(f"Expected {OBJECT_HELP.replace('`', '')}")
        try:
            obj = selectors.series_object(kind, key)
        except selectors.SERIES_MODELS[kind].DoesNotExist:  # type: ignore[index]
            raise serializers.ValidationError(f"No {kind} has the id or name {key!r}.") from None
        return {"kind": kind, "id": obj.pk, "name": obj.name}


_SERIES_NAMES = sorted({n for d in (*COUNTERS.values(), *GAUGES.values()) for n in d})


class RatesSerializer(serializers.Serializer):
    """A series read from its tier (monitoring.selectors.rates_get)."""

    object = serializers.CharField(help_text="`global` or `<kind>:<id>`.")
    name = serializers.CharField(allow_null=True, help_text="The object's name; null for global.")
    range = serializers.ChoiceField(choices=RateRange.choices)
    resolution = serializers.IntegerField(help_text="Seconds per point (the tier read).")
    timestamps = serializers.ListField(
        child=serializers.FloatField(), help_text="When each point was read (Unix seconds)."
    )
    series = serializers.DictField(
        child=serializers.ListField(child=serializers.FloatField(allow_null=True)),
        help_text=(
            "One value per timestamp for each series of the object's kind: global "
            "enqueue_rate, dequeue_rate, propagate_rate, gateway_in_rate, gateway_out_rate; "
            "queue enqueue_rate, dequeue_rate, depth; propagation propagate_rate, backlog; "
            "gateway_job in_rate (taken from its source: delivered or sent to the exception "
            "queue), out_rate (delivered), backlog (messages waiting at an OUTBOUND job's source; "
            "null for INBOUND). Rates are per second; null where a counter was missing. "
            f"Names used: {', '.join(_SERIES_NAMES)}."
        ),
    )
