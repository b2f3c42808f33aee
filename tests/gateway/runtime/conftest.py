"""The gateway at run time: a ``gateway`` over real Celery workers (``celery_procs`` of
tests/conftest.py) and ``foreign`` queues made on the loopback brokers (helpers.py beside)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from gateway import services as gw
from gateway.models import Agent
from tests.celery.helpers import CeleryProcesses
from tests.gateway.runtime.helpers import Gateway, foreign_create, foreign_drop, unique, wait_for


@pytest.fixture
def gateway(celery_procs: CeleryProcesses, settings: Any) -> Iterator[Gateway]:
    g = Gateway(celery_procs, settings)
    try:
        yield g
    finally:
        # Stop agents before the workers are killed, so no agent writes during the flush.
        for a in Agent.objects.exclude(status="NOT_STARTED"):
            with contextlib.suppress(Exception):
                gw.agent_shutdown(user=None, agent=a, mode="IMMEDIATE")
        wait_for(
            lambda: not Agent.objects.exclude(status__in=["NOT_STARTED", "BROKEN"]).exists(),
            10,
            reap=False,
        )


@pytest.fixture
def foreign() -> Iterator[Callable[[str, str], str]]:
    made: list[tuple[str, str]] = []

    def make(link_type: str, prefix: str = "mgwt") -> str:
        provider = f"{prefix}.{uuid.uuid4().hex[:8]}" if link_type != "AMQP" else unique(prefix)
        if link_type == "MQTT":
            provider = provider.replace(".", "/")
        foreign_create(link_type, provider)
        made.append((link_type, provider))
        return provider

    yield make
    for link_type, provider in made:
        foreign_drop(link_type, provider)
