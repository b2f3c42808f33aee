"""The Oracle-named propagation views: DBA_PROPAGATION, DBA_QUEUE_SCHEDULES and the
V$PROPAGATION_SENDER / _RECEIVER counters. Totals include the current run's committed counters."""

from django.db import migrations

_OWNER = "coalesce((SELECT u.username FROM auth_user u WHERE u.id = {qt}.owner_id), 'AQADMIN')"

SQL = f"""
CREATE OR REPLACE VIEW jobs_schedule_totals AS
SELECT s.*,
       s.total_number + coalesce(r.propagated, 0) AS live_number,
       s.total_bytes + coalesce(r.bytes, 0) AS live_bytes,
       s.total_time + coalesce(extract(epoch FROM now() - r.started_at), 0) AS live_time,
       s.total_runs + (r.id IS NOT NULL)::int AS live_runs,
       s.elapsed_dequeue_time + coalesce(r.dequeue_time, 0) AS live_dequeue_time,
       s.elapsed_rule_time + coalesce(r.rule_time, 0) AS live_rule_time,
       s.elapsed_enqueue_time + coalesce(r.enqueue_time, 0) AS live_enqueue_time,
       r.worker AS run_worker, r.session_id AS run_session, r.started_at AS run_started,
       r.state AS run_state
FROM jobs_propagationschedule s
LEFT JOIN jobs_propagationrun r ON r.id = s.run_id AND r.state = 'RUNNING' AND NOT r.folded;

CREATE OR REPLACE VIEW dba_propagation AS
SELECT p.id AS propagation_id, p.name AS propagation_name,
       {_OWNER.format(qt="sqt")} AS source_queue_owner, sq.name AS source_queue_name,
       {_OWNER.format(qt="dqt")} AS destination_queue_owner, dq.name AS destination_queue_name,
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
       {_OWNER.format(qt="sqt")} AS schema, sq.name AS qname,
       '"' || {_OWNER.format(qt="dqt")} || '"."' || dq.name || '"@'
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

CREATE OR REPLACE VIEW v_propagation_sender AS
SELECT p.id AS propagation_id, sq.id AS queue_id,
       {_OWNER.format(qt="sqt")} AS queue_schema, sq.name AS queue_name,
       {_OWNER.format(qt="dqt")} AS dst_queue_schema, dq.name AS dst_queue_name,
       CASE WHEN p.destination_dblink = '' THEN 'LOCAL' ELSE p.destination_dblink END AS dblink,
       CASE WHEN t.id IS NULL THEN 'UNSCHEDULED'
            WHEN NOT (t.enabled AND p.enabled) THEN 'DISABLED'
            WHEN t.run_state = 'RUNNING' THEN 'PROPAGATING'
            ELSE 'WAITING' END AS schedule_status,
       (SELECT max(m.id) FROM aq_message m WHERE m.queue_id = sq.id) AS high_water_mark,
       NULL::bigint AS acknowledgement,
       coalesce(t.live_number, 0) AS total_msgs, coalesce(t.live_bytes, 0) AS total_bytes,
       coalesce(t.live_dequeue_time, 0) AS elapsed_dequeue_time,
       coalesce(t.live_rule_time, 0) AS elapsed_rule_time,
       coalesce(t.live_time, 0) AS elapsed_propagation_time,
       (SELECT count(*) FROM aq_message_consumer mc WHERE mc.subscriber_id = p.subscriber_id)
           AS unacknowledged
FROM jobs_propagation p
JOIN queues_queue sq ON sq.id = p.source_queue_id
JOIN queues_queuetable sqt ON sqt.id = sq.queue_table_id
JOIN queues_queue dq ON dq.id = p.destination_queue_id
JOIN queues_queuetable dqt ON dqt.id = dq.queue_table_id
LEFT JOIN jobs_schedule_totals t ON t.propagation_id = p.id;

CREATE OR REPLACE VIEW v_propagation_receiver AS
SELECT p.id AS propagation_id, sq.name AS src_queue_name, 'LOCAL' AS src_dbname,
       dq.name AS dst_queue_name,
       coalesce(t.live_number, 0) AS total_msgs, coalesce(t.live_bytes, 0) AS total_bytes,
       coalesce(t.live_enqueue_time, 0) AS elapsed_enqueue_time,
       (SELECT max(r.heartbeat_at) FROM jobs_propagationrun r
        WHERE r.propagation_id = p.id AND r.propagated > 0) AS last_received
FROM jobs_propagation p
JOIN queues_queue sq ON sq.id = p.source_queue_id
JOIN queues_queue dq ON dq.id = p.destination_queue_id
LEFT JOIN jobs_schedule_totals t ON t.propagation_id = p.id;
"""

DROP = """
DROP VIEW IF EXISTS v_propagation_receiver;
DROP VIEW IF EXISTS v_propagation_sender;
DROP VIEW IF EXISTS dba_queue_schedules;
DROP VIEW IF EXISTS dba_propagation;
DROP VIEW IF EXISTS jobs_schedule_totals;
"""


class Migration(migrations.Migration):
    dependencies = [("jobs", "0001_initial")]

    operations = [migrations.RunSQL(SQL, DROP)]
