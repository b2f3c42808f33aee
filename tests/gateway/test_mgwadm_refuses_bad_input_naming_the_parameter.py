"""Bad DBMS_MGWADM calls, from Python and from ``manage.py mgwadm``: unknown procedures,
parameters and constants are usage errors (exit 2, listing what is valid); refused calls name
the Oracle parameter (exit 1, ORA-style); Oracle features with no counterpart and the old-style
subscriber/schedule API say why; nothing is written."""

from __future__ import annotations

import inspect
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core.exceptions import DomainError
from core.models import ChangeLogEntry
from gateway import mgwadm
from gateway.models import Agent, ForeignQueue, Job, Link

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def refused(*argv: str) -> CommandError:
    out = io.StringIO()
    with pytest.raises(CommandError) as info:
        call_command("mgwadm", *argv, stdout=out)
    assert out.getvalue() == ""
    return info.value


@pytest.fixture
def link(db) -> Link:
    return mgwadm.create_msgsystem_link(
        "rmq", properties={"link_type": "AMQP", "host": "127.0.0.1"}
    )


def _counts() -> tuple[int, ...]:
    return (
        Agent.objects.count(),
        Link.objects.count(),
        ForeignQueue.objects.count(),
        Job.objects.count(),
        ChangeLogEntry.objects.count(),
    )


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["create_jbo"], ["Unknown procedure 'create_jbo'", "create_job", "remove_job"]),
        ([], ["No procedure", "create_agent"]),
        (
            ["CREATE_JOB", "--job_name", "J", "--queue", "Q"],
            ["Unknown parameter --queue", "--job_name", "--propagation_type", "--comments"],
        ),
        (
            ["create_job", "--job_name", "J", "--propagation_type", "OUTBOUND"],
            ["OUTBOUND", "OUTBOUND_PROPAGATION, INBOUND_PROPAGATION"],
        ),
        (["remove_job", "--job_name", "J", "--force", "YES"], ["NO_FORCE, FORCE"]),
        (
            ["create_job", "--job_name", "J"],
            ["Missing --propagation_type, --source, --destination."],
        ),
        (["create_agent", "--agent_name", "A", "--max_threads", "many"], ["--max_threads"]),
        (
            ["create_job", "--job_name", "J", "--enabled", "maybe"],
            ["--enabled takes TRUE or FALSE"],
        ),
        (["enable_job", "--job_name"], ["--job_name needs a value"]),
        (["enable_job", "J1"], ["Expected --parameter, got 'J1'"]),
        (["enable_job", "--job_name", "A", "--job-name", "B"], ["--job_name is given twice"]),
        (
            ["create_msgsystem_link", "--linkname", "L", "--properties", "host"],
            ["--properties takes name=value"],
        ),
    ],
)
def test_usage_errors_exit_2_and_list_what_is_valid(argv, names):
    before = _counts()
    error = refused(*argv)
    assert error.returncode == 2
    for name in names:
        assert name in str(error)
    assert _counts() == before


def test_a_refused_call_names_the_parameter_ora_style_exits_1_and_writes_nothing(link):
    before = _counts()
    error = refused(
        "create_job",
        "--job_name",
        "j1",
        "--propagation_type",
        "OUTBOUND_PROPAGATION",
        "--source",
        "no_such_queue",
        "--destination",
        "x@rmq",
    )
    assert error.returncode == 1
    assert str(error) == (
        "ORA-20000: DBMS_MGWADM.CREATE_JOB(source): No queue named 'no_such_queue'."
    )
    error = refused("remove_agent", "--agent_name", "default_agent")
    assert (error.returncode, str(error)) == (
        1,
        "ORA-20001: DBMS_MGWADM.REMOVE_AGENT(agent_name): "
        "DEFAULT_AGENT always exists and cannot be removed.",
    )
    error = refused("enable_job", "--job_name", "nope")
    assert (
        str(error)
        == "ORA-20002: DBMS_MGWADM.ENABLE_JOB(job_name): There is no propagation job NOPE."
    )
    error = refused(
        "create_msgsystem_link",
        "--linkname",
        "l2",
        "--properties",
        '{"link_type": "AMQP", "port": 70000}',
    )
    assert "CREATE_MSGSYSTEM_LINK(properties.host)" in str(error)
    error = refused("shutdown")
    assert "SHUTDOWN(agent_name): Agent DEFAULT_AGENT is not started." in str(error)
    assert _counts() == before


def test_oracle_features_with_no_counterpart_are_refused_with_the_reason():
    with pytest.raises(mgwadm.NotSupported) as info:
        mgwadm.create_agent("a1", username="u", password="p", database="orcl_tns")
    assert info.value.field == "database" and "DATABASE_URL" in info.value.message
    with pytest.raises(mgwadm.NotSupported) as info:
        mgwadm.alter_agent("default_agent", conntype=mgwadm.JDBC_THIN)
    assert info.value.field == "conntype" and "psycopg" in info.value.message
    with pytest.raises(mgwadm.NotSupported) as info:
        mgwadm.create_agent("a1", initfile="x")
    assert info.value.field == "initfile"
    # service is supported (a queue's service name): an unknown one is refused naming it.
    with pytest.raises(DomainError) as info:
        mgwadm.create_agent("a1", service="SYS$NOBODY.NOQUEUE")
    assert info.value.field == "service"
    error = refused("create_agent", "--agent_name", "a1", "--initfile", "/etc/mgw.ora")
    assert error.returncode == 1 and str(error).startswith(
        "ORA-20004: DBMS_MGWADM.CREATE_AGENT(initfile): initfile must be NULL here"
    )
    assert not Agent.objects.filter(name="A1").exists()


