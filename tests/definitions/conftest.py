"""Fixtures of the definitions tests: the demo topology, exported."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from definitions.selectors import definitions_export
from sites import services as site_services


def load_demo() -> None:
    """The README's demo (its gateway included), plus a database link: to this very database,
    a site like any other, so that the sites part is in the document too."""
    call_command("demo_topology", "--without-second-site", stdout=StringIO())
    cfg = connection.settings_dict
    site_services.database_link_create(
        user=None,
        name="SELF_SITE",
        host=cfg["HOST"] or "127.0.0.1",
        port=int(cfg["PORT"] or 5432),
        database=cfg["NAME"],
        username=cfg["USER"] or "postgres",
        password="not-needed-with-trust",
        comment="Definitions test: a link to this database.",
    )


def add_what_the_demo_lacks(db_user: Any) -> None:
    """Objects of the kinds (and states) the demo has none of, so the round trip covers every
    section and field of the document: an evaluation context, a DML rule with declarative and
    custom transformations, a disabled rule set member, a queue table with
    primary and secondary instances, an AQ agent with a user, a grant, a
    subscriber with a rule, a second gateway agent with options (one encrypted), a stopped
    propagation, a disabled schedule, a propagation without one, a disabled job and a logical
    queue with a partition's purpose."""
    from gateway import services as gw
    from gateway.models import Job
    from jobs import services as js
    from jobs.models import Propagation
    from queues import services as qs
    from queues.models import Queue
    from rules import services as rs

    # Instance affinity (the AQ-on-RAC primary and secondary), by instance name.
    qs.queue_table_create(
        user=None, name="QT_ON_NODES", primary_instance="NODE_A", secondary_instance="NODE_B"
    )
    ctx = rs.evaluation_context_create(
        user=None,
        name="ORDERS_CTX",
        variables=[{"name": "ord", "variable_type": "USER", "user_type": "ORDER"}],
        comment="Orders by name.",
    )
    rs.rule_create(
        user=None,
        name="BIG_ORDER",
        condition=":ord.total > 1000",
        evaluation_context=ctx,
        action_context={"route": "priority"},
    )
    hr = rs.rule_create(user=None, name="HR_ROWS", condition=":dml.get_object_owner() = 'HR'")
    rs.transformation_add_declarative(
        user=None,
        rule=hr,
        declarative_type="RENAME COLUMN",
        from_column_name="salary",
        to_column_name="pay",
    )
    rs.transformation_add_declarative(
        user=None, rule=hr, declarative_type="ADD COLUMN", column_name="origin", column_value="x"
    )
    rs.custom_transformation_set(user=None, rule=hr, function="UPPER_LAST_NAME")
    hr_set = rs.rule_set_create(user=None, name="HR_RS", comment="HR rows.")
    rs.rule_set_add_rule(user=None, rule_set=hr_set, rule=hr, enabled=False)
    agent = qs.agent_create(user=None, name="WEBSHOP_AGENT", address="web", comment="Shop.")
    qs.agent_enable_db_access(user=None, agent=agent, db_user=db_user)
    orders, events = Queue.objects.get(name="ORDERS"), Queue.objects.get(name="EVENTS")
    qs.queue_privilege_grant(user=None, queue=orders, grantee=db_user, privilege="ENQUEUE")
    qs.subscriber_add(user=None, queue=events, name="AUDITOR", rule=":msg.event = 'order_paid'")
    second = gw.agent_create(user=None, name="SECOND_AGENT", username="mgw", password="mgw-pw")
    gw.agent_option_set(user=None, agent=second, name="plain.option", value="1")
    gw.agent_option_set(user=None, agent=second, name="api.token", value="t0k", encrypted=True)
    js.propagation_stop(user=None, propagation=Propagation.objects.get(name="EVENTS_TO_ARCHIVE"))
    js.schedule_disable(user=None, propagation=Propagation.objects.get(name="EVENTS_TO_BILLING"))
    js.propagation_create(
        user=None,
        name="EVENTS_TO_LEDGER",
        source_queue=events,
        destination_queue=Queue.objects.get(name="LEDGER"),
        schedule=False,
        comment="Not scheduled.",
    )
    gw.job_disable(user=None, job=Job.objects.get(name="RABBIT_IN"))
    # A logical queue (parallel queues): two partitions in a ring over the same two instances.
    from parallel import services as ps

    sms = ps.logical_queue_create(
        user=None, name="SMS", partitions=2, instances=["NODE_A", "NODE_B"], comment="Texts."
    )
    ps.logical_partition_update(user=None, partition=sms.partitions.get(position=2), purpose="EU")


@pytest.fixture
def demo_document(db) -> dict[str, Any]:
    load_demo()
    return definitions_export()


@pytest.fixture(autouse=True)
def _suite(fast_passwords, role_groups) -> None:
    """Cheap password hashing and the role groups, as the API and page suites have them."""
