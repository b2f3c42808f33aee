"""Cheaper sender and receiver views: the high-water mark is the source's enqueue counter (not a
scan of aq_message) and the last receipt reads the newest runs first (jobs_run_prop_recent)."""

from django.db import migrations

_OWNER = "coalesce((SELECT u.username FROM auth_user u WHERE u.id = {qt}.owner_id), 'AQADMIN')"

SQL = f"""
CREATE OR REPLACE VIEW v_propagation_sender AS
SELECT p.id AS propagation_id, sq.id AS queue_id,
       {_OWNER.format(qt="sqt")} AS queue_schema, sq.name AS queue_name,
       {_OWNER.format(qt="dqt")} AS dst_queue_schema, dq.name AS dst_queue_name,
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

CREATE OR REPLACE VIEW v_propagation_receiver AS
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
"""


class Migration(migrations.Migration):
    dependencies = [("jobs", "0002_status_views")]

    # Reverting leaves these definitions; 0002's reverse drops them.
    operations = [migrations.RunSQL(SQL, migrations.RunSQL.noop)]
