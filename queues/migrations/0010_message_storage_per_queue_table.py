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

TABLES = ("aq_message", "aq_message_consumer")
PARTITION_KEYS = ("queue_table_id", "in_buffer")

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


def _schema(cur) -> dict[str, dict[str, list[tuple[str, str]]]]:
    """The tables' secondary indexes and constraints as they are now, read from the catalogue
    (so an index or foreign key added by an earlier migration is carried over, not forgotten):
    per table, ``indexes`` (name, definition) not backing a constraint, ``unique`` and ``foreign``
    constraints (name, definition; foreign keys with the table they reference)."""
    out: dict[str, dict[str, list[tuple[str, str]]]] = {}
    for table in TABLES:
        cur.execute(
            "SELECT i.relname, pg_get_indexdef(i.oid) FROM pg_index x "
            "JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = %s::regclass "
            "AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid "
            "AND c.conrelid = x.indrelid) ORDER BY i.relname",
            [table],
        )
        indexes = cur.fetchall()
        cur.execute(
            "SELECT conname, pg_get_constraintdef(oid), contype, confrelid::regclass::text "
            "FROM pg_constraint WHERE conrelid = %s::regclass AND contype IN ('u', 'f') "
            "ORDER BY conname",
            [table],
        )
        rows = cur.fetchall()
        out[table] = {
            "indexes": indexes,
            "unique": [(n, d) for n, d, t, _ in rows if t == "u"],
            # The consumer copies' link to their message is the engine's, not a foreign key.
            "foreign": [(n, d) for n, d, t, ref in rows if t == "f" and ref not in TABLES],
        }
    return out


def _keys(definition: str, *, partitioned: bool) -> str:
    """A unique index's or constraint's column list with the partition keys added (a
    partitioned table's unique keys must hold them) or taken away again."""
    start = definition.index("(") + 1
    depth, end = 1, start
    while depth:
        depth += {"(": 1, ")": -1}.get(definition[end], 0)
        end += 1
    cols = [c.strip() for c in definition[start : end - 1].split(",")]
    cols = [c for c in cols if c not in PARTITION_KEYS]
    if partitioned:
        cols += list(PARTITION_KEYS)
    return f"{definition[:start]}{', '.join(cols)}{definition[end - 1 :]}"


def _rebuild(cur, schema, *, partitioned: bool) -> None:
    """Indexes and constraints of the new tables, from the old ones' definitions."""
    for table in TABLES:
        for _name, definition in schema[table]["indexes"]:
            if definition.startswith("CREATE UNIQUE"):
                head, tail = definition.split(" USING ", 1)
                definition = f"{head} USING {_keys(tail, partitioned=partitioned)}"
            cur.execute(definition)
        for name, definition in schema[table]["unique"]:
            cur.execute(
                f"ALTER TABLE {table} ADD CONSTRAINT {name} "
                + _keys(definition, partitioned=partitioned)
            )
        for name, definition in schema[table]["foreign"]:
            cur.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition}")


def _move_rows(cur) -> None:
    cols = _columns(cur, "aq_message_old")
    cur.execute(f"INSERT INTO aq_message ({cols}) SELECT {cols} FROM aq_message_old")
    cols = _columns(cur, "aq_message_consumer_old")
    cur.execute(
        f"INSERT INTO aq_message_consumer ({cols}, queue_table_id, in_buffer) "
        f"SELECT {', '.join('c.' + c for c in cols.split(', '))}, m.queue_table_id, m.in_buffer "
        "FROM aq_message_consumer_old c JOIN aq_message_old m ON m.id = c.message_id"
    )
    for table in TABLES:
        cur.execute(
            f"SELECT setval('{table}_id_seq', greatest(last_value, 1), is_called) "
            f"FROM {table}_old_id_seq"
        )
    cur.execute("DROP TABLE aq_message_consumer_old, aq_message_old")


LIKE = "LIKE {0}_old INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE"


def partition(apps, schema_editor) -> None:
    from queues.engine.storage import create_storage

    conn = schema_editor.connection
    with conn.cursor() as cur:
        views = _views(cur)
        schema = _schema(cur)
        _set_old_aside(cur)
        cur.execute(
            f"CREATE TABLE aq_message ({LIKE.format('aq_message')}) "
            "PARTITION BY LIST (queue_table_id)"
        )
        cur.execute(
            f"CREATE TABLE aq_message_consumer ({LIKE.format('aq_message_consumer')}, "
            "queue_table_id bigint NOT NULL, in_buffer boolean NOT NULL DEFAULT false) "
            "PARTITION BY LIST (queue_table_id)"
        )
        for table in TABLES:
            # PostgreSQL 15 has no identity column on a partitioned table: an owned sequence.
            cur.execute(f"CREATE SEQUENCE {table}_id_seq OWNED BY {table}.id")
            cur.execute(f"ALTER TABLE {table} ALTER id SET DEFAULT nextval('{table}_id_seq')")
            cur.execute(
                f"ALTER TABLE {table} ADD CONSTRAINT {table}_pkey "
                "PRIMARY KEY (id, queue_table_id, in_buffer)"
            )
        _rebuild(cur, schema, partitioned=True)
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
        schema = _schema(cur)
        _set_old_aside(cur)
        for table in TABLES:
            cur.execute(f"CREATE TABLE {table} ({LIKE.format(table)})")
        cur.execute(
            "ALTER TABLE aq_message_consumer DROP COLUMN queue_table_id, DROP COLUMN in_buffer"
        )
        for table in TABLES:
            cur.execute(
                f"ALTER TABLE {table} ALTER id DROP DEFAULT, "
                "ALTER id ADD GENERATED BY DEFAULT AS IDENTITY, "
                f"ADD CONSTRAINT {table}_pkey PRIMARY KEY (id)"
            )
        _rebuild(cur, schema, partitioned=False)
        cur.execute(
            "ALTER TABLE aq_message_consumer ADD CONSTRAINT aq_message_consumer_message_fk "
            "FOREIGN KEY (message_id) REFERENCES aq_message(id) DEFERRABLE INITIALLY DEFERRED"
        )
        cur.execute(COMMIT_SEQ_PLAIN + TRIGGER)
        cols = _columns(cur, "aq_message")
        cur.execute(f"INSERT INTO aq_message ({cols}) SELECT {cols} FROM aq_message_old")
        cols = _columns(cur, "aq_message_consumer")
        cur.execute(
            f"INSERT INTO aq_message_consumer ({cols}) SELECT {cols} FROM aq_message_consumer_old"
        )
        for table in TABLES:
            cur.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"greatest(last_value, 1), is_called) FROM {table}_old_id_seq"
            )
        # Dropping the partitioned parents drops every queue table's partitions with them.
        cur.execute("DROP TABLE aq_message_consumer_old, aq_message_old")
        _restore(cur, views)


class Migration(migrations.Migration):
    dependencies = [
        ("queues", "0009_message_group_lease"),
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
