"""Message storage per queue table: aq_message and aq_message_consumer become partitioned by
queue table, then by in_buffer (a logged and an UNLOGGED leaf); see queues/engine/storage.py.

Every existing row moves with its id and every field (READY, WAITING, PROCESSED, EXPIRED,
leases, consumer copies, commit sequence numbers). PostgreSQL 15 has no identity column on a
partitioned table, so ``id`` draws from an owned sequence of the same name, continued from the old
one. Views over the tables are dropped and recreated from their own definitions. Reversible: the
reverse rebuilds the plain tables with the same rows.

The ORM state keeps ``id`` as the primary key (ids stay unique, from one sequence); the database's
primary keys are ``(id, queue_table_id, in_buffer)``, as a partitioned table's unique indexes must
hold its partition keys.
"""

from django.db import migrations, models

MESSAGE_COLUMNS = """
    id bigint NOT NULL {id},
    state varchar(10) NOT NULL,
    priority integer NOT NULL,
    sort_pri integer NOT NULL,
    commit_seq bigint,
    kind varchar(8) NOT NULL,
    type_name varchar(128) NOT NULL,
    correlation varchar(128) NOT NULL,
    sender varchar(128) NOT NULL,
    headers jsonb NOT NULL,
    payload jsonb,
    enq_time timestamptz NOT NULL,
    enq_user varchar(150) NOT NULL,
    delay_until timestamptz,
    expiration double precision,
    expire_at timestamptz,
    attempts integer NOT NULL,
    locked_until timestamptz,
    lock_token uuid,
    pending_consumers integer NOT NULL,
    processed_at timestamptz,
    exception_reason varchar(200) NOT NULL,
    replayed boolean NOT NULL,
    original_queue_id bigint REFERENCES queues_queue(id) DEFERRABLE INITIALLY DEFERRED,
    queue_id bigint NOT NULL REFERENCES queues_queue(id) DEFERRABLE INITIALLY DEFERRED,
    queue_table_id bigint NOT NULL REFERENCES queues_queuetable(id) DEFERRABLE INITIALLY DEFERRED,
    bulk_job_id bigint,
    bulk_source_id bigint,
    delivery_mode varchar(10) NOT NULL DEFAULT 'PERSISTENT',
    in_buffer boolean NOT NULL DEFAULT false,
    txn_group bigint
"""

MESSAGE_INDEXES = """
CREATE INDEX aq_message_dequeue_v2 ON aq_message (queue_id, state, sort_pri, commit_seq, id);
CREATE INDEX aq_message_waiting ON aq_message (delay_until) WHERE state = 'WAITING';
CREATE INDEX aq_message_expiring ON aq_message (expire_at)
    WHERE expire_at IS NOT NULL AND state = 'READY';
CREATE INDEX aq_message_leased ON aq_message (locked_until) WHERE locked_until IS NOT NULL;
CREATE INDEX aq_message_processed ON aq_message (processed_at) WHERE state = 'PROCESSED';
CREATE INDEX aq_message_original ON aq_message (original_queue_id)
    WHERE original_queue_id IS NOT NULL;
CREATE UNIQUE INDEX aq_message_bulk_key ON aq_message {bulk_cols}
    WHERE bulk_job_id IS NOT NULL AND original_queue_id IS NULL;
"""

CONSUMER_COLUMNS = """
    id bigint NOT NULL {id},
    attempts integer NOT NULL,
    locked_until timestamptz,
    lock_token uuid,
    message_id bigint NOT NULL,
    subscriber_id bigint NOT NULL REFERENCES queues_subscriber(id) DEFERRABLE INITIALLY DEFERRED
"""

# A constraint trigger on a partitioned table is cloned onto every leaf (PostgreSQL 13+) and fires
# there, so TG_TABLE_NAME is the leaf: the UPDATE names it and touches one small table instead
# of planning over every queue table's partitions.
COMMIT_SEQ_PARTITIONED = """
CREATE OR REPLACE FUNCTION aq_assign_commit_seq() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    seq bigint := nullif(current_setting('aq.commit_seq', true), '')::bigint;
BEGIN
    IF seq IS NULL THEN
        PERFORM pg_advisory_xact_lock(hashtext('aq_commit_seq'));
        seq := nextval('aq_commit_seq');
        PERFORM set_config('aq.commit_seq', seq::text, true);
    END IF;
    EXECUTE format('UPDATE %I.%I SET commit_seq = $1 WHERE id = $2 AND commit_seq IS NULL',
                   TG_TABLE_SCHEMA, TG_TABLE_NAME) USING seq, NEW.id;
    RETURN NULL;
END $$;
"""

COMMIT_SEQ_PLAIN = """
CREATE OR REPLACE FUNCTION aq_assign_commit_seq() RETURNS trigger LANGUAGE plpgsql AS $$
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
"""

