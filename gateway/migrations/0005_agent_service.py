"""An agent's ``service`` (CREATE_AGENT/ALTER_AGENT): the queue service whose owner instance runs
it, and the AQ instance its live process runs on; MGW_GATEWAY shows both (SERVICE, and our
INSTANCE_NAME at the end)."""

import importlib

from django.db import migrations, models

_V3 = importlib.import_module("gateway.migrations.0003_mgw_views")


def _view(service: str, extra: str) -> str:
    return f"""
DROP VIEW IF EXISTS mgw_gateway;
CREATE VIEW mgw_gateway AS
SELECT a.id AS agent_id, a.name AS agent_name, a.status AS agent_status,{_V3._PING} AS agent_ping,
       CASE WHEN a.status <> 'NOT_STARTED' THEN 'mgw.' || a.name END AS agent_job,
       nullif(a.username, '') AS agent_user,
       NULL::text AS agent_database,
       CASE WHEN {_V3._LIVE} THEN nullif(a.instance, '') END AS agent_instance,
       CASE WHEN {_V3._LIVE} THEN a.start_time END AS agent_start_time,
       NULL::text AS conntype,
       NULL::int AS max_connections,
       a.max_memory AS max_memory, a.max_threads AS max_threads,
       a.last_error_at::date AS last_error_date,
       to_char(a.last_error_at, 'HH24:MI:SS') AS last_error_time,
       nullif(a.last_error_msg, '') AS last_error_msg,
       {service} AS service,
       NULL::text AS initfile,
       nullif(a.comment, '') AS comments{extra}
FROM gateway_agent a;
"""


SQL = _view(
    "nullif(a.service, '')",
    f",\n       CASE WHEN {_V3._LIVE} THEN nullif(a.instance_name, '') END AS instance_name",
)
REVERSE = _view("NULL::text", "")


class Migration(migrations.Migration):
    dependencies = [("gateway", "0004_log_level_oracle_names")]

    operations = [
        migrations.AddField(
            model_name="agent",
            name="service",
            field=models.CharField(blank=True, max_length=400),
        ),
        migrations.AddField(
            model_name="agent",
            name="instance_name",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AlterField(
            model_name="mgwgateway",
            name="service",
            field=models.CharField(max_length=400, null=True),
        ),
        migrations.AddField(
            model_name="mgwgateway",
            name="instance_name",
            field=models.CharField(max_length=64, null=True),
        ),
        migrations.RunSQL(SQL, REVERSE),
    ]
