"""Session fixtures of the compiler tests: a psycopg connection to the test database (with the
``aq_rule_*`` functions of the migrations) and one local Spark, both started once."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def rules_pg(django_db_setup, django_db_blocker) -> Iterator[psycopg.Connection]:
    """An autocommit connection to the migrated test database, with a temporary table shaped
    like the queue's ``aq_message`` (kind, type_name, payload) for batches of messages."""
    with django_db_blocker.unblock():
        from django.db import connection

        s = connection.settings_dict
        conninfo = psycopg.conninfo.make_conninfo(
            dbname=s["NAME"],
            user=s["USER"] or None,
            password=s["PASSWORD"] or None,
            host=s["HOST"] or None,
            port=str(s["PORT"]) if s["PORT"] else None,
        )
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
    session = (
        SparkSession.builder.master("local[2]")
        .appName("aq-console rules tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
