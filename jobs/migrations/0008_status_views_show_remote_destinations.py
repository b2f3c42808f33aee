"""DBA_PROPAGATION and DBA_QUEUE_SCHEDULES show remote propagations too: the destination
queue is joined when local, else named by destination_remote_queue, owned at the remote by the
link's user (Oracle shows the remote schema), DESTINATION_DBLINK the link's name."""

from django.db import migrations

NEW = """
CREATE OR REPLACE VIEW dba_propagation AS
SELECT p.id AS propagation_id, p.name AS propagation_name,
       coalesce((SELECT u.username FROM auth_user u WHERE u.id = sqt.owner_id), 'AQADMIN') AS source_queue_owner, sq.name AS source_queue_name,
       CASE WHEN p.destination_dblink <> '' THEN (SELECT upper(l.username) FROM sites_databaselink l WHERE l.name = p.destination_dblink) ELSE coalesce((SELECT u.username FROM auth_user u WHERE u.id = dqt.owner_id), 'AQADMIN') END AS destination_queue_owner, coalesce(dq.name, p.destination_remote_queue) AS destination_queue_name,
       CASE WHEN p.destination_dblink = '' THEN 'LOCAL' ELSE p.destination_dblink END
           AS destination_dblink,
       CASE WHEN p.positive_rule_set_id IS NULL THEN NULL ELSE 'AQADMIN' END AS rule_set_owner,
       prs.name AS rule_set_name,
       CASE WHEN p.negative_rule_set_id IS NULL THEN NULL ELSE 'AQADMIN' END
           AS negative_rule_set_owner,
       nrs.name AS negative_rule_set_name,
       CASE WHEN p.queue_to_queue THEN 'TRUE' ELSE 'FALSE' END AS queue_to_queue,
       CASE WHEN NOT p.enabled THEN 'DISABLED'
            WHEN s.id IS NOT NULL AND NOT s.enabled AND s.failures >= s.max_failures
                THEN 'ABORTED'
            WHEN s.id IS NULL OR NOT s.enabled THEN 'DISABLED'
            ELSE 'ENABLED' END AS status,
       nullif(s.last_error_msg, '') AS error_message,
       s.last_error_at AS error_date
FROM jobs_propagation p
JOIN queues_queue sq ON sq.id = p.source_queue_id
JOIN queues_queuetable sqt ON sqt.id = sq.queue_table_id
LEFT JOIN queues_queue dq ON dq.id = p.destination_queue_id
LEFT JOIN queues_queuetable dqt ON dqt.id = dq.queue_table_id
LEFT JOIN rules_ruleset prs ON prs.id = p.positive_rule_set_id
LEFT JOIN rules_ruleset nrs ON nrs.id = p.negative_rule_set_id
LEFT JOIN jobs_propagationschedule s ON s.propagation_id = p.id;

CREATE OR REPLACE VIEW dba_queue_schedules AS
SELECT t.id AS schedule_id,
       coalesce((SELECT u.username FROM auth_user u WHERE u.id = sqt.owner_id), 'AQADMIN') AS schema, sq.name AS qname,
       '"' || CASE WHEN p.destination_dblink <> '' THEN (SELECT upper(l.username) FROM sites_databaselink l WHERE l.name = p.destination_dblink) ELSE coalesce((SELECT u.username FROM auth_user u WHERE u.id = dqt.owner_id), 'AQADMIN') END || '"."' || coalesce(dq.name, p.destination_remote_queue) || '"@'
           || CASE WHEN p.destination_dblink = '' THEN 'LOCAL' ELSE p.destination_dblink END
           AS destination,
       'PERSISTENT' AS message_delivery_mode,
       t.start_time::date AS start_date, to_char(t.start_time, 'HH24:MI:SS') AS start_time,
       t.duration AS propagation_window, nullif(t.next_time, '') AS next_time,
       t.latency AS latency,
       CASE WHEN t.enabled AND p.enabled THEN 'N' ELSE 'Y' END AS schedule_disabled,
       t.run_worker AS process_name, t.run_session AS session_id,
       CASE WHEN t.run_worker IS NULL THEN NULL ELSE 1 END AS instance,
       t.last_run_at::date AS last_run_date, to_char(t.last_run_at, 'HH24:MI:SS') AS last_run_time,
       t.run_started::date AS current_start_date,
       to_char(t.run_started, 'HH24:MI:SS') AS current_start_time,
       CASE WHEN t.enabled AND p.enabled THEN t.next_run_at::date END AS next_run_date,
       CASE WHEN t.enabled AND p.enabled THEN to_char(t.next_run_at, 'HH24:MI:SS') END
           AS next_run_time,
       t.live_time AS total_time, t.live_number AS total_number, t.live_bytes AS total_bytes,
       t.max_number AS max_number, t.max_bytes AS max_bytes,
       CASE WHEN t.live_runs = 0 THEN 0 ELSE t.live_number::float / t.live_runs END AS avg_number,
       CASE WHEN t.live_number = 0 THEN 0 ELSE t.live_bytes::float / t.live_number END AS avg_size,
       CASE WHEN t.live_runs = 0 THEN 0 ELSE t.live_time / t.live_runs END AS avg_time,
       t.failures AS failures,
       t.last_error_at::date AS last_error_date,
       to_char(t.last_error_at, 'HH24:MI:SS') AS last_error_time,
       nullif(t.last_error_msg, '') AS last_error_msg
FROM jobs_schedule_totals t
JOIN jobs_propagation p ON p.id = t.propagation_id
JOIN queues_queue sq ON sq.id = p.source_queue_id
JOIN queues_queuetable sqt ON sqt.id = sq.queue_table_id
LEFT JOIN queues_queue dq ON dq.id = p.destination_queue_id
LEFT JOIN queues_queuetable dqt ON dqt.id = dq.queue_table_id;
"""