@pytest.mark.parametrize("name", sorted(mgwadm.UNSUPPORTED))
def test_the_old_style_subscriber_and_schedule_api_says_to_use_jobs(name):
    fn = mgwadm.PROCEDURES[name]
    required = [
        p for p, param in inspect.signature(fn).parameters.items() if param.default is param.empty
    ]
    with pytest.raises(mgwadm.NotSupported) as info:
        fn(**{p: "X" for p in required})
    assert f"{name.upper()} is not supported" in info.value.message
    assert "create_job" in info.value.message


def test_bad_constants_and_oracle_rules_from_python_name_the_parameter(link):
    cases = [
        (lambda: mgwadm.create_job("j", 7, "q", "x@rmq"), "propagation_type"),
        (lambda: mgwadm.remove_job("j", force="maybe"), "job_name"),  # the job is looked up first
        (lambda: mgwadm.cleanup_gateway(99), "action"),
        (lambda: mgwadm.cleanup_gateway(mgwadm.CLEAN_LOG_QUEUES, sarg="J"), "sarg"),
        (lambda: mgwadm.set_log_level("default_agent", 9), "log_level"),
        (lambda: mgwadm.set_log_level("default_agent", "LIGHT_LOGGING"), "log_level"),
        (lambda: mgwadm.set_log_level("default_agent"), "log_level"),
        (lambda: mgwadm.alter_agent(username=None), "username"),
        (lambda: mgwadm.create_agent("a2", max_threads=500), "max_threads"),
        (lambda: mgwadm.set_option(mgwadm.MSGLINK_OPTION, "rmq", "x", "y", True), "encrypted"),
        (lambda: mgwadm.set_option(mgwadm.JOB_OPTION, "nojob", "MsgBatchSize", "5"), "target_name"),
        (lambda: mgwadm.set_option(9, "rmq", "x", "y"), "target_type"),
        (lambda: mgwadm.register_foreign_queue("q", "rmq", domain=5), "domain"),
        (lambda: mgwadm.register_foreign_queue("q", "nolink"), "linkname"),
        (
            lambda: mgwadm.create_msgsystem_link("l3", properties={"host": "h"}),
            "properties.link_type",
        ),
        (
            lambda: mgwadm.create_msgsystem_link("l3", properties={"link_type": "MQ", "host": "h"}),
            "properties.link_type",
        ),
        (
            lambda: mgwadm.create_msgsystem_link(
                "rmq", properties={"link_type": "AMQP", "host": "h"}
            ),
            "linkname",
        ),
        (lambda: mgwadm.alter_msgsystem_link("rmq", options={"Bogus": "1"}), "options"),
        # Each was a traceback: a ValidationError from full_clean, a ValueError from int("¹"),
        # a DataError from PostgreSQL.
        (
            lambda: mgwadm.create_msgsystem_link(
                "1abc", properties={"link_type": "AMQP", "host": "h"}
            ),
            "linkname",
        ),
        (lambda: mgwadm.create_agent("1a"), "agent_name"),
        (
            lambda: mgwadm.create_msgsystem_link(
                "l4", properties={"link_type": "AMQP", "host": "h", "max_connections": "\u00b9"}
            ),
            "properties.max_connections",
        ),
        (
            lambda: mgwadm.create_msgsystem_link(
                "l4", properties={"link_type": "AMQP", "host": "h\x00"}
            ),
            "properties.host",
        ),
        (
            lambda: mgwadm.alter_msgsystem_link("rmq", properties={"virtual_host": "\ud800"}),
            "properties.virtual_host",
        ),
        (lambda: mgwadm.unregister_foreign_queue("nope", "rmq"), "name"),
    ]
    before = _counts()
    for call, field in cases:
        with pytest.raises(DomainError) as info:
            call()
        assert info.value.field == field, (info.value.message, field)
        assert info.value.procedure  # type: ignore[attr-defined]
    assert _counts() == before


@pytest.mark.django_db(transaction=True)
def test_from_the_shell_errors_go_to_stderr_with_exit_codes_1_and_2():
    from django.db import connection

    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    url = f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "console.settings"}

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "manage.py", "mgwadm", *argv],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    bad = run("enable_job", "--job_name", "nope")
    assert (bad.returncode, bad.stdout, bad.stderr) == (
        1,
        "",
        "ORA-20002: DBMS_MGWADM.ENABLE_JOB(job_name): There is no propagation job NOPE.\n",
    )
    usage = run("enable_job", "--job", "nope")
    assert usage.returncode == 2 and usage.stdout == ""
    assert usage.stderr == "ENABLE_JOB: Unknown parameter --job. Parameters: --job_name.\n"
