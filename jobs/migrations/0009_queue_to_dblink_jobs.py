"""Queue-to-dblink jobs (spec/queues.md §2.4): a schedule row may name a run another row
names too (a shared job's rows all name its run), so ``run`` is no longer one-to-one.

DBA_QUEUE_SCHEDULES shows a queue-to-dblink job once, DESTINATION its link. V$PROPAGATION_SENDER
has a row per propagation, local and remote, with what the source still keeps for it
(unacknowledged, and the oldest of those); V$PROPAGATION_RECEIVER adds the arrivals from other
sites (aq_propagation_arrival, named by the source site's global name)."""

import django.db.models.deletion
from django.db import migrations, models

NEW = """
DROP VIEW IF EXISTS v_propagation_sender;
CREATE VIEW v_propagation_sender AS
SELECT p.id AS propagation_id, sq.id AS queue_id,
       coalesce((SELECT u.username FROM auth_user u WHERE u.id = sqt.owner_id), 'AQADMIN') AS queue_schema, sq.name AS queue_name,
       CASE WHEN p.destination_dblink <> '' THEN (SELECT upper(l.username) FROM sites_databaselink l WHERE l.name = p.destination_dblink) ELSE coalesce((SELECT u.username FROM auth_user u WHERE u.id = dqt.owner_id), 'AQADMIN') END AS dst_queue_schema,
       coalesce(dq.name, p.destination_remote_queue) AS dst_queue_name,
       CASE WHEN p.destination_dblink = '' THEN 'LOCAL' ELSE p.destination_dblink END AS dblink,
       CASE WHEN t.id IS NULL THEN 'UNSCHEDULED'
            WHEN NOT (t.enabled AND p.enabled) THEN 'DISABLED'
            WHEN t.run_state = 'RUNNING' THEN 'PROPAGATING'
            ELSE 'WAITING' END AS schedule_status,
       (SELECT sum(st.enqueued) FROM aq_queue_stat st WHERE st.queue_id = sq.id)::bigint
           AS high_water_mark,
       NULL::bigint AS acknowledgement,
       coalesce(t.live_number, 0) AS total_msgs, coalesce(t.live_bytes, 0) AS total_bytes,
       coalesce(t.live_dequeue_time, 0) AS elapsed_dequeue_time,
       coalesce(t.live_rule_time, 0) AS elapsed_rule_time,
       coalesce(t.live_time, 0) AS elapsed_propagation_time,
       u.n AS unacknowledged,
       p.name AS propagation_name,
       CASE WHEN p.queue_to_queue THEN 'TRUE' ELSE 'FALSE' END AS queue_to_queue,
       u.oldest AS oldest_unacknowledged,
       extract(epoch FROM now() - u.oldest)::float8 AS oldest_unacknowledged_age
FROM jobs_propagation p
JOIN queues_queue sq ON sq.id = p.source_queue_id
JOIN queues_queuetable sqt ON sqt.id = sq.queue_table_id
LEFT JOIN queues_queue dq ON dq.id = p.destination_queue_id
LEFT JOIN queues_queuetable dqt ON dqt.id = dq.queue_table_id
LEFT JOIN jobs_schedule_totals t ON t.propagation_id = p.id
-- What the source still keeps for this destination (ensured delivery, spec/queues.md §2.7):
-- its subscriber's copies, counted on their index, and the enqueue time of the next message it
-- will take (the head in dequeue order, on aq_message_dequeue_v2, as the propagation list's
-- "oldest"; for an enq_time-ordered queue the oldest), not a join of every copy.
CROSS JOIN LATERAL (
    SELECT (SELECT count(*) FROM aq_message_consumer mc
            WHERE mc.subscriber_id = p.subscriber_id) AS n,
           (SELECT m.enq_time FROM aq_message m
            JOIN aq_message_consumer mc ON mc.message_id = m.id
             AND mc.subscriber_id = p.subscriber_id
            WHERE m.queue_id = p.source_queue_id AND m.state = 'READY'
              AND m.commit_seq IS NOT NULL
            ORDER BY m.sort_pri, m.commit_seq, m.id LIMIT 1) AS oldest
) u;

DROP VIEW IF EXISTS v_propagation_receiver;
CREATE VIEW v_propagation_receiver AS
SELECT 'P' || p.id AS receiver_id, p.id AS propagation_id, sq.name AS src_queue_name,
       coalesce((SELECT s.global_name FROM aq_site s WHERE s.id = 1), 'LOCAL') AS src_dbname,
       dq.name AS dst_queue_name,
       coalesce(t.live_number, 0) AS total_msgs, coalesce(t.live_bytes, 0) AS total_bytes,
       coalesce(t.live_enqueue_time, 0) AS elapsed_enqueue_time,
       (SELECT r.heartbeat_at FROM jobs_propagationrun r
        WHERE r.propagation_id = p.id AND r.propagated > 0
        ORDER BY r.id DESC LIMIT 1) AS last_received,
       p.name AS stream
FROM jobs_propagation p
JOIN queues_queue sq ON sq.id = p.source_queue_id
JOIN queues_queue dq ON dq.id = p.destination_queue_id
LEFT JOIN jobs_schedule_totals t ON t.propagation_id = p.id
UNION ALL
-- Arrivals from other sites (engine.receive's counters): one row per source site, stream
-- (a propagation, or a queue-to-dblink job SOURCE@LINK) and queue here.
SELECT 'A' || a.id, NULL, a.source_queue, a.source_site, q.name, a.total_msgs, a.total_bytes,
       a.elapsed_enqueue_time, a.last_arrival, a.stream
FROM aq_propagation_arrival a
JOIN queues_queue q ON q.id = a.queue_id;

CREATE OR REPLACE VIEW dba_queue_schedules AS
SELECT t.id AS schedule_id,
       coalesce((SELECT u.username FROM auth_user u WHERE u.id = sqt.owner_id), 'AQADMIN') AS schema, sq.name AS qname,
       CASE WHEN NOT p.queue_to_queue AND p.destination_dblink <> '' THEN p.destination_dblink
       ELSE '"' || CASE WHEN p.destination_dblink <> '' THEN (SELECT upper(l.username) FROM sites_databaselink l WHERE l.name = p.destination_dblink) ELSE coalesce((SELECT u.username FROM auth_user u WHERE u.id = dqt.owner_id), 'AQADMIN') END || '"."' || coalesce(dq.name, p.destination_remote_queue) || '"@'
           || CASE WHEN p.destination_dblink = '' THEN 'LOCAL' ELSE p.destination_dblink END END
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
LEFT JOIN queues_queuetable dqt ON dqt.id = dq.queue_table_id
-- A queue-to-dblink job is one schedule (Oracle: DESTINATION is the link): its first
-- propagation's row stands for it; the others' rows are kept alike by the services.
WHERE p.queue_to_queue OR p.destination_dblink = '' OR NOT EXISTS (
    SELECT 1 FROM jobs_propagation o JOIN jobs_propagationschedule os ON os.propagation_id = o.id
    WHERE NOT o.queue_to_queue AND o.source_queue_id = p.source_queue_id
      AND o.destination_dblink = p.destination_dblink AND o.id < p.id);
"""

