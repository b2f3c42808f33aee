"""SQL the ORM cannot express: the commit-time sequence trigger and the Oracle-named status views."""

from django.db import migrations

COMMIT_SEQ = """
CREATE SEQUENCE aq_commit_seq;

-- Fires at COMMIT (deferred) for every message whose commit_seq is NULL, i.e. on commit-time
-- queue tables. The first row of a transaction takes the advisory lock and one number; the lock is
-- released only after the commit is visible, so commit_seq order is commit order and a snapshot
-- that sees a number sees every lower one. See queues/engine.py.
CREATE FUNCTION aq_assign_commit_seq() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    seq bigint := nullif(current_setting('aq.commit_seq', true), '')::bigint;
BEGIN
    IF seq IS NULL THEN
        PERFORM pg_advisory_xact_lock(hashtext('aq_commit_seq'));
        seq := nextval('aq_commit_seq');
        PERFORM set_config('aq.commit_seq', seq::text, true);
    END IF;
    UPDATE aq_message SET commit_seq = seq WHERE id = NEW.id AND commit_seq IS NULL;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER aq_message_commit_seq
    AFTER INSERT OR UPDATE OF commit_seq ON aq_message
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.commit_seq IS NULL)
    EXECUTE FUNCTION aq_assign_commit_seq();
"""

VIEWS = """
CREATE VIEW dba_queue_tables AS
SELECT coalesce(u.username, 'AQADMIN') AS owner,
       qt.name AS queue_table,
       CASE WHEN upper(qt.payload_type) = 'ANY' THEN 'VARIANT' ELSE 'OBJECT' END AS type,
       CASE WHEN upper(qt.payload_type) = 'ANY' THEN 'SYS.ANYDATA' ELSE qt.payload_type END
           AS object_type,
       upper(replace(qt.sort_order, ',', ', ')) AS sort_order,
       CASE WHEN qt.multiple_consumers THEN 'MULTIPLE' ELSE 'SINGLE' END AS recipients,
       'NONE'::text AS message_grouping,
       '10.0.0'::text AS compatible,
       0 AS primary_instance,
       0 AS secondary_instance,
       1 AS owner_instance,
       qt.comment AS user_comment,
       CASE WHEN qt.secure THEN 'YES' ELSE 'NO' END AS secure,
       qt.id AS queue_table_id
FROM queues_queuetable qt LEFT JOIN auth_user u ON u.id = qt.owner_id;

CREATE VIEW dba_queues AS
SELECT coalesce(u.username, 'AQADMIN') AS owner,
       q.name AS name,
       qt.name AS queue_table,
       q.id AS qid,
       q.kind AS queue_type,
       q.max_retries,
       q.retry_delay,
       CASE WHEN q.enqueue_enabled THEN '  YES  ' ELSE '  NO  ' END AS enqueue_enabled,
       CASE WHEN q.dequeue_enabled THEN '  YES  ' ELSE '  NO  ' END AS dequeue_enabled,
       q.retention_time::text AS retention,
       q.comment AS user_comment,
       q.name AS network_name,
       'FALSE'::text AS sharded,
       'Transactional Event Queue'::text AS queue_category,
       CASE WHEN qt.multiple_consumers THEN 'MULTIPLE' ELSE 'SINGLE' END AS recipients
FROM queues_queue q
JOIN queues_queuetable qt ON qt.id = q.queue_table_id
LEFT JOIN auth_user u ON u.id = qt.owner_id;

CREATE VIEW dba_aq_agent_privs AS
SELECT a.name AS agent_name,
       u.username AS db_username,
       'NO'::text AS http_enabled,
       'NO'::text AS smtp_enabled,
       au.id AS agent_user_id,
       a.id AS agent_id
FROM queues_agentuser au
JOIN queues_agent a ON a.id = au.agent_id
JOIN auth_user u ON u.id = au.user_id;

-- V$PERSISTENT_QUEUES: counters since the counters were created (the engine keeps them sharded).
CREATE VIEW v_persistent_queues AS
SELECT q.id AS queue_id,
       q.name AS queue_name,
       coalesce(sum(s.enqueued), 0)::bigint AS enqueued_msgs,
       coalesce(sum(s.dequeued), 0)::bigint AS dequeued_msgs
FROM queues_queue q LEFT JOIN aq_queue_stat s ON s.queue_id = q.id
GROUP BY q.id, q.name;
"""

DROP = """
DROP VIEW IF EXISTS v_persistent_queues;
DROP VIEW IF EXISTS dba_aq_agent_privs;
DROP VIEW IF EXISTS dba_queues;
DROP VIEW IF EXISTS dba_queue_tables;
DROP TRIGGER IF EXISTS aq_message_commit_seq ON aq_message;
DROP FUNCTION IF EXISTS aq_assign_commit_seq();
DROP SEQUENCE IF EXISTS aq_commit_seq;
"""


class Migration(migrations.Migration):
    dependencies = [("queues", "0001_initial")]

    operations = [migrations.RunSQL(COMMIT_SEQ + VIEWS, DROP)]
