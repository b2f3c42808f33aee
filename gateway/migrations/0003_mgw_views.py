"""The MGW_* catalog views (spec/gateway.md §3, Tables C-13 to C-19) over the gateway's tables,
with MGW's column names in lower case. Secrets never appear: link passwords are left out and
encrypted agent options show <<ENCRYPTED>>. Oracle splits an error's moment into LAST_ERROR_DATE
(a date) and LAST_ERROR_TIME (HH24:MI:SS text); so do these. One view per link type replaces
MGW_MQSERIES_LINKS / MGW_TIBRV_LINKS, with the type's properties as columns."""

from django.db import migrations, models

# gateway/agent.py LOCK_NS: the agent process holds pg_advisory_lock(LOCK_NS, agent id) for as
# long as it lives; in pg_locks a two-int key shows as classid, objid and objsubid = 2.
LOCK_NS = 0x4D47

# AGENT_PING as gateway.selectors.agent_ping: no ping unless a process should exist; REACHABLE
# when it holds its lock (in this database: test and other databases share pg_locks) and beat
# within MGW["STALE_S"] (the GUC mgw.stale_s when set, else the settings' default 10 s).
_PING = f"""
       CASE WHEN a.status NOT IN ('STARTING', 'INITIALIZING', 'RUNNING', 'SHUTTING_DOWN')
                THEN NULL
            WHEN EXISTS (SELECT 1 FROM pg_locks l
                         WHERE l.locktype = 'advisory' AND l.granted
                           AND l.database = (SELECT oid FROM pg_database
                                             WHERE datname = current_database())
                           AND l.classid::bigint = {LOCK_NS} AND l.objid::bigint = a.id
                           AND l.objsubid = 2)
                 AND a.heartbeat_at > now() - make_interval(secs =>
                     coalesce(nullif(current_setting('mgw.stale_s', true), '')::float, 10))
                THEN 'REACHABLE'
            ELSE 'UNREACHABLE' END"""

_LIVE = "a.status IN ('STARTING', 'INITIALIZING', 'RUNNING', 'SHUTTING_DOWN')"


def _link_view(view: str, link_type: str, columns: str) -> str:
    """MGW_<TYPE>_LINKS: a link of one type, its properties (never the password) as columns."""
    return f"""
CREATE OR REPLACE VIEW {view} AS
SELECT k.id AS link_id, k.name AS link_name, a.name AS agent_name,
       k.properties->>'host' AS host, (k.properties->>'port')::int AS port,{columns}
       k.max_connections AS max_connections,
       nullif(k.outbound_log_queue, '') AS outbound_log_queue,
       nullif(k.options::text, '{{}}') AS options,
       nullif(k.comment, '') AS link_comment
FROM gateway_link k
JOIN gateway_agent a ON a.id = k.agent_id
WHERE k.link_type = '{link_type}';
"""


def _text(*names: str) -> str:
    return "".join(f"\n       k.properties->>'{n}' AS {n}," for n in names)


def _bool(*names: str) -> str:
    return "".join(f"\n       upper(k.properties->>'{n}') AS {n}," for n in names)


def _int(*names: str) -> str:
    return "".join(f"\n       (k.properties->>'{n}')::int AS {n}," for n in names)