OLD = """
CREATE OR REPLACE VIEW dba_propagation AS
SELECT p.id AS propagation_id, p.name AS propagation_name,
       coalesce((SELECT u.username FROM auth_user u WHERE u.id = sqt.owner_id), 'AQADMIN') AS source_queue_owner, sq.name AS source_queue_name,
       coalesce((SELECT u.username FROM auth_user u WHERE u.id = dqt.owner_id), 'AQADMIN') AS destination_queue_owner, dq.name AS destination_queue_name,
       CASE WHEN p.destination_dblink = '' THEN 'LOCAL' ELSE p.destination_dblink END
           AS destination_dblink,
       CASE WHEN p.positive_rule_set_id IS NULL THEN NULL ELSE 'AQADMIN' END AS rule_set_owner,
       prs.name AS rule_set_name,
       CASE WHEN p.negative_rule_set_id IS NULL THEN NULL ELSE 'AQADMIN' END
           AS negative_rule_set_owner,
       nrs.name AS negative_rule_set_name,
       CASE WHEN p.queue_to_queue THEN 'TRUE' ELSE 'FALSE' END AS queue_to_queue,
       CASE WHEN NOT p.enabled THEN 'DISABLED'
            WHEN s.id IS NOT NULL AND NOT s.enabled AND s.failures >= s.max_failures
                THEN 'ABORTED'
            WHEN s.id IS NULL OR NOT s.enabled THEN 'DISABLED'
            ELSE 'ENABLED' END AS status,
       nullif(s.last_error_msg, '') AS error_message,
       s.last_error_at AS error_date
FROM jobs_propagation p
JOIN queues_queue sq ON sq.id = p.source_queue_id
JOIN queues_queuetable sqt ON sqt.id = sq.queue_table_id
JOIN queues_queue dq ON dq.id = p.destination_queue_id
JOIN queues_queuetable dqt ON dqt.id = dq.queue_table_id
LEFT JOIN rules_ruleset prs ON prs.id = p.positive_rule_set_id
LEFT JOIN rules_ruleset nrs ON nrs.id = p.negative_rule_set_id
LEFT JOIN jobs_propagationschedule s ON s.propagation_id = p.id;

CREATE OR REPLACE VIEW dba_queue_schedules AS
SELECT t.id AS schedule_id,
       coalesce((SELECT u.username FROM auth_user u WHERE u.id = sqt.owner_id), 'AQADMIN') AS schema, sq.name AS qname,
       '"' || coalesce((SELECT u.username FROM auth_user u WHERE u.id = dqt.owner_id), 'AQADMIN') || '"."' || dq.name || '"@'
           || CASE WHEN p.destination_dblink = '' THEN 'LOCAL' ELSE p.destination_dblink END
           AS destination,
       'PERSISTENT' AS message_delivery_mode,
       t.start_time::date AS start_date, to_char(t.start_time, 'HH24:MI:SS') AS start_time,
       t.duration AS propagation_window, nullif(t.next_time, '') AS next_time,
       t.latency AS latency,
       CASE WHEN t.enabled AND p.enabled THEN 'N' ELSE 'Y' END AS schedule_disabled,
       t.run_worker AS process_name, t.run_session AS session_id,
       CASE WHEN t.run_worker IS NULL THEN NULL ELSE 1 END AS instance,
       t.last_run_at::date AS last_run_date, to_char(t.last_run_at, 'HH24:MI:SS') AS last_run_time,
       t.run_started::date AS current_start_date,
       to_char(t.run_started, 'HH24:MI:SS') AS current_start_time,
       CASE WHEN t.enabled AND p.enabled THEN t.next_run_at::date END AS next_run_date,
       CASE WHEN t.enabled AND p.enabled THEN to_char(t.next_run_at, 'HH24:MI:SS') END
           AS next_run_time,
       t.live_time AS total_time, t.live_number AS total_number, t.live_bytes AS total_bytes,
       t.max_number AS max_number, t.max_bytes AS max_bytes,
       CASE WHEN t.live_runs = 0 THEN 0 ELSE t.live_number::float / t.live_runs END AS avg_number,
       CASE WHEN t.live_number = 0 THEN 0 ELSE t.live_bytes::float / t.live_number END AS avg_size,
       CASE WHEN t.live_runs = 0 THEN 0 ELSE t.live_time / t.live_runs END AS avg_time,
       t.failures AS failures,
       t.last_error_at::date AS last_error_date,
       to_char(t.last_error_at, 'HH24:MI:SS') AS last_error_time,
       nullif(t.last_error_msg, '') AS last_error_msg
FROM jobs_schedule_totals t
JOIN jobs_propagation p ON p.id = t.propagation_id
JOIN queues_queue sq ON sq.id = p.source_queue_id
JOIN queues_queuetable sqt ON sqt.id = sq.queue_table_id
JOIN queues_queue dq ON dq.id = p.destination_queue_id
JOIN queues_queuetable dqt ON dqt.id = dq.queue_table_id;
"""


class Migration(migrations.Migration):
    dependencies = [("jobs", "0007_remote_propagation"), ("sites", "0002_oracle_views")]

    operations = [migrations.RunSQL(NEW, OLD)]
