"""The monitoring suite: /metrics and the sampled rates over a small real topology."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gateway import mgwadm
from jobs import services as job_services
from queues import services as qs
from queues.models import Queue


@pytest.fixture(autouse=True)
def _monitoring_setup(role_groups, fast_passwords) -> None:
    """Role groups present, cheap password hashing: for every test here."""


@dataclass
class Topology:
    plain: Queue  # single-consumer
    source: Queue  # multi-consumer, the propagation's source
    destination: Queue


@pytest.fixture
def topology(admin_user) -> Topology:
    """Two queue tables, three queues, a propagation SOURCE → DESTINATION (unscheduled, so its
    state stays put) and an outbound gateway job on an AMQP link (never started)."""
    plain_qt = qs.queue_table_create(user=admin_user, name="QT_PLAIN", sort_order="enq_time")
    multi_qt = qs.queue_table_create(
        user=admin_user, name="QT_MULTI", sort_order="enq_time", multiple_consumers=True
    )
    topo = Topology(
        plain=qs.queue_create(user=admin_user, name="PLAIN", queue_table=plain_qt),
        source=qs.queue_create(user=admin_user, name="SOURCE", queue_table=multi_qt),
        destination=qs.queue_create(user=admin_user, name="DESTINATION", queue_table=multi_qt),
    )
    job_services.propagation_create(
        user=admin_user,
        name="P_OUT",
        source_queue=topo.source,
        destination_queue=topo.destination,
        schedule=False,
    )
    mgwadm.create_msgsystem_link(
        "amqp_link", properties={"link_type": "AMQP", "host": "127.0.0.1", "port": "5672"}
    )
    mgwadm.register_foreign_queue("out_q", "amqp_link", "shop.orders")
    mgwadm.create_job("out_job", mgwadm.OUTBOUND_PROPAGATION, "source", "out_q@amqp_link")
    return topo