OLD = """
DROP VIEW IF EXISTS v_propagation_sender;
CREATE VIEW v_propagation_sender AS
SELECT p.id AS propagation_id, sq.id AS queue_id,
       coalesce((SELECT u.username FROM auth_user u WHERE u.id = sqt.owner_id), 'AQADMIN') AS queue_schema, sq.name AS queue_name,
       coalesce((SELECT u.username FROM auth_user u WHERE u.id = dqt.owner_id), 'AQADMIN') AS dst_queue_schema, dq.name AS dst_queue_name,
       CASE WHEN p.destination_dblink = '' THEN 'LOCAL' ELSE p.destination_dblink END AS dblink,
       CASE WHEN t.id IS NULL THEN 'UNSCHEDULED'
            WHEN NOT (t.enabled AND p.enabled) THEN 'DISABLED'
            WHEN t.run_state = 'RUNNING' THEN 'PROPAGATING'
            ELSE 'WAITING' END AS schedule_status,
       (SELECT sum(st.enqueued) FROM aq_queue_stat st WHERE st.queue_id = sq.id)::bigint
           AS high_water_mark,
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

DROP VIEW IF EXISTS v_propagation_receiver;
CREATE VIEW v_propagation_receiver AS
SELECT p.id AS propagation_id, sq.name AS src_queue_name, 'LOCAL' AS src_dbname,
       dq.name AS dst_queue_name,
       coalesce(t.live_number, 0) AS total_msgs, coalesce(t.live_bytes, 0) AS total_bytes,
       coalesce(t.live_enqueue_time, 0) AS elapsed_enqueue_time,
       (SELECT r.heartbeat_at FROM jobs_propagationrun r
        WHERE r.propagation_id = p.id AND r.propagated > 0
        ORDER BY r.id DESC LIMIT 1) AS last_received
FROM jobs_propagation p
JOIN queues_queue sq ON sq.id = p.source_queue_id
JOIN queues_queue dq ON dq.id = p.destination_queue_id
LEFT JOIN jobs_schedule_totals t ON t.propagation_id = p.id;

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


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0008_status_views_show_remote_destinations"),
        ("queues", "0015_propagation_arrival"),
    ]

    operations = [
        migrations.AlterField(
            model_name="propagationschedule",
            name="run",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="jobs.propagationrun",
            ),
        ),
        migrations.RunSQL(NEW, OLD),
    ]
