from core.status import StatusView
from gateway.models import (
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

_APP = "Gateway"

STATUS_VIEWS = (
    StatusView(
        "mgw_gateway",
        MgwGateway,
        hidden=("agent_id",),
        app=_APP,
        description="One row per agent: status, ping, instance, start time, limits, last error.",
    ),
    StatusView(
        "mgw_agent_options",
        MgwAgentOption,
        hidden=("option_id",),
        app=_APP,
        description="Agent options (SET_OPTION AGENT_JAVA_PROP); encrypted values masked.",
    ),
    StatusView(
        "mgw_links",
        MgwLink,
        hidden=("link_id",),
        app=_APP,
        description="Messaging system links: name, type, agent, comment.",
    ),
    StatusView(
        "mgw_amqp_links",
        MgwAmqpLink,
        hidden=("link_id",),
        app=_APP,
        description="AMQP (RabbitMQ) links and their properties (never the password).",
    ),
    StatusView(
        "mgw_mqtt_links",
        MgwMqttLink,
        hidden=("link_id",),
        app=_APP,
        description="MQTT links and their properties (never the password).",
    ),
    StatusView(
        "mgw_nats_links",
        MgwNatsLink,
        hidden=("link_id",),
        app=_APP,
        description="NATS JetStream links and their properties (never the password).",
    ),
    StatusView(
        "mgw_redis_links",
        MgwRedisLink,
        hidden=("link_id",),
        app=_APP,
        description="Redis Streams links and their properties (never the password).",
    ),
    StatusView(
        "mgw_foreign_queues",
        MgwForeignQueue,
        hidden=("queue_id",),
        app=_APP,
        description="Registered foreign queues: NAME@LINK, provider queue, domain, options.",
    ),
    StatusView(
        "mgw_jobs",
        MgwJob,
        hidden=("job_id",),
        app=_APP,
        description="Propagation jobs: ends, state, counters, failures and last error.",
    ),
)
