"""ON_COMMIT enqueues join the caller's transaction; IMMEDIATE ones commit on their own at once."""

from __future__ import annotations

import pytest
from django.db import transaction

from queues import services
from queues.choices import Visibility

from .helpers import LIVE, browse, make_queue, msg, raw


class Rollback(Exception):
    pass


@pytest.fixture(params=["enq_time", "commit_time"])
def live_queue(request, admin_user):
    return make_queue(admin_user, "VIS", sort_order=request.param)


@LIVE
def test_on_commit_messages_are_invisible_to_another_session_until_the_caller_commits(
    admin_user, live_queue
):
    with raw() as other:
        with transaction.atomic():
            services.message_enqueue(
                user=admin_user, queue=live_queue, messages=[msg("a"), msg("b")]
            )
            assert browse(other, live_queue) == []
            other.commit()
        assert [m.payload for m in browse(other, live_queue)] == ["a", "b"]


@LIVE
def test_on_commit_messages_vanish_when_the_caller_rolls_back(admin_user, live_queue):
    with pytest.raises(Rollback), transaction.atomic():
        services.message_enqueue(user=admin_user, queue=live_queue, messages=[msg("a")])
        raise Rollback
    with raw() as other:
        assert browse(other, live_queue) == []


@LIVE
def test_immediate_messages_are_visible_at_once_and_survive_the_callers_rollback(
    admin_user, live_queue
):
    with raw() as other:
        with pytest.raises(Rollback), transaction.atomic():
            services.message_enqueue(
                user=admin_user,
                queue=live_queue,
                messages=[msg("now")],
                visibility=Visibility.IMMEDIATE,
            )
            assert [m.payload for m in browse(other, live_queue)] == ["now"]
            other.commit()
            raise Rollback
        assert [m.payload for m in browse(other, live_queue)] == ["now"]


@LIVE
def test_an_unknown_visibility_is_refused_naming_the_field(admin_user, live_queue):
    from core.exceptions import DomainError

    with pytest.raises(DomainError) as err:
        services.message_enqueue(
            user=admin_user, queue=live_queue, messages=[msg(1)], visibility="LATER"
        )
    assert err.value.field == "visibility"
    with raw() as other:
        assert browse(other, live_queue) == []
