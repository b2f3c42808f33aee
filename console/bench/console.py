"""``bench console``: the pages and API an operator uses, over 10,000 queues, 2,000 propagations
and 1,000 gateway jobs (bench/WORKLOADS.md, "console — pages and API at scale" and "console — at
scale").

The topology is built through the services under a unique prefix (its build is timed apart, per
kind of object, and is not a figure): at scale 1, 10,000 normal queues in 100 queue tables, every
other table multi-consumer; 2,000 propagations between queues of the multi-consumer tables under
10 rule sets; 1,000 gateway jobs (half OUTBOUND from, half INBOUND into, queues of the
single-consumer tables), each with its own registered foreign queue, on 8 links of the four
types, on one agent the suite creates and never starts (no job runs: the figures are the pages').

Each URL is then asked through the real WSGI stack: ``console.wsgi.application`` served by
``wsgiref`` on a free loopback port in a thread, asked by ``http.client`` with the session cookie
of an administrator the suite creates (one warm-up, then ``REQUESTS`` timed GETs: connect, send,
the whole body read). The server counts each request's SQL queries (an execute wrapper on its own
thread's connection). Everything the suite made is dropped at the end, also on failure.
"""

from __future__ import annotations

import http.client
import math
import secrets
import statistics
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from django.conf import settings
from django.db import connection, connections, transaction
from django.test import Client

from console.bench import targets
from console.bench.workload import BenchError

Log = Callable[[str], None]

FULL_QUEUES = 10_000
FULL_PROPAGATIONS = 2_000
FULL_JOBS = 1_000
QUEUES_PER_TABLE = 100
MULTI_CONSUMER_EVERY = 2  # every other queue table is multi-consumer (propagation sources)
SUBSCRIBERS_PER_MC_TABLE = 10  # plain subscribers on the first queues of each such table
RULE_SETS = 10
LINK_TYPES = ("AMQP", "MQTT", "NATS", "REDIS")
LINKS = 8
# Loopback properties each link type validates (nothing connects: the agent never starts).
LINK_PROPERTIES: dict[str, dict[str, Any]] = {
    "AMQP": {"host": "127.0.0.1", "port": 5672, "username": "guest"},
    "MQTT": {"host": "127.0.0.1", "port": 1883},
    "NATS": {"host": "127.0.0.1", "port": 4222},
    "REDIS": {"host": "127.0.0.1", "port": 6379, "db": 12},
}
# How each system spells a hierarchical name (the foreign queue's provider name).
PROVIDER_SEPARATOR = {"AMQP": ".", "MQTT": "/", "NATS": ".", "REDIS": ":"}
REQUESTS = 50  # timed GETs per key of WORKLOADS.md (a median of 50)
EXTRA_REQUESTS = 7  # timed GETs per extra URL
PAGE_SIZES = (25, 100)  # the queue list's default page size and a larger one
BATCH = 100  # objects per transaction when building propagations and jobs

# Key of WORKLOADS.md -> the measured page it is the median of.
KEYS = {
    "queue_list_ms_p50": "queue_list",
    "job_list_ms_p50": "job_list",
    "api_queue_list_ms_p50": "api_queues",
    "propagation_list_ms_p50": "propagation_list",
    "dashboard_ms_p50": "dashboard",
    "topology_ms_p50": "topology_filtered",
}


def sizes_for(scale: float) -> dict[str, int]:
    """What the suite builds at ``scale``: at least two queue tables (one multi-consumer for the
    propagations, one single-consumer for the jobs), one propagation and two jobs."""
    queues = max(4, round(FULL_QUEUES * scale))
    tables = max(2, math.ceil(queues / QUEUES_PER_TABLE))
    return {
        "queues": queues,
        "queue_tables": tables,
        "propagations": max(1, round(FULL_PROPAGATIONS * scale)),
        "gateway_jobs": max(2, round(FULL_JOBS * scale)),
    }


def _is_multi(t: int) -> bool:
    return t % MULTI_CONSUMER_EVERY == 0


