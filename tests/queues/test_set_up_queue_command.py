"""``manage.py streamsadm SET_UP_QUEUE``: the same service from the shell; a refusal exits 1 with
an ORA-style line naming the parameter, bad usage exits 2."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.contrib.auth.models import User
from django.db import connection

from queues.models import QueuePrivilege, QueueTable
from tests.conftest import ROOT

from .helpers import LIVE


def _env() -> dict[str, str]:
    """The test database for the child process (a live test: the data is committed)."""
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    url = f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    return {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "console.settings"}


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "streamsadm", *args],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


@LIVE
def test_set_up_queue_from_the_command_line(db):
    User.objects.create_user(username="hr", password="pw-hr")
    done = _run(
        "DBMS_STREAMS_ADM.SET_UP_QUEUE",
        "--queue_table",
        "CLI_QT",
        "--queue-name=CLI_Q",
        "--queue_user",
        "hr",
        "--storage_clause",
        "NULL",
    )
    assert done.returncode == 0, done.stderr
    assert "queue table CLI_QT (created, commit_time, TRANSACTIONAL)" in done.stdout
    assert "agent HR (created)" in done.stdout
    assert QueueTable.objects.get(name="CLI_QT").secure
    assert set(QueuePrivilege.objects.values_list("privilege", flat=True)) == {"ENQUEUE", "DEQUEUE"}


@LIVE
def test_set_up_queue_for_a_missing_user_exits_1_naming_queue_user(db):
    done = _run("set_up_queue", "--queue_table", "CLI_QT", "--queue_user", "nobody")
    assert done.returncode == 1
    assert "ORA-20000: DBMS_STREAMS_ADM.SET_UP_QUEUE(queue_user)" in done.stderr
    assert not QueueTable.objects.filter(name="CLI_QT").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [(["ADD_TABLE_RULES"], "Unknown procedure"), (["set_up_queue", "--owner", "x"], "--owner")],
)
@pytest.mark.django_db
def test_bad_usage_exits_2(args, says):
    done = _run(*args)
    assert done.returncode == 2 and says in done.stderr
