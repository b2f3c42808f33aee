"""Shared fixtures. Tests run against a real PostgreSQL (DATABASE_URL) and a real broker.

Fixtures used by more than one folder live here (no conftest imports another); helpers that are
not fixtures live in tests/<folder>/helpers.py."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import Group, User
from django.db.backends.postgresql.operations import DatabaseOperations as PostgresOperations
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from core.choices import Role
from queues import engine
from queues import services as qs
from queues.models import Queue
from tests.api.helpers import Snapshot
from tests.celery.helpers import ARTIFACTS, CeleryProcesses, purge_broker

ROOT = Path(__file__).resolve().parents[1]


def _user(username: str, role: str | None, *, superuser: bool = False) -> User:
    user = User.objects.create_user(username=username, password="pw-" + username)
    if superuser:
        user.is_superuser = user.is_staff = True
        user.save()
    if role:
        # get_or_create: transactional tests flush the tables, data migrations included.
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture
def admin_user(db) -> User:
    return _user("alice", Role.ADMINISTRATOR)


@pytest.fixture
def operator_user(db) -> User:
    return _user("oscar", Role.OPERATOR)


@pytest.fixture
def monitor_user(db) -> User:
    return _user("mona", Role.MONITOR)


@pytest.fixture
def queue_table(admin_user):
    return qs.queue_table_create(user=admin_user, name="QT_ORDERS", sort_order="enq_time")


@pytest.fixture
def queue(admin_user, queue_table):
    return qs.queue_create(user=admin_user, name="ORDERS", queue_table=queue_table)


@pytest.fixture(scope="session")
def spark_cluster():
    """A standalone Spark (one Master, one 2-core Worker) on 127.0.0.1, started on first use.

    Session scope: it costs several seconds to start. Applications still running at the end are
    killed before the JVMs are stopped (tests/spark_cluster.py).
    """
    from tests.spark_cluster import LoopbackSparkCluster

    with LoopbackSparkCluster() as cluster:
        yield cluster


@pytest.fixture
def second_db():
    """The demo's second site (console/demo_site.py): a database next to the test database,
    migrated with its own global name; dropped afterwards. Costs a migrate (about 20 s)."""
    from django.db import connection

    from console import demo_site

    site = demo_site.second_site()
    yield site
    cfg = connection.settings_dict
    with psycopg.connect(
        host=site.host, port=site.port, dbname=cfg["NAME"], user=site.username, autocommit=True
    ) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{site.database}" WITH (FORCE)')


# --- roles and clients (the API, page, rules and gateway suites) ---------------------------------


@pytest.fixture
def role_groups(db) -> None:
    """The role groups come from a data migration; a flush by a transactional test elsewhere may
    have removed them from the test database. Made autouse by the suites that need it."""
    for role in Role.values:
        Group.objects.get_or_create(name=role)


@pytest.fixture
def fast_passwords(settings) -> None:
    """Users are made per test; the production hasher would spend most of the run hashing. Made
    autouse by the suites that need it (not everywhere: a subprocess may check a password)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def roleless_user(db) -> User:
    return User.objects.create_user(username="nora", password="pw-nora")


@pytest.fixture
def token_client() -> Callable[[User | None], APIClient]:
    """An API client authenticated with the user's token (anonymous with ``None``)."""

    def make(user: User | None) -> APIClient:
        client = APIClient()
        client.default_format = "json"  # as applications send it; multipart flattens lists
        if user is not None:
            token, _ = Token.objects.get_or_create(user=user)
            client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client

    return make


@pytest.fixture
def admin_api(admin_user, token_client) -> APIClient:
    return token_client(admin_user)


@pytest.fixture
def operator_api(operator_user, token_client) -> APIClient:
    return token_client(operator_user)


@pytest.fixture
def monitor_api(monitor_user, token_client) -> APIClient:
    return token_client(monitor_user)


def _logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def admin_client(admin_user) -> Client:
    return _logged_in(admin_user)


@pytest.fixture
def operator_client(operator_user) -> Client:
    return _logged_in(operator_user)


@pytest.fixture
def monitor_client(monitor_user) -> Client:
    return _logged_in(monitor_user)


