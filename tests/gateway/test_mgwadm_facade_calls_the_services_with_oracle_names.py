"""gateway/mgwadm.py: DBMS_MGWADM's procedures under their Oracle names and parameter names reach
the gateway services and leave the configuration the services would."""

from __future__ import annotations

import pytest

from core import crypto
from core.exceptions import Conflict, DomainError
from gateway import mgwadm
from gateway.choices import AgentStatus, Direction, Domain, JobStatus, ShutdownMode
from gateway.models import Agent, AgentOption, ForeignQueue, Job, Link, MgwAgentOption

pytestmark = pytest.mark.django_db

AMQP = {"link_type": "AMQP", "host": "127.0.0.1", "port": "5672", "username": "guest"}


@pytest.fixture
def queues(admin_user):
    """A multi-consumer ORDERS (outbound source), INBOX (inbound destination), ORDERS_EXC."""
    from queues import services as qs

    qt = qs.queue_table_create(
        user=admin_user, name="QT_MGW", sort_order="enq_time", multiple_consumers=True
    )
    return {
        name: qs.queue_create(user=admin_user, name=name, queue_table=qt)
        for name in ("ORDERS", "INBOX", "ORDERS_EXC")
    }


@pytest.fixture
def link(db) -> Link:
    props = {**AMQP, "password": "s3cret", "max_connections": "3"}
    return mgwadm.create_msgsystem_link(
        linkname="rmq", properties=props, options=None, comment="RabbitMQ"
    )


def test_agents_are_created_altered_started_and_stopped_with_oracle_names():
    agent = mgwadm.create_agent(
        agent_name="myagent", username="mgw_agent", password="pw", max_threads=2, comment="c"
    )
    assert (agent.name, agent.username, agent.max_threads, agent.max_memory) == (
        "MYAGENT",
        "mgw_agent",
        2,
        64,
    )
    assert crypto.decrypt(agent.password_encrypted) == "pw"

    # NO_CHANGE / NULL numbers leave values as they are; a NULL comment clears it.
    agent = mgwadm.alter_agent(agent_name="myagent", max_memory=96, comment=None)
    assert (agent.max_memory, agent.max_threads, agent.username, agent.comment) == (
        96,
        2,
        "mgw_agent",
        "",
    )

    agent = mgwadm.startup("myagent")
    assert agent.status == AgentStatus.START_SCHEDULED
    agent = mgwadm.shutdown("myagent")  # SHUTDOWN(agent_name) overload
    assert agent.status == AgentStatus.NOT_STARTED

    # SET_LOG_LEVEL needs a RUNNING agent (tests/gateway/runtime has the running case).
    with pytest.raises(Conflict, match="needs a RUNNING agent"):
        mgwadm.set_log_level("myagent", mgwadm.TRACE_DEBUG_LOGGING)
    with pytest.raises(Conflict, match="needs a RUNNING agent"):
        mgwadm.set_log_level("TRACE_LITE_LOGGING")  # SET_LOG_LEVEL(log_level), by name

    mgwadm.remove_agent("MyAgent")
    assert not Agent.objects.filter(name="MYAGENT").exists()


def test_shutdown_modes_and_db_connect_info_reach_the_default_agent():
    with pytest.raises(Conflict, match="no agent user") as refused:
        mgwadm.startup()  # §2.3: fails while no agent user is configured
    assert refused.value.field == "username"
    agent = mgwadm.db_connect_info(username="agent_user", password="pw")
    assert agent.username == "agent_user"
    mgwadm.startup()
    agent = mgwadm.shutdown(mgwadm.SHUTDOWN_IMMEDIATE)
    assert agent.name == mgwadm.DEFAULT_AGENT and agent.status == AgentStatus.NOT_STARTED
    assert mgwadm._constant("sdmode", mgwadm.SHUTDOWN_NORMAL) == ShutdownMode.NORMAL


