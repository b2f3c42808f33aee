"""NEXT_MESSAGE is the default navigation (spec queues §4.7: "the default in PL/SQL and OCI"): a
dequeue that names no navigation continues after the position it is given, and without a position
it starts at the head, as the first NEXT_MESSAGE dequeue of an Oracle session does."""

from __future__ import annotations

from django.db import transaction

from queues import engine, services

from .helpers import browse, payloads, put, take


def test_the_defaults_of_the_engine_and_the_service_are_next_message():
    assert services.DequeueRequest().navigation == engine.NEXT_MESSAGE
    default = engine.dequeue.__kwdefaults__["navigation"]
    assert default == engine.NEXT_MESSAGE


def test_without_a_navigation_a_dequeue_continues_after_the_cursor(admin_user, queue):
    put(queue, *"abcd", user=admin_user)
    first = take(queue, user=admin_user, mode=engine.BROWSE, batch=2)
    after = take(queue, user=admin_user, batch=2, cursor=first[-1].position.token())

    assert payloads(first) == ["a", "b"]
    assert payloads(after) == ["c", "d"]  # removed, and a, b are still there
    assert payloads(take(queue, user=admin_user, mode=engine.BROWSE, batch=10)) == ["a", "b"]


def test_without_a_cursor_next_message_starts_at_the_head(admin_user, queue):
    put(queue, *"abc", user=admin_user)
    assert payloads(take(queue, user=admin_user, mode=engine.BROWSE)) == ["a"]
    assert payloads(take(queue, user=admin_user)) == ["a"]


def test_the_engine_continues_after_a_position_unless_told_first_message(admin_user, queue):
    put(queue, *"abc", user=admin_user)
    with transaction.atomic():
        conn = services.raw_connection()
        [a] = browse(conn, queue, batch=1)
        assert payloads(browse(conn, queue, after=a.position)) == ["b", "c"]
        first = browse(conn, queue, after=a.position, navigation=engine.FIRST_MESSAGE)
        assert payloads(first) == ["a", "b", "c"]
