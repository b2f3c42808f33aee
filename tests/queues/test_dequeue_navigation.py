"""FIRST_MESSAGE starts at the head of the queue; NEXT_MESSAGE continues after a position."""

from __future__ import annotations

import pytest

from queues import engine

from .helpers import make_queue, payloads, put, take


def browse_page(queue, user, cursor=None, batch=2):
    nav = engine.NEXT_MESSAGE if cursor else engine.FIRST_MESSAGE
    return take(queue, user=user, mode=engine.BROWSE, navigation=nav, cursor=cursor, batch=batch)


def test_next_message_pages_through_a_queue_with_positions(admin_user, queue):
    put(queue, *"abcde", user=admin_user)
    pages, cursor = [], None
    while page := browse_page(queue, admin_user, cursor):
        pages.append(payloads(page))
        cursor = page[-1].position.token()
    assert pages == [["a", "b"], ["c", "d"], ["e"]]


def test_next_message_pages_follow_priority_order(admin_user):
    queue = make_queue(admin_user, "PRI", sort_order="priority")
    for p, pri in (("low", 9), ("high", 1), ("mid", 5), ("high2", 1)):
        put(queue, p, user=admin_user, priority=pri)
    pages, cursor = [], None
    while page := browse_page(queue, admin_user, cursor):
        pages.append(payloads(page))
        cursor = page[-1].position.token()
    assert pages == [["high", "high2"], ["mid", "low"]]


def test_first_message_restarts_from_the_head_even_with_a_cursor(admin_user, queue):
    put(queue, *"abc", user=admin_user)
    [first] = take(queue, user=admin_user, mode=engine.BROWSE)
    again = take(
        queue,
        user=admin_user,
        mode=engine.BROWSE,
        navigation=engine.FIRST_MESSAGE,
        cursor=first.position.token(),
    )
    assert payloads(again) == ["a"]


def test_next_message_remove_takes_the_message_after_the_position(admin_user, queue):
    put(queue, *"abc", user=admin_user)
    [a] = take(queue, user=admin_user, mode=engine.BROWSE)
    [b] = take(queue, user=admin_user, navigation=engine.NEXT_MESSAGE, cursor=a.position.token())
    assert b.payload == "b"
    assert payloads(take(queue, user=admin_user, mode=engine.BROWSE, batch=10)) == ["a", "c"]


def test_a_position_parses_back_from_its_token(admin_user, queue):
    put(queue, "a", user=admin_user)
    [a] = take(queue, user=admin_user, mode=engine.BROWSE)
    assert engine.Position.parse(a.position.token()) == a.position


def test_a_malformed_cursor_is_refused_naming_the_field(admin_user, queue):
    with pytest.raises(engine.InvalidMessage) as err:
        take(
            queue,
            user=admin_user,
            mode=engine.BROWSE,
            navigation=engine.NEXT_MESSAGE,
            cursor="not-a-position",
        )
    assert err.value.field == "cursor"
