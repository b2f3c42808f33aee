"""Schemathesis, run as its command line is, over every operation of /api/schema/ against a live
server on the test database: no server error, and every status code, content type and body as the
schema documents them. Any failure fails the suite.

The run is deterministic (a fixed seed, no example database) and bounded (a few examples per
operation). A seeded topology gives the detail routes something to find: the path ids and the
names in bodies are drawn half of the time from the seeded names and ids. The longer run of
docs/FUZZING.md is this test with larger numbers (the ``AQ_FUZZ_*`` variables below).
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLES = int(os.environ.get("AQ_FUZZ_EXAMPLES", "8"))
PHASES = os.environ.get("AQ_FUZZ_PHASES", "fuzzing,stateful")
# One worker keeps the run the same every time; the longer run may use more (blocking dequeues).
WORKERS = os.environ.get("AQ_FUZZ_WORKERS", "1")
# Where to keep the report and the full output (the longer run's figures come from there).
KEEP = os.environ.get("AQ_FUZZ_KEEP", "")
# Every check but the two that judge input by the schema alone: whether a name exists is the
# database's call (positive_data_acceptance), and odd paging is ignored by design
# (negative_data_rejection; tests/api/test_bad_query_parameters_never_break_a_list.py).
CHECKS = os.environ.get("AQ_FUZZ_CHECKS") or ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_headers_conformance",
        "response_schema_conformance",
        "missing_required_header",
        "unsupported_method",
        "allow_header_conformance",
        "ignored_auth",
        "use_after_free",
        "ensure_resource_availability",
    ]
)


def _loopback_only(real: Any) -> Any:
    """socket.getaddrinfo that resolves loopback hosts only. Fuzzed links, and Spark masters, may
    name any host; a test connection must not leave the machine, and here it cannot."""

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host or "")
        try:
            loopback = ipaddress.ip_address(name.strip("[]")).is_loopback
        except ValueError:
            loopback = name.lower() in ("localhost", "")
        if not loopback:
            raise socket.gaierror(socket.EAI_NONAME, f"{name}: not a loopback host (test fence)")
        return real(host, *args, **kwargs)

    return getaddrinfo


@pytest.fixture
def loopback_fence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", _loopback_only(socket.getaddrinfo))


def _api(user: Any) -> APIClient:
    client = APIClient()
    client.default_format = "json"
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def _seed(admin: Any) -> dict[str, list[str]]:
    """Something of every kind, made through the API as a client would. Returns, by collection,
    the ids and names the fuzzer should try in paths and bodies."""
    api = _api(admin)
    made: list[tuple[str, str, dict[str, Any]]] = [
        ("queue-tables", "QT_FUZZ", {"sort_order": "enq_time", "multiple_consumers": True}),
        ("queue-tables", "QT_FUZZ_SC", {"sort_order": "priority"}),
        ("queues", "FUZZ_IN", {"queue_table": "QT_FUZZ"}),
        ("queues", "FUZZ_OUT", {"queue_table": "QT_FUZZ"}),
        ("queues", "FUZZ_SC", {"queue_table": "QT_FUZZ_SC", "max_retries": 0}),
        ("subscribers", "FUZZ_SUB", {"queue": "FUZZ_IN"}),
        ("agents", "FUZZ_AGENT", {}),
        (
            "evaluation-contexts",
            "FUZZ_CTX",
            {"variables": [{"name": "D", "variable_type": "SYS.LCR$_ROW_RECORD"}]},
        ),
        ("rules", "FUZZ_RULE", {"condition": ":msg.region = 'EU'"}),
        ("rule-sets", "FUZZ_RS", {}),
    ]
    for collection, name, body in made:
        r = api.post(f"/api/{collection}/", {"name": name, **body})
        assert r.status_code == 201, (collection, r.content)
    steps: list[tuple[str, dict[str, Any], int]] = [
        ("/api/rule-sets/FUZZ_RS/add_rule/", {"rule": "FUZZ_RULE"}, 201),
        ("/api/rules/generate/", {"kind": "table", "table_name": "hr.emp"}, 201),
        ("/api/privileges/", {"queue": "FUZZ_SC", "user": admin.username, "privilege": "ALL"}, 201),
        ("/api/agents/FUZZ_AGENT/enable_access/", {"user": admin.username}, 200),
        ("/api/queues/FUZZ_IN/enqueue/", {"messages": [{"payload": {"region": "EU"}}] * 3}, 201),
        ("/api/queues/FUZZ_SC/enqueue/", {"messages": [{"payload": {"n": 1}}] * 2}, 201),
        (
            "/api/propagations/",
            {
                "name": "FUZZ_PROP",
                "source_queue": "FUZZ_IN",
                "destination_queue": "FUZZ_OUT",
                "positive_rule_set": "FUZZ_RS",
            },
            201,
        ),
        (
            "/api/gateway/links/",
            {
                "linkname": "FUZZ_LINK",
                "link_type": "AMQP",
                # Nothing listens on port 1: a test connection is refused at once.
                "properties": {"host": "127.0.0.1", "port": 1},
                "password": "fuzz-secret",
            },
            201,
        ),
        ("/api/gateway/foreign-queues/", {"name": "FUZZ_FQ", "link": "FUZZ_LINK"}, 201),
        (
            "/api/gateway/jobs/",
            {
                "job_name": "FUZZ_JOB",
                "propagation_type": "OUTBOUND",
                "source": "FUZZ_IN",
                "destination": "FUZZ_FQ@FUZZ_LINK",
            },
            201,
        ),
        ("/api/spark-jobs/", {"source_queue": "FUZZ_SC", "destinations": ["FUZZ_OUT"]}, 201),
    ]
    for path, body, expected in steps:
        r = api.post(path, body)
        assert r.status_code == expected, (path, r.content)
    # A message in an exception queue, for replay: FUZZ_SC allows no retry.
    got = api.post("/api/queues/FUZZ_SC/dequeue/", {"mode": "LOCKED"}).json()["messages"][0]
    r = api.post(
        "/api/queues/FUZZ_SC/release/", {"msgid": got["id"], "lock_token": got["lock_token"]}
    )
    assert r.status_code == 204, r.content
    dml = api.get("/api/rules/?q=EMP").json()["results"][0]["name"]
    r = api.post(
        f"/api/rules/{dml}/transformations/",
        {"declarative_type": "RENAME COLUMN", "from_column_name": "a", "to_column_name": "b"},
    )
    assert r.status_code == 201, r.content
    return {c: _keys(api, c) for c in COLLECTIONS}


# What the detail routes address, by collection (the path below /api/).
COLLECTIONS = [
    "queue-tables",
    "queues",
    "messages",
    "subscribers",
    "agents",
    "privileges",
    "evaluation-contexts",
    "rules",
    "rule-sets",
    "propagations",
    "propagation-runs",
    "spark-jobs",
    "changelog",
    "gateway/agents",
    "gateway/links",
    "gateway/foreign-queues",
    "gateway/jobs",
]
# The status views' keys are ids of the objects above.
STATUS_KEYS = [
    "agent_id",
    "agent_user_id",
    "job_id",
    "link_id",
    "member_id",
    "option_id",
    "propagation_id",
    "qid",
    "queue_id",
    "queue_table_id",
    "rule_id",
    "rule_set_id",
    "schedule_id",
    "transformation_id",
    "variable_id",
]


def _keys(api: APIClient, collection: str) -> list[str]:
    """Every way the objects of a collection are addressed: id, name, NAME@LINK."""
    body = api.get(f"/api/{collection}/?limit=1000").json()
    rows = body["results"] if isinstance(body, dict) else body
    keys: list[str] = []
    for row in rows:
        keys += [str(row[k]) for k in ("id", "name", "address") if row.get(k) not in (None, "")]
    return sorted(set(keys))


def _toml_list(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def _config(path: Path, keys: dict[str, list[str]]) -> Path:
    """schemathesis.toml: the seeded keys as dictionaries, drawn three times out of four for the
    ``{id}`` of their own collection's routes, half of the time for the names in bodies."""
    every = sorted({k for values in keys.values() for k in values})
    ids = sorted({k for k in every if k.isdigit()}, key=int)
    lines = [
        f"[dictionaries.every]\nvalues = {_toml_list(every)}\n",
        f"[dictionaries.ids]\nvalues = {_toml_list(ids)}\n",
    ]
    for n, collection in enumerate(COLLECTIONS):
        if keys[collection]:
            lines.append(f"[dictionaries.c{n}]\nvalues = {_toml_list(keys[collection])}\n")
    bodies = [
        "queue",
        "queue_table",
        "exception_queue",
        "source_queue",
        "destination_queue",
        "rule",
        "rule_set",
        "positive_rule_set",
        "negative_rule_set",
        "positive",
        "negative",
        "evaluation_context",
        "link",
        "agent",
        "source",
        "destination",
        "user",
    ]
    lines.append("[parameters]")
    lines += [f'"path.{k}" = {{ dictionary = "ids", probability = 0.5 }}' for k in STATUS_KEYS]
    lines += [f'"body.{f}" = {{ dictionary = "every", probability = 0.5 }}' for f in bodies]
    for n, collection in enumerate(COLLECTIONS):
        if keys[collection]:
            regex = f"^/api/{re.escape(collection)}/\\{{id\\}}/"
            binding = f'{{ "path.id" = {{ dictionary = "c{n}", probability = 0.75 }} }}'
            lines.append(
                f"\n[[operations]]\ninclude-path-regex = {json.dumps(regex)}\n"
                f"parameters = {binding}"
            )
    path.write_text("\n".join(lines) + "\n")
    return path