def test_agent_options_are_set_encrypted_shown_masked_and_removed():
    mgwadm.set_option(
        mgwadm.AGENT_JAVA_PROP, "default_agent", "javax.net.ssl.keyStorePassword", "ks", True
    )
    opt = AgentOption.objects.get(name="javax.net.ssl.keyStorePassword")
    assert opt.encrypted and crypto.decrypt(opt.value) == "ks"
    row = MgwAgentOption.objects.get(name="javax.net.ssl.keyStorePassword")
    assert (row.agent_name, row.type, row.value, row.encrypted) == (
        "DEFAULT_AGENT",
        "JAVA_SYSTEM_PROP",
        "<<ENCRYPTED>>",
        "TRUE",
    )
    mgwadm.remove_option(
        target_type=mgwadm.AGENT_JAVA_PROP,
        target_name="DEFAULT_AGENT",
        option_name="javax.net.ssl.keyStorePassword",
    )
    assert not AgentOption.objects.exists()


def test_links_take_their_type_password_and_mgw_columns_from_the_properties(link):
    assert (link.name, link.link_type, link.agent.name, link.max_connections) == (
        "RMQ",
        "AMQP",
        "DEFAULT_AGENT",
        3,
    )
    assert "password" not in link.properties and crypto.decrypt(link.password_encrypted) == "s3cret"
    assert link.properties["host"] == "127.0.0.1" and link.properties["port"] == 5672

    # alter_construct(): NO_CHANGE and NULL attributes stay, the rest is merged.
    link = mgwadm.alter_msgsystem_link(
        "RMQ",
        properties={"virtual_host": "/mgw", "host": mgwadm.NO_CHANGE, "max_connections": 2},
    )
    assert (link.properties["virtual_host"], link.properties["host"], link.max_connections) == (
        "/mgw",
        "127.0.0.1",
        2,
    )
    assert link.comment == "RabbitMQ"  # comment NO_CHANGE by default
    link = mgwadm.alter_msgsystem_link("rmq", comment=None)
    assert link.comment == ""


def test_foreign_queues_register_with_constants_and_unregister(link):
    fq = mgwadm.register_foreign_queue(
        name="orders_out",
        linkname="rmq",
        provider_queue="orders.out",
        domain=mgwadm.DOMAIN_QUEUE,
        options=None,
        comment="to the shop",
    )
    assert (fq.name, fq.provider_queue, fq.domain, fq.comment) == (
        "ORDERS_OUT",
        "orders.out",
        Domain.QUEUE,
        "to the shop",
    )
    topic = mgwadm.register_foreign_queue(
        "events", "rmq", domain=mgwadm.DOMAIN_TOPIC, options=[("RoutingKey", "ev.#")]
    )
    assert (topic.domain, topic.options, topic.provider_queue) == (
        Domain.TOPIC,
        {"RoutingKey": "ev.#"},
        "EVENTS",  # provider_queue NULL: the name
    )
    mgwadm.unregister_foreign_queue("events", "RMQ")
    assert not ForeignQueue.objects.filter(name="EVENTS").exists()