TRIGGER = """
CREATE CONSTRAINT TRIGGER aq_message_commit_seq
    AFTER INSERT OR UPDATE OF commit_seq ON aq_message
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.commit_seq IS NULL)
    EXECUTE FUNCTION aq_assign_commit_seq();
"""

# Views reading the tables (v_propagation_sender from jobs, and any later one), transitively,
# in creation order.
DEPENDENT_VIEWS = """
WITH RECURSIVE deps(oid, depth) AS (
    SELECT DISTINCT r.ev_class, 1 FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
    WHERE d.refobjid IN ('aq_message'::regclass, 'aq_message_consumer'::regclass)
      AND r.ev_class NOT IN ('aq_message'::regclass, 'aq_message_consumer'::regclass)
    UNION
    SELECT r.ev_class, deps.depth + 1 FROM deps
    JOIN pg_depend d ON d.refobjid = deps.oid JOIN pg_rewrite r ON r.oid = d.objid
    WHERE r.ev_class <> deps.oid
)
SELECT c.relname, pg_get_viewdef(c.oid), max(depth) FROM deps JOIN pg_class c ON c.oid = deps.oid
WHERE c.relkind = 'v' GROUP BY c.relname, c.oid ORDER BY max(depth), c.relname
"""


def _id(columns: str, sequence_of: str | None = None) -> str:
    """The id column: from an owned sequence on a partitioned table (PostgreSQL 15 has no identity
    there), an identity column as Django makes it on a plain one."""
    if sequence_of:
        return columns.replace("{id}", f"DEFAULT nextval('{sequence_of}_id_seq')")
    return columns.replace("{id}", "GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")


def _views(cur) -> list[tuple[str, str]]:
    cur.execute(DEPENDENT_VIEWS)
    views = [(name, sql) for name, sql, _ in cur.fetchall()]
    for name, _ in reversed(views):
        cur.execute(f"DROP VIEW {name}")
    return views


def _restore(cur, views: list[tuple[str, str]]) -> None:
    for name, sql in views:
        cur.execute(f"CREATE VIEW {name} AS {sql}")


def _set_old_aside(cur) -> None:
    """Rename the current tables, their indexes and sequences with an ``_old`` suffix."""
    for table in ("aq_message", "aq_message_consumer"):
        cur.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s", [table])
        for (index,) in cur.fetchall():
            cur.execute(f"ALTER INDEX {index} RENAME TO {index[:50]}_old")
        cur.execute(f"ALTER TABLE {table} RENAME TO {table}_old")
        cur.execute(f"ALTER SEQUENCE {table}_id_seq RENAME TO {table}_old_id_seq")
    cur.execute("DROP TRIGGER IF EXISTS aq_message_commit_seq ON aq_message_old")


def _columns(cur, table: str) -> str:
    cur.execute(
        "SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position) "
        "FROM information_schema.columns WHERE table_name = %s",
        [table],
    )
    return cur.fetchone()[0]


def _move_rows(cur) -> None:
    cols = _columns(cur, "aq_message_old")
    cur.execute(f"INSERT INTO aq_message ({cols}) SELECT {cols} FROM aq_message_old")
    cur.execute(
        "INSERT INTO aq_message_consumer (id, attempts, locked_until, lock_token, message_id, "
        "subscriber_id, queue_table_id, in_buffer) "
        "SELECT c.id, c.attempts, c.locked_until, c.lock_token, c.message_id, c.subscriber_id, "
        "m.queue_table_id, m.in_buffer FROM aq_message_consumer_old c "
        "JOIN aq_message_old m ON m.id = c.message_id"
    )
    for table in ("aq_message", "aq_message_consumer"):
        cur.execute(
            f"SELECT setval('{table}_id_seq', greatest(last_value, 1), is_called) "
            f"FROM {table}_old_id_seq"
        )
    cur.execute("DROP TABLE aq_message_consumer_old, aq_message_old")