def _fuzz(
    url: str, token: str, workdir: Path, config: Path, *, examples: int, phases: str, label: str
) -> tuple[dict[str, Any], str, float]:
    report = workdir / "report.json"
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(config),
        "run",
        f"{url}/api/schema/",
        "--header",
        f"Authorization: Token {token}",
        "--phases",
        phases,
        "--checks",
        CHECKS,
        "--max-examples",
        str(examples),
        # Derandomised, and so no example database either: the same requests on every run.
        "--generation-deterministic",
        "--workers",
        WORKERS,
        # Above the longest a request may take on purpose: a dequeue may wait up to 60 s.
        "--request-timeout",
        "90",
        "--no-color",
        "--report",
        "json",
        "--report-json-path",
        str(report),
    ]
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=workdir, capture_output=True, text=True, timeout=3600, check=False
    )
    elapsed = time.monotonic() - started
    output = done.stdout + done.stderr
    (workdir / "output.txt").write_text(output)
    if KEEP:
        kept = Path(KEEP) / label
        kept.mkdir(parents=True, exist_ok=True)
        for name in ("output.txt", "report.json", "schemathesis.toml"):
            if (workdir / name).exists():
                (kept / name).write_bytes((workdir / name).read_bytes())
    assert report.exists(), output
    return json.loads(report.read_text()), output, elapsed


