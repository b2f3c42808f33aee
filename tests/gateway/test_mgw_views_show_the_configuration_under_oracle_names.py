"""The MGW_* PostgreSQL views (gateway migration 0003): the configuration under MGW's column
names (spec/gateway.md §3), AGENT_PING from the agent's advisory lock and heartbeat, errors split
into date and time, secrets never shown; registered as status views (page and API)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from core.status import REGISTRY
from gateway import mgwadm, selectors
from gateway.config import LOCK_NS
from gateway.models import (
    DEFAULT_AGENT,
    Agent,
    Job,
    MgwAgentOption,
    MgwAmqpLink,
    MgwForeignQueue,
    MgwGateway,
    MgwJob,
    MgwLink,
    MgwMqttLink,
    MgwNatsLink,
    MgwRedisLink,
)

pytestmark = pytest.mark.django_db

VIEWS = (
    "mgw_gateway",
    "mgw_agent_options",
    "mgw_links",
    "mgw_amqp_links",
    "mgw_mqtt_links",
    "mgw_nats_links",
    "mgw_redis_links",
    "mgw_foreign_queues",
    "mgw_jobs",
)

# Table C-13's columns, in the order Oracle's MGW_GATEWAY has them.
C13 = [
    "agent_name",
    "agent_status",
    "agent_ping",
    "agent_job",
    "agent_user",
    "agent_database",
    "agent_instance",
    "agent_start_time",
    "conntype",
    "max_connections",
    "max_memory",
    "max_threads",
    "last_error_date",
    "last_error_time",
    "last_error_msg",
    "service",
    "initfile",
    "comments",
]
C19 = [
    "job_name",
    "propagation_type",
    "source",
    "destination",
    "enabled",
    "agent_name",
    "link_name",
    "rule",
    "transformation",
    "exception_queue",
    "poll_interval",
    "options",
    "comments",
    "status",
    "propagated_msgs",
    "exceptionq_msgs",
    "failures",
    "last_error_msg",
    "last_error_date",
    "last_error_time",
    "prop_style",
]

LINKS = {
    "AMQP": {"host": "rmq.example", "port": "5673", "virtual_host": "/shop", "tls": "TRUE"},
    "MQTT": {"host": "mqtt.example", "protocol": "3.1.1", "keepalive": "45"},
    "NATS": {"host": "nats.example", "username": "nats_user"},
    "REDIS": {"host": "redis.example", "db": "3"},
}


def _columns(view: str) -> list[str]:
    with connection.cursor() as cur:
        cur.execute(f"SELECT * FROM {view} LIMIT 0")
        return [c.name for c in cur.description]


@pytest.fixture
def configured(admin_user):
    """One link of each type (with passwords), a foreign queue on each, an outbound and an
    inbound job on AMQP."""
    from queues import services as qs

    qt = qs.queue_table_create(
        user=admin_user, name="QT_VIEWS", sort_order="enq_time", multiple_consumers=True
    )
    for name in ("ORDERS", "INBOX"):
        qs.queue_create(user=admin_user, name=name, queue_table=qt)
    mgwadm.create_agent("edge", comment="edge agent")
    for link_type, props in LINKS.items():
        mgwadm.create_msgsystem_link(
            f"{link_type}_link",
            agent_name="edge" if link_type == "NATS" else DEFAULT_AGENT,
            properties={"link_type": link_type, "password": "TOPSECRET", **props},
            comment=f"{link_type} link",
        )
    mgwadm.register_foreign_queue("out_q", "amqp_link", "shop.orders", comment="orders")
    mgwadm.register_foreign_queue("in_q", "amqp_link", "shop.inbox")
    mgwadm.register_foreign_queue("bad_q", "amqp_link", "shop.bad")
    mgwadm.register_foreign_queue(
        "events", "amqp_link", "amq.topic", mgwadm.DOMAIN_TOPIC, {"RoutingKey": "ev"}
    )
    mgwadm.create_job(
        "out_job",
        mgwadm.OUTBOUND_PROPAGATION,
        "orders",
        "out_q@amqp_link",
        rule=":msg.amount >= 1000",
        options={"MsgBatchSize": "10"},
        comments="out",
    )
    mgwadm.create_job(
        "in_job",
        mgwadm.INBOUND_PROPAGATION,
        "in_q@amqp_link",
        "inbox",
        exception_queue="bad_q@amqp_link",
        poll_interval=0.5,
        enabled=False,
    )


def test_every_view_has_mgw_columns_and_is_a_gateway_status_view():
    # Ours after Oracle's: the AQ instance the live agent runs on (docs/INSTANCES.md).
    assert _columns("mgw_gateway") == ["agent_id", *C13, "instance_name"]
    assert _columns("mgw_jobs") == ["job_id", *C19]
    assert _columns("mgw_agent_options") == [
        "option_id",
        "agent_name",
        "name",
        "type",
        "value",
        "encrypted",
    ]
    assert _columns("mgw_links") == [
        "link_id",
        "link_name",
        "link_type",
        "link_comment",
        "agent_name",
    ]
    assert _columns("mgw_foreign_queues") == [
        "queue_id",
        "name",
        "link_name",
        "provider_queue",
        "domain",
        "options",
        "queue_comment",
    ]
    for view in VIEWS:
        registered = REGISTRY[view]
        assert registered.app == "Gateway"
        # The unmanaged model matches the view column for column (the id is hidden).
        assert registered.columns == _columns(view)[1:], view
        if view.endswith("_links") and view != "mgw_links":
            assert "password" not in _columns(view)


def test_mgw_gateway_shows_agents_with_their_state_and_the_error_split(configured):
    rows = {r.agent_name: r for r in MgwGateway.objects.all()}
    assert list(rows) == ["DEFAULT_AGENT", "EDGE"]
    edge = rows["EDGE"]
    assert (edge.agent_status, edge.agent_ping, edge.agent_job, edge.comments) == (
        "NOT_STARTED",
        None,
        None,
        "edge agent",
    )
    assert (edge.max_memory, edge.max_threads, edge.agent_user) == (64, 1, None)
    assert (edge.agent_database, edge.conntype, edge.max_connections) == (None, None, None)
    assert (edge.service, edge.initfile, edge.agent_start_time, edge.agent_instance) == (
        None,
        None,
        None,
        None,
    )

    failed_at = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    Agent.objects.filter(name="EDGE").update(
        status="BROKEN", last_error_msg="MGW-20000 agent died", last_error_at=failed_at
    )
    edge = MgwGateway.objects.get(agent_name="EDGE")
    local = timezone.localtime(failed_at, timezone.get_default_timezone())
    with connection.cursor() as cur:
        cur.execute("SHOW TimeZone")
        db_tz = cur.fetchone()[0]
    if db_tz.upper() in ("UTC", "ETC/UTC"):
        local = failed_at
    assert (edge.last_error_date, edge.last_error_time, edge.last_error_msg) == (
        local.date(),
        local.strftime("%H:%M:%S"),
        "MGW-20000 agent died",
    )
    assert (edge.agent_status, edge.agent_ping, edge.agent_job) == ("BROKEN", None, "mgw.EDGE")


def test_agent_ping_needs_the_agents_advisory_lock_and_a_fresh_heartbeat():
    agent = Agent.objects.get(name=DEFAULT_AGENT)
    Agent.objects.filter(pk=agent.pk).update(
        status="RUNNING",
        heartbeat_at=timezone.now(),
        start_time=timezone.now(),
        instance="celery@host1",
        instance_name="node1",
        service="SYS$AQADMIN.Q.X",
    )

    def ping() -> str | None:
        return MgwGateway.objects.get(agent_id=agent.pk).agent_ping

    # No process holds the lock in this database. (Agents of other databases on the same server
    # show in pg_locks too, possibly with this id: the view looks at this database only.)
    assert ping() == "UNREACHABLE"

    s = connection.settings_dict
    other = psycopg.connect(
        host=s["HOST"] or "127.0.0.1",
        port=s["PORT"] or 5432,
        user=s["USER"],
        password=s["PASSWORD"] or None,
        dbname=s["NAME"],
        autocommit=True,
    )
    try:
        other.execute("SELECT pg_advisory_lock(%s, %s)", (LOCK_NS, agent.pk))
        assert ping() == "REACHABLE"
        assert selectors.agent_ping(Agent.objects.get(pk=agent.pk)) == "REACHABLE"
        row = MgwGateway.objects.get(agent_id=agent.pk)
        assert (row.agent_instance, row.agent_job) == ("celery@host1", "mgw.DEFAULT_AGENT")
        assert (row.instance_name, row.service) == ("node1", "SYS$AQADMIN.Q.X")
        Agent.objects.filter(pk=agent.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=5))
        assert ping() == "UNREACHABLE"  # holds the lock but stopped beating
    finally:
        other.close()


def test_options_links_and_queues_show_under_mgw_names_without_secrets(configured):
    mgwadm.set_option(mgwadm.AGENT_JAVA_PROP, "edge", "oracle.mgw.batch_size", "20")
    mgwadm.set_option(mgwadm.AGENT_JAVA_PROP, "edge", "javax.net.ssl.trustStorePassword", "x", True)
    assert list(MgwAgentOption.objects.values_list("name", "type", "value", "encrypted")) == [
        ("javax.net.ssl.trustStorePassword", "JAVA_SYSTEM_PROP", "<<ENCRYPTED>>", "TRUE"),
        ("oracle.mgw.batch_size", "JAVA_SYSTEM_PROP", "20", "FALSE"),
    ]

    assert list(MgwLink.objects.values_list("link_name", "link_type", "agent_name")) == [
        ("AMQP_LINK", "AMQP", "DEFAULT_AGENT"),
        ("MQTT_LINK", "MQTT", "DEFAULT_AGENT"),
        ("NATS_LINK", "NATS", "EDGE"),
        ("REDIS_LINK", "REDIS", "DEFAULT_AGENT"),
    ]
    amqp = MgwAmqpLink.objects.get()
    assert (amqp.host, amqp.port, amqp.virtual_host, amqp.tls, amqp.tls_verify) == (
        "rmq.example",
        5673,
        "/shop",
        "TRUE",
        "TRUE",
    )
    assert (amqp.max_connections, amqp.options, amqp.link_comment) == (1, None, "AMQP link")
    mqtt = MgwMqttLink.objects.get()
    assert (mqtt.host, mqtt.port, mqtt.protocol, mqtt.keepalive) == (
        "mqtt.example",
        1883,
        "3.1.1",
        45,
    )
    nats = MgwNatsLink.objects.get()
    assert (nats.agent_name, nats.host, nats.port, nats.username) == (
        "EDGE",
        "nats.example",
        4222,
        "nats_user",
    )
    redis = MgwRedisLink.objects.get()
    assert (redis.host, redis.db) == ("redis.example", 3)
    for view in VIEWS:
        with connection.cursor() as cur:
            cur.execute(f"SELECT row_to_json(v)::text FROM {view} v")
            assert not any("TOPSECRET" in r[0] for r in cur.fetchall()), view

    assert list(
        MgwForeignQueue.objects.filter(name__in=["OUT_Q", "EVENTS"]).values_list(
            "name", "link_name", "provider_queue", "domain", "options", "queue_comment"
        )
    ) == [
        ("EVENTS", "AMQP_LINK", "amq.topic", "TOPIC", '{"RoutingKey": "ev"}', None),
        ("OUT_Q", "AMQP_LINK", "shop.orders", "QUEUE", None, "orders"),
    ]


def test_mgw_jobs_shows_both_directions_with_their_counters_and_errors(configured):
    failed_at = timezone.now().replace(microsecond=0)
    Job.objects.filter(name="OUT_JOB").update(
        status="RETRY",
        failures=3,
        propagated_msgs=120,
        exceptionq_msgs=2,
        last_error_msg="MGW-40000 broker unreachable",
        last_error_at=failed_at,
    )
    out = MgwJob.objects.get(job_name="OUT_JOB")
    assert [getattr(out, c) for c in C19[:14]] == [
        "OUT_JOB",
        "OUTBOUND",
        "ORDERS",
        "OUT_Q@AMQP_LINK",
        "TRUE",
        "DEFAULT_AGENT",
        "AMQP_LINK",
        ":msg.amount >= 1000",
        None,
        None,
        None,
        '{"MsgBatchSize": "10"}',
        "out",
        "RETRY",
    ]
    assert (out.propagated_msgs, out.exceptionq_msgs, out.failures, out.prop_style) == (
        120,
        2,
        3,
        "NATIVE",
    )
    assert out.last_error_msg == "MGW-40000 broker unreachable"
    assert out.last_error_date is not None and len(out.last_error_time) == 8

    inbound = MgwJob.objects.get(job_name="IN_JOB")
    assert (
        inbound.propagation_type,
        inbound.source,
        inbound.destination,
        inbound.exception_queue,
        inbound.enabled,
        inbound.poll_interval,
        inbound.last_error_date,
    ) == ("INBOUND", "IN_Q@AMQP_LINK", "INBOX", "BAD_Q@AMQP_LINK", "FALSE", 0.5, None)


def test_the_status_page_and_api_serve_the_mgw_views(configured, monitor_user):
    from rest_framework.authtoken.models import Token

    api = APIClient()
    api.credentials(
        HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=monitor_user)[0].key}"
    )
    response = api.get("/api/status/mgw_jobs/", {"per_page": 500})
    assert response.status_code == 200, response.content
    rows = response.json()["results"]
    assert {r["job_name"] for r in rows} == {"OUT_JOB", "IN_JOB"}
    assert "job_id" not in rows[0] and "prop_style" in rows[0]

    page = Client()
    page.force_login(monitor_user)
    html = page.get("/status/?view=mgw_gateway").content.decode()
    assert "AGENT_STATUS" in html and "AGENT_PING" in html and "EDGE" in html