SQL = f"""
CREATE OR REPLACE VIEW mgw_gateway AS
SELECT a.id AS agent_id, a.name AS agent_name, a.status AS agent_status,{_PING} AS agent_ping,
       CASE WHEN a.status <> 'NOT_STARTED' THEN 'mgw.' || a.name END AS agent_job,
       nullif(a.username, '') AS agent_user,
       NULL::text AS agent_database,
       CASE WHEN {_LIVE} THEN nullif(a.instance, '') END AS agent_instance,
       CASE WHEN {_LIVE} THEN a.start_time END AS agent_start_time,
       NULL::text AS conntype,
       NULL::int AS max_connections,
       a.max_memory AS max_memory, a.max_threads AS max_threads,
       a.last_error_at::date AS last_error_date,
       to_char(a.last_error_at, 'HH24:MI:SS') AS last_error_time,
       nullif(a.last_error_msg, '') AS last_error_msg,
       NULL::text AS service,
       NULL::text AS initfile,
       nullif(a.comment, '') AS comments
FROM gateway_agent a;

CREATE OR REPLACE VIEW mgw_agent_options AS
SELECT o.id AS option_id, a.name AS agent_name, o.name AS name,
       'JAVA_SYSTEM_PROP' AS type,
       CASE WHEN o.encrypted THEN '<<ENCRYPTED>>' ELSE o.value END AS value,
       CASE WHEN o.encrypted THEN 'TRUE' ELSE 'FALSE' END AS encrypted
FROM gateway_agentoption o
JOIN gateway_agent a ON a.id = o.agent_id;

CREATE OR REPLACE VIEW mgw_links AS
SELECT k.id AS link_id, k.name AS link_name, k.link_type AS link_type,
       nullif(k.comment, '') AS link_comment, a.name AS agent_name
FROM gateway_link k
JOIN gateway_agent a ON a.id = k.agent_id;
{_link_view("mgw_amqp_links", "AMQP", _text("virtual_host", "username") + _bool("tls") + _text("tls_ca_file") + _bool("tls_verify") + _int("heartbeat") + _text("client_id"))}
{_link_view("mgw_mqtt_links", "MQTT", _text("protocol", "username") + _bool("tls") + _text("tls_ca_file") + _bool("tls_verify") + _int("keepalive") + _text("client_id"))}
{_link_view("mgw_nats_links", "NATS", _text("username") + _bool("tls") + _text("tls_ca_file") + _bool("tls_verify") + _text("client_id"))}
{_link_view("mgw_redis_links", "REDIS", _int("db") + _text("username") + _bool("tls") + _text("tls_ca_file") + _bool("tls_verify") + _text("client_id"))}
CREATE OR REPLACE VIEW mgw_foreign_queues AS
SELECT q.id AS queue_id, q.name AS name, k.name AS link_name,
       q.provider_queue AS provider_queue, q.domain AS domain,
       nullif(q.options::text, '{{}}') AS options,
       nullif(q.comment, '') AS queue_comment
FROM gateway_foreignqueue q
JOIN gateway_link k ON k.id = q.link_id;

CREATE OR REPLACE VIEW mgw_jobs AS
SELECT j.id AS job_id, j.name AS job_name, j.direction AS propagation_type,
       coalesce(sq.name, sf.name || '@' || k.name) AS source,
       coalesce(dq.name, df.name || '@' || k.name) AS destination,
       CASE WHEN j.enabled THEN 'TRUE' ELSE 'FALSE' END AS enabled,
       a.name AS agent_name, k.name AS link_name,
       nullif(j.rule, '') AS rule,
       nullif(j.transformation, '') AS transformation,
       coalesce(eq.name, ef.name || '@' || k.name) AS exception_queue,
       j.poll_interval AS poll_interval,
       nullif(j.options::text, '{{}}') AS options,
       nullif(j.comment, '') AS comments,
       j.status AS status,
       j.propagated_msgs AS propagated_msgs, j.exceptionq_msgs AS exceptionq_msgs,
       j.failures AS failures,
       nullif(j.last_error_msg, '') AS last_error_msg,
       j.last_error_at::date AS last_error_date,
       to_char(j.last_error_at, 'HH24:MI:SS') AS last_error_time,
       'NATIVE' AS prop_style
FROM gateway_job j
JOIN gateway_link k ON k.id = j.link_id
JOIN gateway_agent a ON a.id = k.agent_id
LEFT JOIN queues_queue sq ON sq.id = j.source_queue_id
LEFT JOIN gateway_foreignqueue sf ON sf.id = j.source_foreign_id
LEFT JOIN queues_queue dq ON dq.id = j.destination_queue_id
LEFT JOIN gateway_foreignqueue df ON df.id = j.destination_foreign_id
LEFT JOIN queues_queue eq ON eq.id = j.exception_queue_id
LEFT JOIN gateway_foreignqueue ef ON ef.id = j.exception_foreign_id;
"""

DROP = """
DROP VIEW IF EXISTS mgw_jobs;
DROP VIEW IF EXISTS mgw_foreign_queues;
DROP VIEW IF EXISTS mgw_redis_links;
DROP VIEW IF EXISTS mgw_nats_links;
DROP VIEW IF EXISTS mgw_mqtt_links;
DROP VIEW IF EXISTS mgw_amqp_links;
DROP VIEW IF EXISTS mgw_links;
DROP VIEW IF EXISTS mgw_agent_options;
DROP VIEW IF EXISTS mgw_gateway;
"""