def _purge_broker() -> None:
    """The seeded Spark job and any started agent sent Celery tasks no worker took: drop them,
    so a later test's worker does not run them against a flushed database."""
    from django.conf import settings

    url = settings.CELERY_BROKER_URL
    if url.startswith(("redis://", "rediss://")):
        import redis

        client = redis.Redis.from_url(url)
        try:
            client.flushdb()
        finally:
            client.close()


# The administrator may call everything: the whole run. The operator's run is shorter and
# checks the other side: what its role refuses is a documented 403, never anything else.
ROLES = [
    pytest.param("admin_user", EXAMPLES, PHASES, id="administrator"),
    pytest.param("operator_user", max(1, EXAMPLES // 3), "fuzzing", id="operator"),
]


@pytest.mark.parametrize(("role", "examples", "phases"), ROLES)
def test_every_operation_answers_as_the_schema_says_under_fuzzing(
    request, live_server, admin_user, loopback_fence, tmp_path, role, examples, phases
):
    keys = _seed(admin_user)
    user = request.getfixturevalue(role)
    token = Token.objects.get_or_create(user=user)[0].key
    config = _config(tmp_path / "schemathesis.toml", keys)

    try:
        report, output, elapsed = _fuzz(
            live_server.url,
            token,
            tmp_path,
            config,
            examples=examples,
            phases=phases,
            label=role.removesuffix("_user"),
        )
    finally:
        _purge_broker()

    print(output[-3000:])
    print(f"schemathesis: {elapsed:.0f} s, {report['test_cases']['generated']} test cases")
    assert report["operations"]["tested"] == report["operations"]["selected"] >= 170, output
    assert report["operations"]["errored"] == 0, output
    assert report["failures"] == [] and report["errors"] == [], output
    assert report["exit_code"] == 0, output
