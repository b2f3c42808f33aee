"""A propagation's backlog and the enqueue time of its next message as PL/pgSQL functions.

As subqueries in the propagation list's SELECT they made PostgreSQL plan the partitioned
message table once per queue table's storage at every read (0.4 s of planning at 100 queue
tables, for any number of propagations). In a PL/pgSQL function the source's queue table is a
known value when the statement is planned, so the plan covers that queue table's storage alone.
"""

from django.db import migrations

FUNCTIONS = """
CREATE FUNCTION aq_propagation_backlog(p_subscriber bigint, p_source bigint) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_exq bigint;
    v_qt bigint;
    v_total bigint;
    v_parked bigint;
BEGIN
    -- The source's queue table (its consumer rows and exception queue are in that storage).
    SELECT q.queue_table_id, q.exception_queue_id INTO v_qt, v_exq
      FROM queues_queue q WHERE q.id = p_source;
    -- The subscriber's consumer rows, counted on the (subscriber_id, message_id) index ...
    SELECT count(*) INTO v_total FROM aq_message_consumer mc
     WHERE mc.queue_table_id = v_qt AND mc.subscriber_id = p_subscriber;
    IF v_total = 0 OR v_exq IS NULL THEN
        RETURN v_total;
    END IF;
    -- ... less its copies parked in the source's exception queue (found from that queue's side,
    -- which is small; an exception queue is in its queue's queue table).
    SELECT count(*) INTO v_parked
      FROM aq_message m
      JOIN aq_message_consumer mc ON mc.message_id = m.id AND mc.subscriber_id = p_subscriber
       AND mc.queue_table_id = v_qt
     WHERE m.queue_table_id = v_qt AND m.queue_id = v_exq AND m.state = 'EXPIRED';
    RETURN v_total - v_parked;
END $$;

CREATE FUNCTION aq_propagation_oldest(p_subscriber bigint, p_source bigint)
RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_qt bigint;
    v_at timestamptz;
BEGIN
    SELECT q.queue_table_id INTO v_qt FROM queues_queue q WHERE q.id = p_source;
    -- The head of the source in dequeue order (aq_message_dequeue_v2), not a minimum over the
    -- whole backlog.
    SELECT m.enq_time INTO v_at
      FROM aq_message m
      JOIN aq_message_consumer mc ON mc.message_id = m.id AND mc.subscriber_id = p_subscriber
       AND mc.queue_table_id = v_qt
     WHERE m.queue_table_id = v_qt AND m.queue_id = p_source AND m.state = 'READY'
       AND m.commit_seq IS NOT NULL
     ORDER BY m.sort_pri, m.commit_seq, m.id
     LIMIT 1;
    RETURN v_at;
END $$;
"""

DROP = """
DROP FUNCTION IF EXISTS aq_propagation_backlog(bigint, bigint);
DROP FUNCTION IF EXISTS aq_propagation_oldest(bigint, bigint);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0010_runs_and_workers_follow_instances"),
    ]

    operations = [migrations.RunSQL(FUNCTIONS, DROP)]
