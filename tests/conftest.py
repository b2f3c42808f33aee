"""Shared fixtures. Tests run against a real PostgreSQL (DATABASE_URL) and a real broker."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from core.choices import Role


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
    from queues import services

    return services.queue_table_create(user=admin_user, name="QT_ORDERS", sort_order="enq_time")


@pytest.fixture
def queue(admin_user, queue_table):
    from queues import services

    return services.queue_create(user=admin_user, name="ORDERS", queue_table=queue_table)


@pytest.fixture(scope="session")
def spark_cluster():
    """A standalone Spark (one Master, one 2-core Worker) on 127.0.0.1, started on first use.

    Session scope: it costs several seconds to start. Applications still running at the end are
    killed before the JVMs are stopped (tests/spark_cluster.py).
    """
    from tests.spark_cluster import LoopbackSparkCluster

    with LoopbackSparkCluster() as cluster:
        yield cluster