# --- queue topologies (the API and page suites) -------------------------------------------------


@pytest.fixture
def enqueue_some(admin_user) -> Callable[..., list[int]]:
    """Enqueue messages through the service (as an administrator) and return their ids."""

    def enqueue(queue: Queue, *payloads: object, **fields: object) -> list[int]:
        msgs = [engine.NewMessage(payload=p, **fields) for p in payloads]  # type: ignore[arg-type]
        return qs.message_enqueue(user=admin_user, queue=queue, messages=msgs)

    return enqueue


@pytest.fixture
def typed_queue(admin_user) -> Queue:
    """A queue whose table takes ORDER payloads validated by a JSON Schema."""
    schema = {
        "type": "object",
        "required": ["order_id", "items"],
        "properties": {
            "order_id": {"type": "integer"},
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["sku", "qty"],
                    "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
                },
            },
        },
    }
    qt = qs.queue_table_create(
        user=admin_user,
        name="QT_TYPED",
        sort_order="enq_time",
        payload_type="ORDER",
        payload_schema=schema,
    )
    return qs.queue_create(user=admin_user, name="TYPED_ORDERS", queue_table=qt)


@pytest.fixture
def multi_queue(admin_user) -> Queue:
    """A multi-consumer queue with subscribers BILLING and SHIPPING."""
    qt = qs.queue_table_create(
        user=admin_user, name="QT_MULTI", sort_order="enq_time", multiple_consumers=True
    )
    q = qs.queue_create(user=admin_user, name="EVENTS", queue_table=qt)
    qs.subscriber_add(user=admin_user, queue=q, name="BILLING")
    qs.subscriber_add(user=admin_user, queue=q, name="SHIPPING")
    return q


@pytest.fixture
def expired_message(admin_user, queue_table) -> tuple[Queue, Queue, int]:
    """A message that failed its only try on RETRY_ONCE and sits in the exception queue.
    Returns (source queue, exception queue, message id)."""
    q = qs.queue_create(user=admin_user, name="RETRY_ONCE", queue_table=queue_table, max_retries=0)
    [mid] = qs.message_enqueue(
        user=admin_user, queue=q, messages=[engine.NewMessage(payload={"n": 1})]
    )
    [got] = qs.message_dequeue(
        user=admin_user, queue=q, request=qs.DequeueRequest(mode=engine.LOCKED)
    )
    qs.message_release(
        user=admin_user, queue=q, msgid=got.id, lock_token=str(got.lock_token), failed=True
    )
    q.refresh_from_db()
    return q, q.exception_queue, mid


@pytest.fixture
def snapshot() -> Callable[[], Snapshot]:
    return Snapshot


@pytest.fixture
def topology(admin_user, operator_user, queue, multi_queue, expired_message, enqueue_some) -> dict:
    """Something of every kind for the role checks: ORDERS with two READY messages, EVENTS with
    subscribers, an agent used by oscar, a privilege, and a message in an exception queue."""
    from queues.models import Subscriber

    enqueue_some(queue, {"n": 1}, {"n": 2})
    agent = qs.agent_create(user=admin_user, name="AGENT_OSCAR")
    qs.agent_enable_db_access(user=admin_user, agent=agent, db_user=operator_user)
    grant = qs.queue_privilege_grant(
        user=admin_user, queue=queue, grantee=operator_user, privilege="ENQUEUE"
    )
    _source, exq, mid = expired_message
    return {
        "subscriber": Subscriber.objects.get(queue=multi_queue, name="BILLING").pk,
        "privilege": grant.pk,
        "exception_queue": exq.name,
        "expired_id": mid,
        "user": operator_user.username,
    }


# --- propagations (the jobs, API, page and Celery suites) ----------------------------------------


@pytest.fixture
def fast_windows(settings) -> None:
    """Short slices and back-off so a run returns soon after its source goes idle."""
    settings.AQ_PROPAGATION = {
        **settings.AQ_PROPAGATION,
        "SLICE_S": 0.3,
        "HEARTBEAT_S": 0.1,
        "BACKOFF_MIN_S": 0.01,
        "BACKOFF_MAX_S": 0.05,
    }