def test_jobs_are_created_altered_and_removed_with_oracle_conventions(queues, link):
    mgwadm.register_foreign_queue("orders_out", "rmq", "orders.out")
    mgwadm.register_foreign_queue("inbound", "rmq", "inbound")
    job = mgwadm.create_job(
        job_name="job_out",
        propagation_type=mgwadm.OUTBOUND_PROPAGATION,
        source="aqadmin.orders",  # schema.queue
        destination="orders_out@rmq",
        exception_queue="AQADMIN.ORDERS_EXC",
        poll_interval=2,
        options={"MsgBatchSize": "10"},
        comments="outbound",
    )
    assert (job.name, job.direction, job.source_name, job.destination_name) == (
        "JOB_OUT",
        Direction.OUTBOUND,
        "ORDERS",
        "ORDERS_OUT@RMQ",
    )
    assert (job.exception_name, job.poll_interval, job.options, job.enabled) == (
        "ORDERS_EXC",
        2,
        {"MsgBatchSize": "10"},
        True,
    )
    assert job.subscriber is not None and job.subscriber.name == "MGW_JOB_OUT"

    # NULL clears, NO_CHANGE keeps, poll_interval 0 keeps, NULL resets; options merge.
    job = mgwadm.alter_job(
        "job_out",
        rule=":msg.amount >= 1000",
        exception_queue=None,
        options=[("PreserveMessageID", "TRUE")],
    )
    assert (job.rule, job.exception_name, job.poll_interval, job.comment) == (
        ":msg.amount >= 1000",
        "",
        2,
        "outbound",
    )
    assert job.options == {"MsgBatchSize": "10", "PreserveMessageID": "TRUE"}
    job = mgwadm.alter_job("job_out", poll_interval=None, comments=None)
    assert (job.poll_interval, job.comment) == (None, "")

    assert not mgwadm.disable_job("job_out").enabled
    assert mgwadm.enable_job("job_out").enabled
    Job.objects.filter(name="JOB_OUT").update(status=JobStatus.FAILED, failures=16)
    job = mgwadm.reset_job("job_out")
    assert (job.status, job.failures) == (JobStatus.READY, 0)

    inbound = mgwadm.create_job(
        "job_in", mgwadm.INBOUND_PROPAGATION, "inbound@rmq", "inbox", enabled=False
    )
    assert (inbound.direction, inbound.source_name, inbound.enabled) == (
        Direction.INBOUND,
        "INBOUND@RMQ",
        False,
    )

    pending = mgwadm.remove_job("job_out")  # NO_FORCE: the agent cleans up first
    assert pending is not None and pending.status == JobStatus.DELETE_PENDING
    assert mgwadm.remove_job("job_out", mgwadm.FORCE) is None
    assert mgwadm.remove_job("JOB_IN", force=mgwadm.FORCE) is None
    assert not Job.objects.exists()


def test_link_and_job_options_through_set_option_and_remove_option(queues, link):
    mgwadm.register_foreign_queue("orders_out", "rmq")
    mgwadm.create_job("j1", mgwadm.OUTBOUND_PROPAGATION, "orders", "orders_out@rmq")
    job = mgwadm.set_option(mgwadm.JOB_OPTION, "j1", "MsgBatchSize", "50")
    assert job.options == {"MsgBatchSize": "50"}
    job = mgwadm.alter_job("j1", options=[(mgwadm.MGWPROP_REMOVE_ALL, ""), ("MsgBatchSize", "7")])
    assert job.options == {"MsgBatchSize": "7"}
    # AMQP links take no link options: the service's refusal names SET_OPTION's parameter.
    with pytest.raises(DomainError) as info:
        mgwadm.set_option(mgwadm.MSGLINK_OPTION, "rmq", "Bogus", "1")
    assert info.value.field == "option_name" and info.value.procedure == "SET_OPTION"


def test_errors_name_the_oracle_parameter_and_the_procedure(queues, link):
    with pytest.raises(Conflict) as info:
        mgwadm.remove_agent("DEFAULT_AGENT")
    assert (info.value.field, info.value.procedure) == ("agent_name", "REMOVE_AGENT")
    with pytest.raises(Conflict) as info:  # the agent's state: about agent_name
        mgwadm.cleanup_gateway(mgwadm.CLEAN_STARTUP_STATE)
    assert info.value.field == "agent_name"
    with pytest.raises(DomainError) as info:
        mgwadm.create_msgsystem_link("l2", properties={"link_type": "AMQP"})
    assert info.value.field == "properties.host"
    with pytest.raises(DomainError) as info:
        mgwadm.create_job("j", mgwadm.OUTBOUND_PROPAGATION, "nosuch", "x@rmq")
    assert info.value.field == "source"
