"""``bench console``: the pages and API an operator uses, over a topology of 10,000 queues.

The topology (at scale 1: 10,000 normal queues in 100 queue tables, a quarter of them
multi-consumer with subscribers, propagations between them under rule sets) is built through
the services under a unique prefix; its build is timed apart and is not a figure. Each URL is
then asked ``REQUESTS`` times through Django's test Client, logged in as an administrator the
suite creates: the time in the Client (the server's work without a network: URL resolution,
middleware, view, queries, rendering) and the SQL queries of each request
(``CaptureQueriesContext``). Everything the suite made is dropped at the end, also on failure.
"""

from __future__ import annotations

import math
import secrets
import statistics
import time
from collections.abc import Callable
from typing import Any

from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext

from console.bench.workload import BenchError

Log = Callable[[str], None]

FULL_QUEUES = 10_000
QUEUES_PER_TABLE = 100
MULTI_CONSUMER_EVERY = 4  # every 4th queue table is multi-consumer
SUBSCRIBERS_PER_MC_TABLE = 10  # on the first queues of each multi-consumer table
PROPAGATIONS_PER_MC_TABLE = 4  # queue i -> queue i + 50 of the same table
RULE_SETS = 10
REQUESTS = 7  # timed requests per URL, after one warm-up


def sizes_for(scale: float) -> dict[str, int]:
    """Normal queues and queue tables at ``scale`` (at least one table of two queues)."""
    queues = max(2, round(FULL_QUEUES * scale))
    tables = max(1, math.ceil(queues / QUEUES_PER_TABLE))
    return {"queues": queues, "queue_tables": tables}


def _names(prefix: str, t: int, i: int) -> str:
    return f"{prefix}_T{t:03d}_Q{i:05d}"