class Migration(migrations.Migration):
    dependencies = [("gateway", "0002_default_agent")]

    operations = [
        migrations.RunSQL(SQL, DROP),
        # The unmanaged models' state (gateway/models.py, end).
        migrations.CreateModel(
            name="MgwAgentOption",
            fields=[
                ("option_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("agent_name", models.CharField(max_length=30)),
                ("name", models.CharField(max_length=200)),
                ("type", models.CharField(max_length=16)),
                ("value", models.TextField(null=True)),
                ("encrypted", models.CharField(max_length=5)),
            ],
            options={
                "db_table": "mgw_agent_options",
                "ordering": ["agent_name", "name"],
                "managed": False,
            },
        ),
        migrations.CreateModel(
            name="MgwAmqpLink",
            fields=[
                ("link_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("link_name", models.CharField(max_length=30)),
                ("agent_name", models.CharField(max_length=30)),
                ("host", models.CharField(max_length=255, null=True)),
                ("port", models.IntegerField(null=True)),
                ("virtual_host", models.CharField(max_length=255, null=True)),
                ("username", models.CharField(max_length=255, null=True)),
                ("tls", models.CharField(max_length=5, null=True)),
                ("tls_ca_file", models.CharField(max_length=1024, null=True)),
                ("tls_verify", models.CharField(max_length=5, null=True)),
                ("heartbeat", models.IntegerField(null=True)),
                ("client_id", models.CharField(max_length=255, null=True)),
                ("max_connections", models.IntegerField()),
                ("outbound_log_queue", models.CharField(max_length=255, null=True)),
                ("options", models.TextField(null=True)),
                ("link_comment", models.TextField(null=True)),
            ],
            options={
                "db_table": "mgw_amqp_links",
                "ordering": ["link_name"],
                "abstract": False,
                "managed": False,
            },
        ),
        migrations.CreateModel(
            name="MgwForeignQueue",
            fields=[
                ("queue_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("name", models.CharField(max_length=30)),
                ("link_name", models.CharField(max_length=30)),
                ("provider_queue", models.CharField(max_length=512)),
                ("domain", models.CharField(max_length=8, null=True)),
                ("options", models.TextField(null=True)),
                ("queue_comment", models.TextField(null=True)),
            ],
            options={
                "db_table": "mgw_foreign_queues",
                "ordering": ["link_name", "name"],
                "managed": False,
            },
        ),
        migrations.CreateModel(
            name="MgwGateway",
            fields=[
                ("agent_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("agent_name", models.CharField(max_length=30)),
                ("agent_status", models.CharField(max_length=16)),
                ("agent_ping", models.CharField(max_length=11, null=True)),
                ("agent_job", models.CharField(max_length=40, null=True)),
                ("agent_user", models.CharField(max_length=128, null=True)),
                ("agent_database", models.CharField(max_length=255, null=True)),
                ("agent_instance", models.CharField(max_length=255, null=True)),
                ("agent_start_time", models.DateTimeField(null=True)),
                ("conntype", models.CharField(max_length=16, null=True)),
                ("max_connections", models.IntegerField(null=True)),
                ("max_memory", models.IntegerField()),
                ("max_threads", models.IntegerField()),
                ("last_error_date", models.DateField(null=True)),
                ("last_error_time", models.CharField(max_length=8, null=True)),
                ("last_error_msg", models.TextField(null=True)),
                ("service", models.CharField(max_length=64, null=True)),
                ("initfile", models.CharField(max_length=255, null=True)),
                ("comments", models.TextField(null=True)),
            ],
            options={
                "db_table": "mgw_gateway",
                "ordering": ["agent_name"],
                "managed": False,
            },
        ),
        migrations.CreateModel(
            name="MgwJob",
            fields=[
                ("job_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("job_name", models.CharField(max_length=30)),
                ("propagation_type", models.CharField(max_length=8)),
                ("source", models.CharField(max_length=200)),
                ("destination", models.CharField(max_length=200)),
                ("enabled", models.CharField(max_length=5)),
                ("agent_name", models.CharField(max_length=30)),
                ("link_name", models.CharField(max_length=30)),
                ("rule", models.TextField(null=True)),
                ("transformation", models.CharField(max_length=128, null=True)),
                ("exception_queue", models.CharField(max_length=200, null=True)),
                ("poll_interval", models.FloatField(null=True)),
                ("options", models.TextField(null=True)),
                ("comments", models.TextField(null=True)),
                ("status", models.CharField(max_length=16)),
                ("propagated_msgs", models.BigIntegerField()),
                ("exceptionq_msgs", models.BigIntegerField()),
                ("failures", models.IntegerField()),
                ("last_error_msg", models.TextField(null=True)),
                ("last_error_date", models.DateField(null=True)),
                ("last_error_time", models.CharField(max_length=8, null=True)),
                ("prop_style", models.CharField(max_length=6)),
            ],
            options={
                "db_table": "mgw_jobs",
                "ordering": ["job_name"],
                "managed": False,
            },
        ),
        migrations.CreateModel(
            name="MgwLink",
            fields=[
                ("link_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("link_name", models.CharField(max_length=30)),
                ("link_type", models.CharField(max_length=8)),
                ("link_comment", models.TextField(null=True)),
                ("agent_name", models.CharField(max_length=30)),
            ],
            options={
                "db_table": "mgw_links",
                "ordering": ["link_name"],
                "managed": False,
            },
        ),
        migrations.CreateModel(
            name="MgwMqttLink",
            fields=[
                ("link_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("link_name", models.CharField(max_length=30)),
                ("agent_name", models.CharField(max_length=30)),
                ("host", models.CharField(max_length=255, null=True)),
                ("port", models.IntegerField(null=True)),
                ("protocol", models.CharField(max_length=8, null=True)),
                ("username", models.CharField(max_length=255, null=True)),
                ("tls", models.CharField(max_length=5, null=True)),
                ("tls_ca_file", models.CharField(max_length=1024, null=True)),
                ("tls_verify", models.CharField(max_length=5, null=True)),
                ("keepalive", models.IntegerField(null=True)),
                ("client_id", models.CharField(max_length=255, null=True)),
                ("max_connections", models.IntegerField()),
                ("outbound_log_queue", models.CharField(max_length=255, null=True)),
                ("options", models.TextField(null=True)),
                ("link_comment", models.TextField(null=True)),
            ],
            options={
                "db_table": "mgw_mqtt_links",
                "ordering": ["link_name"],
                "abstract": False,
                "managed": False,
            },
        ),
        migrations.CreateModel(
            name="MgwNatsLink",
            fields=[
                ("link_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("link_name", models.CharField(max_length=30)),
                ("agent_name", models.CharField(max_length=30)),
                ("host", models.CharField(max_length=255, null=True)),
                ("port", models.IntegerField(null=True)),
                ("username", models.CharField(max_length=255, null=True)),
                ("tls", models.CharField(max_length=5, null=True)),
                ("tls_ca_file", models.CharField(max_length=1024, null=True)),
                ("tls_verify", models.CharField(max_length=5, null=True)),
                ("client_id", models.CharField(max_length=255, null=True)),
                ("max_connections", models.IntegerField()),
                ("outbound_log_queue", models.CharField(max_length=255, null=True)),
                ("options", models.TextField(null=True)),
                ("link_comment", models.TextField(null=True)),
            ],
            options={
                "db_table": "mgw_nats_links",
                "ordering": ["link_name"],
                "abstract": False,
                "managed": False,
            },
        ),
        migrations.CreateModel(
            name="MgwRedisLink",
            fields=[
                ("link_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("link_name", models.CharField(max_length=30)),
                ("agent_name", models.CharField(max_length=30)),
                ("host", models.CharField(max_length=255, null=True)),
                ("port", models.IntegerField(null=True)),
                ("db", models.IntegerField(null=True)),
                ("username", models.CharField(max_length=255, null=True)),
                ("tls", models.CharField(max_length=5, null=True)),
                ("tls_ca_file", models.CharField(max_length=1024, null=True)),
                ("tls_verify", models.CharField(max_length=5, null=True)),
                ("client_id", models.CharField(max_length=255, null=True)),
                ("max_connections", models.IntegerField()),
                ("outbound_log_queue", models.CharField(max_length=255, null=True)),
                ("options", models.TextField(null=True)),
                ("link_comment", models.TextField(null=True)),
            ],
            options={
                "db_table": "mgw_redis_links",
                "ordering": ["link_name"],
                "abstract": False,
                "managed": False,
            },
        ),
    ]
