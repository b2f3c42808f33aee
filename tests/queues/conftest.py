from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User

from queues import engine


@pytest.fixture(autouse=True)
def _queues_setup(role_groups, fast_passwords) -> None:
    """Role groups present (a flush by an earlier transactional test may have removed them),
    cheap password hashing for the shared user fixtures."""


@pytest.fixture(autouse=True)
def _close_thread_listener() -> Iterator[None]:
    """A wait opens a LISTEN connection per thread; close it so the test database can be dropped."""
    yield
    listener = getattr(engine._local, "listener", None)
    if listener is not None:
        listener.close()
        engine._local.listener = None


@pytest.fixture
def superuser(db) -> User:
    return User.objects.create_superuser(username="root", password="pw-root")


@pytest.fixture
def plain_operator(db) -> User:
    """A second operator, for secure-queue checks against someone who is not the owner."""
    from django.contrib.auth.models import Group

    from core.choices import Role

    user = User.objects.create_user(username="olga", password="pw-olga")
    user.groups.add(Group.objects.get(name=Role.OPERATOR))
    return user