def build(prefix: str, scale: float, user: Any, log: Log) -> dict[str, Any]:
    """The topology, through the services (one transaction per queue table, so a table's 100
    queue_create calls commit once). Returns what it made, for the URLs and the teardown."""
    from jobs import services as js
    from queues import services as qs
    from rules import services as rs

    sizes = sizes_for(scale)
    rule_sets = [
        rs.rule_set_create(user=user, name=f"{prefix}_RS{k:02d}")
        for k in range(min(RULE_SETS, sizes["queue_tables"]))
    ]
    made: dict[str, Any] = {"tables": [], "queues": [], "propagations": 0, "subscribers": 0}
    left = sizes["queues"]
    for t in range(sizes["queue_tables"]):
        multi = t % MULTI_CONSUMER_EVERY == 0
        n = min(QUEUES_PER_TABLE, left)
        left -= n
        with transaction.atomic():
            qt = qs.queue_table_create(
                user=user, name=f"{prefix}_T{t:03d}", multiple_consumers=multi
            )
            queues = [
                qs.queue_create(user=user, name=_names(prefix, t, i), queue_table=qt)
                for i in range(n)
            ]
            if multi:
                for q in queues[:SUBSCRIBERS_PER_MC_TABLE]:
                    qs.subscriber_add(user=user, queue=q, name=f"{prefix}_S{q.pk}")
                    made["subscribers"] += 1
                half = max(1, n // 2)
                for k in range(min(PROPAGATIONS_PER_MC_TABLE, n - half)):
                    js.propagation_create(
                        user=user,
                        name=f"{prefix}_P{t:03d}_{k}",
                        source_queue=queues[k],
                        destination_queue=queues[k + half],
                        positive_rule_set=rule_sets[(t + k) % len(rule_sets)],
                        schedule=False,
                    )
                    made["propagations"] += 1
        made["tables"].append(qt.pk)
        made["queues"].extend(q.pk for q in queues)
        if t % 10 == 9:
            log(f"  built {t + 1} of {sizes['queue_tables']} queue tables")
    made["rule_sets"] = [r.pk for r in rule_sets]
    return made


def teardown(prefix: str, user: Any, first_log_id: int, log: Log) -> dict[str, int]:
    """Drop everything under ``prefix`` through the services, then the change-log rows the
    build and the drop wrote, then the user. Each part runs even if an earlier one failed."""
    from django.contrib.auth import get_user_model

    from core.models import ChangeLogEntry
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

    for p in Propagation.objects.filter(name__startswith=prefix + "_"):
        attempt(p.name, lambda p=p: js.propagation_delete(user=user, propagation=p))
    for qt in QueueTable.objects.filter(name__startswith=prefix + "_"):
        attempt(qt.name, lambda qt=qt: qs.queue_table_delete(user=user, queue_table=qt))
    for r in RuleSet.objects.filter(name__startswith=prefix + "_"):
        attempt(r.name, lambda r=r: rs.rule_set_delete(user=user, rule_set=r))
    moves = QueueTableOwnerMove.objects.filter(queue_table_name__startswith=prefix + "_")
    moves.delete()
    # The services' own change-log rows (subscriber_add inside propagation_create logs as the
    # system, so also by the object's name).
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
    from jobs.models import Propagation
    from queues.models import Queue, QueueTable, Subscriber
    from rules.models import RuleSet

    return sum(
        m.objects.filter(name__startswith=prefix + "_").count()
        for m in (QueueTable, Queue, Subscriber, Propagation, RuleSet)
    )


def measure(client: Client, url: str, requests: int) -> dict[str, Any]:
    """One warm-up, then ``requests`` timed requests: median and p95 in ms, queries per
    request (the largest), status and size of the last answer."""
    response = client.get(url)
    if response.status_code != 200:
        raise BenchError(f"GET {url} answered {response.status_code}.")
    times: list[float] = []
    queries: list[int] = []
    for _ in range(requests):
        with CaptureQueriesContext(connection) as ctx:
            t0 = time.perf_counter()
            response = client.get(url)
            # Streaming and lazy answers are read inside the clock.
            body = response.getvalue() if response.streaming else response.content
            times.append((time.perf_counter() - t0) * 1000)
        queries.append(len(ctx.captured_queries))
        if response.status_code != 200:
            raise BenchError(f"GET {url} answered {response.status_code}.")
    times.sort()
    p95 = times[min(len(times) - 1, math.ceil(0.95 * len(times)) - 1)]
    return {
        "url": url,
        "median_ms": round(statistics.median(times), 1),
        "p95_ms": round(p95, 1),
        "queries": max(queries),
        "bytes": len(body),
    }


def urls(prefix: str, made: dict[str, Any], queues_in_database: int = 0) -> dict[str, str]:
    """The pages and endpoints measured, by key."""
    some_queue = made["queues"][len(made["queues"]) // 2]
    # A page past the first where there is one (25 rows a page).
    page = max(1, min(3, math.ceil(queues_in_database / 25)))
    return {
        "dashboard": "/",
        "queue_list": "/queues/",
        "queue_list_filtered": f"/queues/?q={prefix}_T000&multiple_consumers=true",
        "queue_list_sorted": "/queues/?sort=-depth_ready",
        "queue_list_sorted_name": f"/queues/?sort=-name&page={page}",
        "queue_table_list": "/queues/tables/",
        "queue_table_detail": f"/queues/tables/{made['tables'][0]}/",
        "queue_detail": f"/queues/{some_queue}/",
        "status_dba_queues": f"/status/?view=dba_queues&page={page}",
        "status_dba_queue_tables": "/status/?view=dba_queue_tables",
        "propagation_list": "/propagations/",
        "topology_json": "/propagations/topology/?format=json",
        "metrics": "/metrics",
        "api_queues": "/api/queues/",
        "api_rates": "/api/rates/",
    }


def run(
    *, scale: float = 1.0, baseline: bool = False, log: Log = print, requests: int = REQUESTS
) -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    from core.models import ChangeLogEntry
    from queues.models import Queue, QueueTable

    del baseline  # no plain-table side: the figures are the pages' own
    prefix = f"BENCHC_{secrets.token_hex(4).upper()}"
    sizes = sizes_for(scale)
    out: dict[str, Any] = {"suite": "console", "scale": scale, "prefix": prefix, **sizes}
    log(
        f"console benchmark under {prefix} (scale {scale}: {sizes['queues']} queues in "
        f"{sizes['queue_tables']} queue tables)"
    )
    first_log_id = ChangeLogEntry.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    user = get_user_model().objects.create_superuser(
        username=prefix.lower(), password=secrets.token_urlsafe(16)
    )
    try:
        t0 = time.perf_counter()
        made = build(prefix, scale, user, log)
        out["build_s"] = round(time.perf_counter() - t0, 1)
        out["propagations"] = made["propagations"]
        out["subscribers"] = made["subscribers"]
        out["rule_sets"] = len(made["rule_sets"])
        # Everything the pages see, the suite's own and whatever else the database holds.
        out["queues_in_database"] = Queue.objects.count()
        out["queue_tables_in_database"] = QueueTable.objects.count()
        log(f"  built in {out['build_s']} s; {out['queues_in_database']} queues in the database")
        with connection.cursor() as cur:
            cur.execute("ANALYZE")  # fresh statistics, as autovacuum would give a while later
        client = Client()
        client.force_login(user)
        pages: dict[str, Any] = {}
        for key, url in urls(prefix, made, out["queues_in_database"]).items():
            pages[key] = measure(client, url, requests)
            p = pages[key]
            log(
                f"  {key:<26} median {p['median_ms']:>8.1f} ms  p95 {p['p95_ms']:>8.1f} ms  "
                f"{p['queries']:>3} queries  {p['bytes']:>9,} bytes"
            )
        out["pages"] = pages
        out["requests_per_url"] = requests
        out["slowest_median_ms"] = max(p["median_ms"] for p in pages.values())
    finally:
        t0 = time.perf_counter()
        teardown(prefix, user, first_log_id, log)
        out["teardown_s"] = round(time.perf_counter() - t0, 1)
    out["left_behind"] = left_behind(prefix)
    return out
