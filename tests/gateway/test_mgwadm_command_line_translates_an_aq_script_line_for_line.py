"""``python manage.py mgwadm``: a DBMS_MGWADM script becomes one command line per call (the
worked example of docs/gateway/mgwadm.md), and the MGW_* views show each step.

Transactional: one step runs as a real subprocess against the test database, which sees only
committed rows."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from gateway import services
from gateway.models import MgwAmqpLink, MgwForeignQueue, MgwJob, MgwLink

ROOT = Path(__file__).resolve().parents[2]

# The PL/SQL script, call for call (docs/gateway/mgwadm.md, "Worked example").
SCRIPT = [
    # DBMS_MGWADM.CREATE_MSGSYSTEM_LINK(linkname => 'rmq', agent_name => 'DEFAULT_AGENT',
    #   properties => <AMQP 127.0.0.1:5672 guest/guest>, comment => 'RabbitMQ');
    [
        "create_msgsystem_link",
        "--linkname",
        "rmq",
        "--agent_name",
        "DEFAULT_AGENT",
        "--properties",
        "link_type=AMQP",
        "--properties",
        "host=127.0.0.1",
        "--properties",
        "port=5672",
        "--properties",
        "username=guest",
        "--properties",
        "password=guest",
        "--comment",
        "RabbitMQ",
    ],
    # DBMS_MGWADM.REGISTER_FOREIGN_QUEUE(name => 'orders_out', linkname => 'rmq',
    #   provider_queue => 'orders.out', domain => DBMS_MGWADM.DOMAIN_QUEUE);
    [
        "REGISTER_FOREIGN_QUEUE",
        "--name",
        "orders_out",
        "--linkname",
        "rmq",
        "--provider-queue",
        "orders.out",
        "--domain",
        "DOMAIN_QUEUE",
    ],
    # DBMS_MGWADM.CREATE_JOB(job_name => 'job_out',
    #   propagation_type => DBMS_MGWADM.OUTBOUND_PROPAGATION, source => 'aqadmin.orders',
    #   destination => 'orders_out@rmq', poll_interval => 2, comments => 'to the shop');
    [
        "CREATE_JOB",
        "--job_name",
        "job_out",
        "--propagation_type",
        "OUTBOUND_PROPAGATION",
        "--source",
        "aqadmin.orders",
        "--destination",
        "orders_out@rmq",
        "--poll_interval",
        "2",
        "--comments",
        "to the shop",
    ],
    # DBMS_MGWADM.ALTER_JOB(job_name => 'job_out', rule => ':msg.amount >= 1000',
    #   poll_interval => 5, options => SYS.MGW_PROPERTIES(SYS.MGW_PROPERTY('MsgBatchSize', '10')));
    [
        "alter_job",
        "--job_name=job_out",
        "--rule",
        ":msg.amount >= 1000",
        "--poll_interval",
        "5",
        "--options",
        "MsgBatchSize=10",
    ],
    ["DISABLE_JOB", "--job_name", "job_out"],  # DBMS_MGWADM.DISABLE_JOB('job_out');
    ["ENABLE_JOB", "--job_name", "job_out"],  # DBMS_MGWADM.ENABLE_JOB('job_out');
    ["RESET_JOB", "--job_name", "job_out"],  # DBMS_MGWADM.RESET_JOB('job_out');
    # DBMS_MGWADM.REMOVE_JOB('job_out', DBMS_MGWADM.FORCE);
    ["REMOVE_JOB", "--job_name", "job_out", "--force", "FORCE"],
    # DBMS_MGWADM.UNREGISTER_FOREIGN_QUEUE('orders_out', 'rmq');
    ["UNREGISTER_FOREIGN_QUEUE", "--name", "orders_out", "--linkname", "rmq"],
    ["REMOVE_MSGSYSTEM_LINK", "--linkname", "rmq"],  # DBMS_MGWADM.REMOVE_MSGSYSTEM_LINK('rmq');
]

SUBPROCESS_STEP = 2  # CREATE_JOB runs as `python manage.py mgwadm …`


def _job() -> dict[str, object]:
    row = MgwJob.objects.get(job_name="JOB_OUT")
    return {
        f: getattr(row, f)
        for f in (
            "propagation_type",
            "source",
            "destination",
            "enabled",
            "rule",
            "poll_interval",
            "options",
            "comments",
            "status",
            "failures",
            "prop_style",
        )
    }


def _expected_views(step: int) -> None:
    """What the MGW_* views show after SCRIPT[step]."""
    links = list(MgwLink.objects.values_list("link_name", "link_type", "agent_name"))
    queues = list(
        MgwForeignQueue.objects.values_list("name", "link_name", "provider_queue", "domain")
    )
    jobs = MgwJob.objects.filter(job_name="JOB_OUT")
    if step <= 8:
        assert links == [("RMQ", "AMQP", "DEFAULT_AGENT")]
        amqp = MgwAmqpLink.objects.get(link_name="RMQ")
        assert (amqp.host, amqp.port, amqp.username, amqp.link_comment) == (
            "127.0.0.1",
            5672,
            "guest",
            "RabbitMQ",
        )
    else:
        assert links == []
    if 1 <= step <= 7:
        assert queues == [("ORDERS_OUT", "RMQ", "orders.out", "QUEUE")]
    else:
        assert queues == []
    base = {
        "propagation_type": "OUTBOUND",
        "source": "ORDERS",
        "destination": "ORDERS_OUT@RMQ",
        "enabled": "TRUE",
        "rule": None,
        "poll_interval": 2.0,
        "options": None,
        "comments": "to the shop",
        "status": "READY",
        "failures": 0,
        "prop_style": "NATIVE",
    }
    altered = {
        **base,
        "rule": ":msg.amount >= 1000",
        "poll_interval": 5.0,
        "options": '{"MsgBatchSize": "10"}',
    }
    if step == 2:
        assert _job() == base
    elif step in (3, 5):
        assert _job() == altered
    elif step == 4:
        assert _job() == {**altered, "enabled": "FALSE"}
    elif step == 6:
        assert _job() == altered  # RESET_JOB of a READY job: still READY, 0 failures
    elif step < 2 or step >= 7:
        assert not jobs.exists()


def _subprocess_env() -> dict[str, str]:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    url = f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    return {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "console.settings"}


def _run(argv: list[str], *, shell: bool) -> str:
    if shell:
        done = subprocess.run(
            [sys.executable, "manage.py", "mgwadm", *argv],
            cwd=ROOT,
            env=_subprocess_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        return done.stdout
    out = io.StringIO()
    call_command("mgwadm", *argv, stdout=out)
    return out.getvalue()


EXPECTED_OUTPUT = [
    "CREATE_MSGSYSTEM_LINK: link RMQ (AMQP, agent DEFAULT_AGENT), options {}",
    "REGISTER_FOREIGN_QUEUE: foreign queue ORDERS_OUT@RMQ (provider queue orders.out, QUEUE)",
    "CREATE_JOB: job JOB_OUT: OUTBOUND ORDERS -> ORDERS_OUT@RMQ, enabled TRUE, status READY",
    "ALTER_JOB: job JOB_OUT: OUTBOUND ORDERS -> ORDERS_OUT@RMQ, enabled TRUE, status READY",
    "DISABLE_JOB: job JOB_OUT: OUTBOUND ORDERS -> ORDERS_OUT@RMQ, enabled FALSE, status READY",
    "ENABLE_JOB: job JOB_OUT: OUTBOUND ORDERS -> ORDERS_OUT@RMQ, enabled TRUE, status READY",
    "RESET_JOB: job JOB_OUT: OUTBOUND ORDERS -> ORDERS_OUT@RMQ, enabled TRUE, status READY",
    "REMOVE_JOB: done (job_name=job_out, force=FORCE)",
    "UNREGISTER_FOREIGN_QUEUE: done (name=orders_out, linkname=rmq)",
    "REMOVE_MSGSYSTEM_LINK: done (linkname=rmq)",
]


@pytest.mark.django_db(transaction=True)
def test_an_aq_script_translated_line_for_line_leaves_the_views_as_oracle_would(admin_user):
    from queues import services as qs

    services.ensure_default_agent()  # a transactional test flushed the data migration's row
    qt = qs.queue_table_create(
        user=admin_user, name="QT_SHOP", sort_order="enq_time", multiple_consumers=True
    )
    qs.queue_create(user=admin_user, name="ORDERS", queue_table=qt)

    for step, argv in enumerate(SCRIPT):
        out = _run(argv, shell=step == SUBPROCESS_STEP)
        assert out == EXPECTED_OUTPUT[step] + "\n", (step, out)
        _expected_views(step)


@pytest.mark.django_db
def test_list_prints_every_procedure_with_oracle_parameter_names():
    out = io.StringIO()
    call_command("mgwadm", "--list", stdout=out)
    lines = out.getvalue().splitlines()
    assert (
        "REMOVE_JOB(job_name, force=>NO_FORCE)" in lines
        and "ALTER_JOB(job_name, rule=>NO_CHANGE, transformation=>NO_CHANGE, "
        "exception_queue=>NO_CHANGE, poll_interval=>0, options=>NULL, comments=>NO_CHANGE)"
        in lines
    )
    assert (
        "ADD_SUBSCRIBER(subscriber_id, propagation_type, queue_name, destination, rule=>NULL, "
        "transformation=>NULL, exception_queue=>NULL, options=>NULL)  -- not supported" in lines
    )