def partition(apps, schema_editor) -> None:
    from queues.engine.storage import create_storage

    conn = schema_editor.connection
    with conn.cursor() as cur:
        views = _views(cur)
        _set_old_aside(cur)
        cur.execute("CREATE SEQUENCE aq_message_id_seq")
        cur.execute("CREATE SEQUENCE aq_message_consumer_id_seq")
        cur.execute(
            f"CREATE TABLE aq_message ({_id(MESSAGE_COLUMNS, 'aq_message')}, "
            "PRIMARY KEY (id, queue_table_id, in_buffer)) PARTITION BY LIST (queue_table_id)"
        )
        cur.execute(
            MESSAGE_INDEXES.replace(
                "{bulk_cols}", "(queue_id, bulk_job_id, bulk_source_id, queue_table_id, in_buffer)"
            )
        )
        cur.execute(
            f"CREATE TABLE aq_message_consumer ({_id(CONSUMER_COLUMNS, 'aq_message_consumer')}, "
            "queue_table_id bigint NOT NULL, "
            "in_buffer boolean NOT NULL DEFAULT false, PRIMARY KEY (id, queue_table_id, in_buffer), "
            "CONSTRAINT aq_message_consumer_unique "
            "UNIQUE (subscriber_id, message_id, queue_table_id, in_buffer)) "
            "PARTITION BY LIST (queue_table_id)"
        )
        cur.execute(
            "CREATE INDEX aq_message_consumer_message_id ON aq_message_consumer (message_id)"
        )
        cur.execute("ALTER SEQUENCE aq_message_id_seq OWNED BY aq_message.id")
        cur.execute("ALTER SEQUENCE aq_message_consumer_id_seq OWNED BY aq_message_consumer.id")
        cur.execute(COMMIT_SEQ_PARTITIONED + TRIGGER)
        cur.execute("SELECT id FROM queues_queuetable ORDER BY id")
        raw = conn.connection  # psycopg connection, same transaction
        for (qt,) in cur.fetchall():
            create_storage(raw, qt)
        _move_rows(cur)
        _restore(cur, views)


def unpartition(apps, schema_editor) -> None:
    with schema_editor.connection.cursor() as cur:
        views = _views(cur)
        _set_old_aside(cur)
        cur.execute(f"CREATE TABLE aq_message ({_id(MESSAGE_COLUMNS)})")
        cur.execute(
            MESSAGE_INDEXES.replace("{bulk_cols}", "(queue_id, bulk_job_id, bulk_source_id)")
        )
        cur.execute(
            f"CREATE TABLE aq_message_consumer ({_id(CONSUMER_COLUMNS)}"
            ", CONSTRAINT aq_message_consumer_unique UNIQUE (subscriber_id, message_id), "
            "CONSTRAINT aq_message_consumer_message_fk FOREIGN KEY (message_id) "
            "REFERENCES aq_message(id) DEFERRABLE INITIALLY DEFERRED)"
        )
        cur.execute(
            "CREATE INDEX aq_message_consumer_message_id ON aq_message_consumer (message_id)"
        )
        cur.execute(COMMIT_SEQ_PLAIN + TRIGGER)
        cols = _columns(cur, "aq_message")
        cur.execute(f"INSERT INTO aq_message ({cols}) SELECT {cols} FROM aq_message_old")
        cur.execute(
            "INSERT INTO aq_message_consumer (id, attempts, locked_until, lock_token, message_id, "
            "subscriber_id) SELECT id, attempts, locked_until, lock_token, message_id, "
            "subscriber_id FROM aq_message_consumer_old"
        )
        for table in ("aq_message", "aq_message_consumer"):
            cur.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"greatest(last_value, 1), is_called) FROM {table}_old_id_seq"
            )
        # Dropping the partitioned parents drops every queue table's partitions with them.
        cur.execute("DROP TABLE aq_message_consumer_old, aq_message_old")
        _restore(cur, views)


class Migration(migrations.Migration):
    dependencies = [
        ("queues", "0008_delivery_mode_and_message_grouping"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(partition, unpartition)],
            state_operations=[
                migrations.RemoveConstraint(model_name="message", name="aq_message_bulk_key"),
                migrations.AddConstraint(
                    model_name="message",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(
                            ("bulk_job_id__isnull", False), ("original_queue__isnull", True)
                        ),
                        fields=(
                            "queue",
                            "bulk_job_id",
                            "bulk_source_id",
                            "queue_table",
                            "in_buffer",
                        ),
                        name="aq_message_bulk_key",
                    ),
                ),
                migrations.RemoveConstraint(
                    model_name="messageconsumer", name="aq_message_consumer_unique"
                ),
                migrations.AlterField(
                    model_name="messageconsumer",
                    name="message",
                    field=models.ForeignKey(
                        db_constraint=False,
                        on_delete=models.deletion.DO_NOTHING,
                        related_name="consumers",
                        to="queues.message",
                    ),
                ),
                migrations.AddField(
                    model_name="messageconsumer",
                    name="queue_table",
                    field=models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=models.deletion.DO_NOTHING,
                        related_name="+",
                        to="queues.queuetable",
                    ),
                    preserve_default=False,
                ),
                migrations.AddField(
                    model_name="messageconsumer",
                    name="in_buffer",
                    field=models.BooleanField(db_default=False),
                ),
                migrations.AddConstraint(
                    model_name="messageconsumer",
                    constraint=models.UniqueConstraint(
                        fields=("subscriber", "message", "queue_table", "in_buffer"),
                        name="aq_message_consumer_unique",
                    ),
                ),
            ],
        ),
    ]