def _spread(total: int, over: int) -> list[int]:
    """``total`` split over ``over`` parts as evenly as whole numbers go."""
    return [total // over + (1 if k < total % over else 0) for k in range(over)]


def build(prefix: str, scale: float, user: Any, log: Log) -> dict[str, Any]:
    """The topology, through the services; each kind timed (``build_<kind>_s``). Queue tables
    commit one by one with their queues; propagations and jobs in transactions of ``BATCH``."""
    from gateway import services as gs
    from jobs import services as js
    from queues import services as qs
    from rules import services as rs

    sizes = sizes_for(scale)
    made: dict[str, Any] = {"tables": [], "queues": [], "subscribers": 0, "timings": {}}
    clock = time.perf_counter()

    def lap(kind: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        made["timings"][f"build_{kind}_s"] = round(now - clock, 1)
        log(f"  {kind}: {now - clock:.1f} s")
        clock = now

    rule_sets = [
        rs.rule_set_create(user=user, name=f"{prefix}_RS{k:02d}")
        for k in range(min(RULE_SETS, sizes["propagations"]))
    ]
    made["rule_sets"] = [r.pk for r in rule_sets]
    by_table: list[tuple[bool, list[Any]]] = []
    for t, n in enumerate(_spread(sizes["queues"], sizes["queue_tables"])):
        multi = _is_multi(t)
        with transaction.atomic():
            qt = qs.queue_table_create(
                user=user, name=f"{prefix}_T{t:03d}", multiple_consumers=multi
            )
            queues = [
                qs.queue_create(user=user, name=f"{prefix}_T{t:03d}_Q{i:05d}", queue_table=qt)
                for i in range(n)
            ]
            if multi:
                for q in queues[:SUBSCRIBERS_PER_MC_TABLE]:
                    qs.subscriber_add(user=user, queue=q, name=f"{prefix}_S{q.pk}")
                    made["subscribers"] += 1
        by_table.append((multi, queues))
        made["tables"].append(qt.pk)
        made["queues"].extend(q.pk for q in queues)
        if t % 10 == 9:
            log(f"  built {t + 1} of {sizes['queue_tables']} queue tables")
    lap("queues")

    # Propagations: the j-th of a multi-consumer table goes from its queue j to queue j + n/2.
    multi_tables = [queues for multi, queues in by_table if multi]
    plan = [
        (queues[j], queues[(j + len(queues) // 2) % len(queues)])
        for queues, count in zip(
            multi_tables, _spread(sizes["propagations"], len(multi_tables)), strict=True
        )
        for j in range(min(count, len(queues)))
    ]
    made["propagations"] = 0
    for start in range(0, len(plan), BATCH):
        with transaction.atomic():
            for k, (source, destination) in enumerate(plan[start : start + BATCH], start):
                js.propagation_create(
                    user=user,
                    name=f"{prefix}_P{k:05d}",
                    source_queue=source,
                    destination_queue=destination,
                    positive_rule_set=rule_sets[k % len(rule_sets)],
                    schedule=False,
                )
                made["propagations"] += 1
    lap("propagations")

    # Gateway jobs: one agent (never started), LINKS links, a foreign queue per job; the j-th job
    # of a single-consumer table is OUTBOUND from its queue j when j is even, INBOUND into it
    # when odd (one job per source queue).
    agent = gs.agent_create(user=user, name=f"{prefix}_AGENT")
    made["agent"] = agent.pk
    links = []
    for k in range(min(LINKS, sizes["gateway_jobs"])):
        link_type = LINK_TYPES[k % len(LINK_TYPES)]
        links.append(
            gs.link_create(
                user=user,
                name=f"{prefix}_L{k}",
                link_type=link_type,
                properties=dict(LINK_PROPERTIES[link_type]),
                agent=agent,
                comment="console benchmark",
            )
        )
    single_tables = [queues for multi, queues in by_table if not multi]
    plan_jobs = [
        queues[j]
        for queues, count in zip(
            single_tables, _spread(sizes["gateway_jobs"], len(single_tables)), strict=True
        )
        for j in range(min(count, len(queues)))
    ]
    made["gateway_jobs"] = made["foreign_queues"] = 0
    for start in range(0, len(plan_jobs), BATCH):
        with transaction.atomic():
            for g, queue in enumerate(plan_jobs[start : start + BATCH], start):
                link = links[g % len(links)]
                sep = PROVIDER_SEPARATOR[link.link_type]
                fq = gs.foreign_queue_register(
                    user=user,
                    name=f"{prefix}_F{g:05d}",
                    link=link,
                    provider_queue=sep.join(("benchc", prefix.lower(), f"f{g:05d}")),
                )
                made["foreign_queues"] += 1
                outbound = g % 2 == 0
                ours, theirs = queue.name, f"{fq.name}@{link.name}"
                gs.job_create(
                    user=user,
                    job_name=f"{prefix}_J{g:05d}",
                    propagation_type="OUTBOUND" if outbound else "INBOUND",
                    source=ours if outbound else theirs,
                    destination=theirs if outbound else ours,
                    enabled=False,
                )
                made["gateway_jobs"] += 1
    made["links"] = len(links)
    lap("gateway_jobs")
    return made


def teardown(prefix: str, user: Any, first_log_id: int, log: Log) -> dict[str, int]:
    """Drop everything under ``prefix`` through the services, then the change-log rows the
    build and the drop wrote, then the user. Each part runs even if an earlier one failed."""
    from django.contrib.auth import get_user_model

    from core.models import ChangeLogEntry
    from gateway import services as gs
    from gateway.models import Agent, ForeignQueue, Job, Link
    from jobs import services as js
    from jobs.models import Propagation
    from queues import services as qs
    from queues.models import QueueTable, QueueTableOwnerMove
    from rules import services as rs
    from rules.models import RuleSet

    errors: list[str] = []

    def attempt(what: str, fn: Callable[[], Any]) -> None:
        try:
            fn()
        except Exception as exc:  # keep going: the rest must still be dropped
            errors.append(f"{what}: {type(exc).__name__}: {exc}")

    under = {"name__startswith": prefix + "_"}
    for j in Job.objects.filter(**under).select_related("link", "subscriber"):
        attempt(j.name, lambda j=j: gs.job_remove(user=user, job=j, force=True))
    for fq in ForeignQueue.objects.filter(**under):
        attempt(fq.name, lambda fq=fq: gs.foreign_queue_unregister(user=user, foreign_queue=fq))
    for ln in Link.objects.filter(**under):
        attempt(ln.name, lambda ln=ln: gs.link_remove(user=user, link=ln))
    for a in Agent.objects.filter(**under):
        attempt(a.name, lambda a=a: gs.agent_remove(user=user, agent=a))
    for p in Propagation.objects.filter(**under):
        attempt(p.name, lambda p=p: js.propagation_delete(user=user, propagation=p))
    for qt in QueueTable.objects.filter(**under):
        attempt(qt.name, lambda qt=qt: qs.queue_table_delete(user=user, queue_table=qt))
    for r in RuleSet.objects.filter(**under):
        attempt(r.name, lambda r=r: rs.rule_set_delete(user=user, rule_set=r))
    QueueTableOwnerMove.objects.filter(queue_table_name__startswith=prefix + "_").delete()
    # The services' own change-log rows (some log as the system, so also by the object's name).
    logged = ChangeLogEntry.objects.filter(pk__gt=first_log_id)
    (
        logged.filter(username=user.get_username()) | logged.filter(object_repr__contains=prefix)
    ).delete()
    if user is not None and user.pk is not None:
        get_user_model().objects.filter(pk=user.pk).delete()
    if errors:
        raise BenchError("teardown left rows behind: " + "; ".join(errors[:5]))
    log(f"dropped everything under {prefix}")
    return {"errors": len(errors)}


def left_behind(prefix: str) -> int:
    """Rows under ``prefix`` still present (0 after a clean teardown)."""
    from gateway.models import Agent as GatewayAgent
    from gateway.models import ForeignQueue, Job, Link
    from jobs.models import Propagation
    from queues.models import Queue, QueueTable, Subscriber
    from rules.models import RuleSet

    models = (QueueTable, Queue, Subscriber, Propagation, RuleSet)
    return sum(
        m.objects.filter(name__startswith=prefix + "_").count()
        for m in (*models, GatewayAgent, Link, ForeignQueue, Job)
    )


# --- the real WSGI stack -------------------------------------------------------------------------


class CountingApp:
    """The WSGI application, counting each request's SQL queries on the serving thread's own
    connection. The body is read and the response closed (Django's request_finished) before it
    goes back to the server, so the count is there before the client has the first byte."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.queries = 0

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        count = 0

        def counter(execute: Callable[..., Any], *args: Any) -> Any:
            nonlocal count
            count += 1
            return execute(*args)

        with connection.execute_wrapper(counter):
            result = self.app(environ, start_response)
            try:
                body = list(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        self.queries = count
        return body


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # quiet: no line per request
        pass


class Server:
    """``console.wsgi.application`` on a free loopback port, served by one thread."""

    def __init__(self) -> None:
        from console.wsgi import application

        self.app = CountingApp(application)
        self.httpd: WSGIServer = make_server(
            "127.0.0.1", 0, self.app, server_class=WSGIServer, handler_class=_QuietHandler
        )
        self.port = self.httpd.server_port
        self.thread = threading.Thread(target=self._serve, name="bench-console-wsgi", daemon=True)

    def _serve(self) -> None:
        try:
            self.httpd.serve_forever(poll_interval=0.05)
        finally:
            # This thread's connection: left open it would outlive the run (and a test database).
            connections.close_all()

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.thread.join(timeout=30)
        self.httpd.server_close()


def session_cookie(user: Any) -> tuple[str, str]:
    """A real session for ``user`` (stored as a login stores it): the Cookie header, and the
    session key to delete at the end."""
    client = Client()
    client.force_login(user)
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    return f"{settings.SESSION_COOKIE_NAME}={key}", key


def get(server: Server, url: str, cookie: str) -> tuple[int, bytes, float]:
    """One GET over a new connection: status, body, and milliseconds from connect to the last
    byte read."""
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        # A browser's Accept would get the API's browsable HTML: an API client asks for JSON.
        accept = "application/json" if url.startswith("/api/") else "text/html,*/*;q=0.8"
        conn.request("GET", url, headers={"Cookie": cookie, "Accept": accept})
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    return response.status, body, (time.perf_counter() - t0) * 1000


def measure(server: Server, cookie: str, url: str, requests: int) -> dict[str, Any]:
    """One warm-up, then ``requests`` timed GETs: median and p95 in ms, SQL queries per request
    (the largest), and the size of the last body. A redirect (to the login page) is a failure."""
    times: list[float] = []
    queries: list[int] = []
    for k in range(requests + 1):
        status, body, ms = get(server, url, cookie)
        if status != 200:
            raise BenchError(f"GET {url} answered {status}: {body[:200]!r}")
        if k:  # the first one warms the caches
            times.append(ms)
            queries.append(server.app.queries)
    times.sort()
    p95 = times[min(len(times) - 1, math.ceil(0.95 * len(times)) - 1)]
    return {
        "url": url,
        "requests": requests,
        "median_ms": round(statistics.median(times), 1),
        "p95_ms": round(p95, 1),
        "queries": max(queries),
        "bytes": len(body),
    }


def urls(prefix: str, made: dict[str, Any], queues_in_database: int = 0) -> dict[str, str]:
    """The pages and endpoints measured, by name (``KEYS`` says which are WORKLOADS.md's)."""
    some_queue = made["queues"][len(made["queues"]) // 2]
    # A page past the first where there is one (25 rows a page).
    page = max(1, min(3, math.ceil(queues_in_database / 25)))
    big = PAGE_SIZES[1]
    return {
        # WORKLOADS.md's keys
        "dashboard": "/",
        "queue_list": "/queues/",
        f"queue_list_per_page_{big}": f"/queues/?per_page={big}",
        "job_list": "/gateway/jobs/",
        "api_queues": "/api/queues/",
        "propagation_list": "/propagations/",
        # The graph's data for a name filter: one multi-consumer queue table's queues, their
        # propagations and those propagations' other ends.
        "topology_filtered": f"/propagations/topology/?format=json&q={prefix}_T000_",
        # more of the console, fewer requests each
        "queue_list_filtered": f"/queues/?q={prefix}_T000&multiple_consumers=true",
        "queue_list_sorted": "/queues/?sort=-depth_ready",
        "queue_list_sorted_name": f"/queues/?sort=-name&page={page}",
        "queue_table_list": "/queues/tables/",
        "queue_table_detail": f"/queues/tables/{made['tables'][0]}/",
        "queue_detail": f"/queues/{some_queue}/",
        "status_dba_queues": f"/status/?view=dba_queues&page={page}",
        "status_dba_queue_tables": "/status/?view=dba_queue_tables",
        "status_mgw_jobs": "/status/?view=mgw_jobs",
        "job_list_per_page_100": "/gateway/jobs/?per_page=100",
        "foreign_queue_list": "/gateway/foreign-queues/",
        "link_list": "/gateway/links/",
        "gateway_dashboard": "/gateway/",
        "propagation_list_per_page_100": "/propagations/?per_page=100",
        "topology_json": "/propagations/topology/?format=json",
        "api_propagations": "/api/propagations/",
        "api_gateway_jobs": "/api/gateway/jobs/",
        "metrics": "/metrics",
        "api_rates": "/api/rates/",
    }


# Extra keys, medians of REQUESTS as well: the MGW_JOBS status view (Oracle's view under its own
# name; ``job_list_ms_p50`` is the gateway's job list, the page with MGW_JOBS' columns and the
# actions) and the queue list at the larger page size.
EXTRA_KEYS = {
    "job_status_view_ms_p50": "status_mgw_jobs",
    f"queue_list_per_page_{PAGE_SIZES[1]}_ms_p50": f"queue_list_per_page_{PAGE_SIZES[1]}",
}


def figures(pages: dict[str, Any]) -> dict[str, Any]:
    """WORKLOADS.md's keys from the measured pages, and the queue list's queries at both sizes."""
    out: dict[str, Any] = {
        key: pages[page]["median_ms"] for key, page in {**KEYS, **EXTRA_KEYS}.items()
    }
    small, big = PAGE_SIZES
    at = {
        small: pages["queue_list"]["queries"],
        big: pages[f"queue_list_per_page_{big}"]["queries"],
    }
    out["queries_per_list_page"] = at[small]
    out[f"queries_per_list_page_at_{small}"] = at[small]
    out[f"queries_per_list_page_at_{big}"] = at[big]
    return out


def run(
    *,
    scale: float = 1.0,
    baseline: bool = False,
    log: Log = print,
    requests: int = REQUESTS,
    extra_requests: int = EXTRA_REQUESTS,
) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.contrib.sessions.models import Session

    from core.models import ChangeLogEntry
    from queues.models import Queue, QueueTable

    del baseline  # no plain-table side: the figures are the pages' own
    prefix = f"BENCHC_{secrets.token_hex(4).upper()}"
    sizes = sizes_for(scale)
    out: dict[str, Any] = {"suite": "console", "scale": scale, "prefix": prefix, **sizes}
    log(
        f"console benchmark under {prefix} (scale {scale}: {sizes['queues']} queues in "
        f"{sizes['queue_tables']} queue tables, {sizes['propagations']} propagations, "
        f"{sizes['gateway_jobs']} gateway jobs)"
    )
    first_log_id = ChangeLogEntry.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    user = get_user_model().objects.create_superuser(
        username=prefix.lower(), password=secrets.token_urlsafe(16)
    )
    session_key = ""
    try:
        t0 = time.perf_counter()
        made = build(prefix, scale, user, log)
        out["build_s"] = round(time.perf_counter() - t0, 1)
        out.update(made["timings"])
        for kind in ("subscribers", "links", "foreign_queues"):
            out[kind] = made[kind]
        out["propagations"], out["gateway_jobs"] = made["propagations"], made["gateway_jobs"]
        out["rule_sets"] = len(made["rule_sets"])
        # Everything the pages see, the suite's own and whatever else the database holds.
        out["queues_in_database"] = Queue.objects.count()
        out["queue_tables_in_database"] = QueueTable.objects.count()
        log(f"  built in {out['build_s']} s; {out['queues_in_database']} queues in the database")
        with connection.cursor() as cur:
            cur.execute("ANALYZE")  # fresh statistics, as autovacuum would give a while later
        cookie, session_key = session_cookie(user)
        pages: dict[str, Any] = {}
        keyed = {*KEYS.values(), *EXTRA_KEYS.values()}
        with Server() as server:
            log(f"  serving console.wsgi on 127.0.0.1:{server.port} (wsgiref, one thread)")
            for name, url in urls(prefix, made, out["queues_in_database"]).items():
                n = requests if name in keyed else extra_requests
                pages[name] = p = measure(server, cookie, url, n)
                log(
                    f"  {name:<30} median {p['median_ms']:>8.1f} ms  p95 {p['p95_ms']:>8.1f} ms"
                    f"  {p['queries']:>3} queries  {p['bytes']:>10,} bytes  ({n} GETs)"
                )
        out.update(figures(pages))
        out["pages"] = pages
        out["requests_per_key"] = requests
        out["requests_per_extra_url"] = extra_requests
        out["slowest_median_ms"] = max(p["median_ms"] for p in pages.values())
    finally:
        t0 = time.perf_counter()
        if session_key:
            Session.objects.filter(session_key=session_key).delete()
        teardown(prefix, user, first_log_id, log)
        out["teardown_s"] = round(time.perf_counter() - t0, 1)
    out["left_behind"] = left_behind(prefix)
    out["targets"] = targets.console_check(out)
    log("targets of issue 16 (reported, not enforced):")
    for line in targets.report_lines(out["targets"]):
        log(line)
    return out
