"""Celery tasks of the monitoring app: thin, idempotent."""

from typing import Any

from celery import shared_task


@shared_task(name="monitoring.tasks.rates_sample", ignore_result=True)
def rates_sample() -> dict[str, Any]:
    """Beat, every AQ_RATES["INTERVAL_S"]: one sample of the message counters. Two at once is
    harmless: the second finds the sampler's lock taken and skips."""
    from monitoring.services import rates_sample as sample

    return sample().as_dict()
