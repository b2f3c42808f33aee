"""A request that fails because the database cannot be reached answers 503 with Retry-After
(tests/restarts proves it with a real server stopped); a deadlock, a serialization failure or a
timeout is a fault and stays a 500. Decided from the error class psycopg gives, also through
Django's wrapper (the queue engine raises psycopg's own errors from its raw connections)."""

from __future__ import annotations

import psycopg
import pytest
from django import db
from psycopg import errors

from core.views import _database_away


def _wrapped(cause: BaseException) -> db.Error:
    try:
        raise db.OperationalError(str(cause)) from cause
    except db.OperationalError as exc:
        return exc


@pytest.mark.parametrize(
    "exc",
    [
        psycopg.OperationalError("connection refused"),  # no server answer: no SQLSTATE
        errors.AdminShutdown("terminating connection due to administrator command"),
        errors.CannotConnectNow("the database system is starting up"),
        errors.ConnectionFailure("connection failure"),
        db.InterfaceError("connection already closed"),
    ],
)
def test_a_connection_that_is_gone_is_the_database_away(exc):
    assert _database_away(exc)
    if not isinstance(exc, db.InterfaceError):
        assert _database_away(_wrapped(exc))


@pytest.mark.parametrize(
    "exc",
    [
        errors.DeadlockDetected("deadlock detected"),
        errors.SerializationFailure("could not serialize access"),
        errors.QueryCanceled("canceling statement due to statement timeout"),
        errors.LockNotAvailable("could not obtain lock"),
        errors.DiskFull("could not extend file"),
        ValueError("a bug"),
    ],
)
def test_a_fault_of_a_working_database_is_not(exc):
    assert not _database_away(exc)
    assert not _database_away(_wrapped(exc))