@pytest.fixture
def mc_table(admin_user):
    return qs.queue_table_create(
        user=admin_user, name="QT_MC", sort_order="enq_time", multiple_consumers=True
    )


@pytest.fixture
def sc_table(admin_user):
    return qs.queue_table_create(user=admin_user, name="QT_SC", sort_order="enq_time")


@pytest.fixture
def make_queue(admin_user) -> Callable[..., Queue]:
    def make(name: str, table: Any) -> Queue:
        return qs.queue_create(user=admin_user, name=name, queue_table=table)

    return make


@pytest.fixture
def rule_set(admin_user) -> Callable[..., Any]:
    from rules import services as rs

    def make(name: str, *conditions: str) -> Any:
        s = rs.rule_set_create(user=admin_user, name=name)
        for i, cond in enumerate(conditions):
            r = rs.rule_create(user=admin_user, name=f"{name}_R{i}", condition=cond)
            rs.rule_set_add_rule(user=admin_user, rule_set=s, rule=r)
        return s

    return make


@pytest.fixture
def celery_procs(request, settings, transactional_db, tmp_path) -> Iterator[CeleryProcesses]:
    url = django_settings.CELERY_BROKER_URL
    if url.startswith("filesystem://"):
        pytest.skip("set CELERY_BROKER_URL to a real broker (the test script uses Redis)")
    purge_broker(url)
    artifacts = ARTIFACTS / re.sub(r"[^\w.-]+", "_", request.node.name)
    artifacts.mkdir(parents=True, exist_ok=True)
    for old in artifacts.glob("*.log"):
        old.unlink()
    procs = CeleryProcesses(settings, artifacts, tmp_path)
    try:
        yield procs
    finally:
        # Before pytest-django flushes the tables: no worker may still be writing to them.
        procs.stop_all()
        purge_broker(url)


# --- the condition language: a psycopg session and a local Spark (the rules and jobs suites) -----


def _test_db_conninfo() -> str:
    """A libpq conninfo for the database Django's connection points at (the test database once
    it is set up), for the sessions the tests open beside Django's."""
    from django.db import connection

    s = connection.settings_dict
    return psycopg.conninfo.make_conninfo(
        dbname=s["NAME"],
        user=s["USER"] or None,
        password=s["PASSWORD"] or None,
        host=s["HOST"] or None,
        port=str(s["PORT"]) if s["PORT"] else None,
    )


@pytest.fixture(scope="session")
def rules_pg(django_db_setup, django_db_blocker) -> Iterator[psycopg.Connection]:
    """An autocommit connection to the migrated test database, with a temporary table shaped
    like the queue's ``aq_message`` (kind, type_name, payload) for batches of messages."""
    with django_db_blocker.unblock():
        conninfo = _test_db_conninfo()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(
            "CREATE TEMP TABLE rule_msgs (id int PRIMARY KEY, kind varchar(8) NOT NULL, "
            "type_name varchar(128) NOT NULL DEFAULT '', payload jsonb)"
        )
        yield conn


@pytest.fixture(scope="session")
def spark():
    """One local Spark for the whole session; its Python workers import ``rules`` from here."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *paths])
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("aq-console rules tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
    )
    from django.conf import settings as django_settings

    # The same JVM options as the jobs' drivers get (AQ_SPARK_JAVA_OPTIONS).
    if java_options := django_settings.AQ_SPARK["JAVA_OPTIONS"].strip():
        builder = builder.config("spark.driver.extraJavaOptions", java_options)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _close_buffered_connections() -> Iterator[None]:
    """Buffered enqueues and dequeues run on the engine's own connection per thread: close it, so
    the test database can be dropped."""
    yield
    from queues.engine import buffered

    buffered.close_connections()


# --- sites (the sites and browser suites) --------------------------------------------------------


@pytest.fixture(scope="session")
def site() -> Iterator[Any]:
    """A private second PostgreSQL on a free loopback port with site_b (a migrated site), site_c
    and plain (no schema): tests/sites/helpers.py. Started once, on first use."""
    pytest.importorskip("pgserver")
    from tests.sites.helpers import site_server

    with site_server() as server:
        yield server


# --- the flush after each transactional test -----------------------------------------------------

# Django empties every table after a transactional test with one TRUNCATE of all of them (56
# tables, with their indexes, TOAST tables and every queue table's partitions): each gets new
# files, which cost 0.5-1.3 s per test on these machines for tables that are nearly all empty.
# Here a table with a few rows is emptied by DELETE (foreign keys not checked: every table is
# being emptied, so none can be left dangling), a bigger one by TRUNCATE, an empty one not at
# all: the same end state, and the dead rows the DELETEs leave are vacuumed below. A session that
# may not switch the checks off (not a superuser) truncates every table with rows, CASCADE.
_FLUSH_NON_EMPTY = """
DO $flush$
DECLARE
    t text;
    has_rows boolean;
    many boolean;
    superuser boolean := (SELECT rolsuper FROM pg_roles WHERE rolname = current_user);
    truncate_tables text[] := '{{}}';
