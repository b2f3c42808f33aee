"""The export reads each kind with its related rows joined or prefetched: more objects, not more
queries (no N+1)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from definitions.selectors import definitions_export
from gateway import services as gw
from parallel import services as ps
from queues import services as qs
from queues.models import Queue
from rules import services as rs
from tests.definitions.conftest import add_what_the_demo_lacks

pytestmark = pytest.mark.django_db


def _queries() -> int:
    with CaptureQueriesContext(connection) as ctx:
        definitions_export()
    return len(ctx.captured_queries)


def _more_of_each(user: User) -> None:
    ctx = rs.evaluation_context_create(
        user=None,
        name="MORE_CTX",
        variables=[
            {"name": "a", "variable_type": "USER", "user_type": "A"},
            {"name": "b", "variable_type": "USER", "user_type": "B"},
        ],
    )
    rule = rs.rule_create(user=None, name="MORE_ROWS", condition=":dml.get_object_owner() = 'X'")
    rs.transformation_add_declarative(
        user=None, rule=rule, declarative_type="DELETE COLUMN", column_name="c"
    )
    rs.custom_transformation_set(user=None, rule=rule, function="MASK_PHONE_NUMBER")
    rs.rule_create(user=None, name="MORE_CTX_RULE", condition=":a.x = 1", evaluation_context=ctx)
    rule_set = rs.rule_set_create(user=None, name="MORE_RS")
    rs.rule_set_add_rule(user=None, rule_set=rule_set, rule=rule)
    agent = qs.agent_create(user=None, name="MORE_AGENT")
    qs.agent_enable_db_access(user=None, agent=agent, db_user=user)
    qs.queue_privilege_grant(
        user=None, queue=Queue.objects.get(name="ALERTS"), grantee=user, privilege="ALL"
    )
    mgw_agent = gw.agent_create(user=None, name="MORE_MGW")
    gw.agent_option_set(user=None, agent=mgw_agent, name="x", value="1")
    link = gw.link_create(
        user=None,
        name="MORE_MQTT",
        link_type="MQTT",
        properties={"host": "127.0.0.1", "port": 1883},
        agent=mgw_agent,
    )
    gw.foreign_queue_register(user=None, name="MORE_OUT", link=link, provider_queue="more/out")
    ps.logical_queue_create(user=None, name="MORE_LQ", partitions=3, instances=["NODE_B"])


def test_more_objects_take_no_more_queries(demo_document):
    dora = User.objects.create_user(username="dora")
    add_what_the_demo_lacks(dora)  # every kind has objects: every prefetch runs
    before = _queries()

    _more_of_each(dora)

    assert _queries() == before