BEGIN
    IF superuser THEN
        PERFORM set_config('session_replication_role', 'replica', true);
    END IF;
    FOREACH t IN ARRAY ARRAY[{tables}]::text[] LOOP
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I), EXISTS (SELECT 1 FROM %I OFFSET 500)',
                       t, t) INTO has_rows, many;
        IF has_rows AND superuser AND NOT many THEN
            EXECUTE format('DELETE FROM %I', t);
        ELSIF has_rows THEN
            truncate_tables := truncate_tables || quote_ident(t);
        END IF;
    END LOOP;
    IF cardinality(truncate_tables) > 0 THEN
        EXECUTE 'TRUNCATE ' || array_to_string(truncate_tables, ', ') || ' CASCADE';
    END IF;
    IF superuser THEN
        PERFORM set_config('session_replication_role', 'origin', true);
    END IF;
END
$flush$
"""
_django_sql_flush = PostgresOperations.sql_flush


def _sql_flush_non_empty(
    self: PostgresOperations,
    style: Any,
    tables: Sequence[str],
    *,
    reset_sequences: bool = False,
    allow_cascade: bool = False,
) -> list[str]:
    if reset_sequences or not tables:
        return _django_sql_flush(
            self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
        )
    literals = ", ".join("'" + t.replace("'", "''") + "'" for t in tables)
    return [_FLUSH_NON_EMPTY.format(tables=literals)]


PostgresOperations.sql_flush = _sql_flush_non_empty  # type: ignore[method-assign]


# --- dead rows ------------------------------------------------------------------------------------

# Every queue table is six tables and their indexes, created and dropped hundreds of times a run,
# and the flush above DELETEs the few rows of small tables after each transactional test. With
# autovacuum off, as on these machines, the dead rows piled up (a million in pg_attribute by the
# middle of a run) and every catalog scan grew a hundredfold. VACUUM the tables, catalogs
# included, that hold many dead rows, every few tests.
DEAD_CHECK_EVERY = 10  # tests
DEAD_LIMIT = 5_000  # dead rows in one table


def _vacuum_dead_rows() -> None:
    from django.db import connection

    name = connection.settings_dict["NAME"]
    if not name or name != django_settings.DATABASES["default"].get("TEST", {}).get("NAME"):
        return  # the test database is not set up in this session (no database test ran yet)
    try:
        with psycopg.connect(_test_db_conninfo(), autocommit=True) as conn:
            for schema, table in conn.execute(
                "SELECT schemaname, relname FROM pg_stat_all_tables "
                "WHERE schemaname IN ('pg_catalog', 'public') AND n_dead_tup > %s",
                (DEAD_LIMIT,),
            ).fetchall():
                # A queue table's partition may have been dropped since.
                with contextlib.suppress(psycopg.errors.UndefinedTable):
                    conn.execute(f'VACUUM "{schema}"."{table}"')
    except psycopg.OperationalError:
        return  # the database is being dropped or was never made: nothing to keep


_tests_since_check = 0


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    global _tests_since_check
    _tests_since_check += 1
    if _tests_since_check >= DEAD_CHECK_EVERY:
        _tests_since_check = 0
        _vacuum_dead_rows()
