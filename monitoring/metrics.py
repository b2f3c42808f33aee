"""The /metrics collector: Prometheus's text format over the monitoring snapshot.

A custom collector (not module-level Gauges updated as things happen): every scrape reads the
database once per metric family, so the numbers are the ones the console's pages show, whichever
process (web, worker, agent) changed them, and a scrape costs the same whatever the number of
queues. Enumerations (a propagation's state, a job's status, an agent's status) are one series
per object, labelled with the current value, at 1: a series per possible value and object would
multiply 10,000 queues' worth of series by eleven; ``count by (state) (...)`` gives the totals.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.utils import timezone
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gateway.choices import AgentPing
from monitoring import selectors
from monitoring.selectors import PENDING_STATES


def _queue_families() -> Iterator[Metric]:
    rows = selectors.queue_counters()
    labels = ["queue", "queue_table"]
    depth = GaugeMetricFamily(
        "aq_queue_depth", "Messages a consumer may still get (READY + WAITING).", labels=labels
    )
    messages = GaugeMetricFamily(
        "aq_queue_messages", "Messages in the queue per state.", labels=[*labels, "state"]
    )
    enqueued = CounterMetricFamily(
        "aq_queue_enqueued", "Messages enqueued since the queue was created.", labels=labels
    )
    dequeued = CounterMetricFamily(
        "aq_queue_dequeued", "Messages dequeued since the queue was created.", labels=labels
    )
    for row in rows:
        key = [row["name"], row["queue_table__name"]]
        by_state = {s: row[f] for s, f in selectors.DEPTH_FIELDS.items()}
        depth.add_metric(key, sum(by_state[s] for s in PENDING_STATES))
        for state, n in by_state.items():
            messages.add_metric([*key, state], n)
        enqueued.add_metric(key, row["enqueued"])
        dequeued.add_metric(key, row["dequeued"])
    queues = GaugeMetricFamily("aq_queues", "Queues defined.")
    queues.add_metric([], len(rows))
    yield from (queues, depth, messages, enqueued, dequeued)


def _propagation_families() -> Iterator[Metric]:
    rows = selectors.propagation_counters()
    now = timezone.now()
    labels = ["propagation", "source", "destination"]
    backlog = GaugeMetricFamily(
        "aq_propagation_backlog",
        "Messages the source still keeps for the propagation.",
        labels=labels,
    )
    oldest = GaugeMetricFamily(
        "aq_propagation_backlog_oldest_age_seconds",
        "Age of the next message the propagation will take (0 with no backlog).",
        labels=labels,
    )
    propagated = CounterMetricFamily(
        "aq_propagation_propagated",
        "Messages propagated so far, the running window included (V$PROPAGATION_SENDER).",
        labels=labels,
    )
    failures = GaugeMetricFamily(
        "aq_propagation_failures",
        "Consecutive failures of the schedule (reset by a successful run).",
        labels=labels,
    )
    state = GaugeMetricFamily(
        "aq_propagation_state",
        "The propagation's state as the console shows it (1, labelled with the state).",
        labels=[*labels, "state"],
    )
    for row in rows:
        key = [row["name"], row["source_queue__name"], row["destination"]]
        backlog.add_metric(key, row["backlog"] or 0)
        age = (now - row["oldest_backlog"]).total_seconds() if row["oldest_backlog"] else 0.0
        oldest.add_metric(key, max(age, 0.0))
        propagated.add_metric(key, row["propagated"])
        failures.add_metric(key, row["schedule__failures"] or 0)
        state.add_metric([*key, row["state"]], 1)
    yield from (backlog, oldest, propagated, failures, state)


def _gateway_families() -> Iterator[Metric]:
    labels = ["job", "direction", "link", "agent"]
    propagated = CounterMetricFamily(
        "aq_mgw_job_propagated", "Messages the gateway job propagated (MGW_JOBS).", labels=labels
    )
    exceptions = CounterMetricFamily(
        "aq_mgw_job_exception_messages",
        "Messages the gateway job moved to its exception queue.",
        labels=labels,
    )
    failures = GaugeMetricFamily(
        "aq_mgw_job_failures", "Consecutive failures of the gateway job.", labels=labels
    )
    status = GaugeMetricFamily(
        "aq_mgw_job_status",
        "The job's status (READY, RETRY, FAILED, DELETE_PENDING) as a label, at 1.",
        labels=[*labels, "status", "enabled"],
    )
    for row in selectors.gateway_job_counters():
        key = [row["job_name"], row["propagation_type"], row["link_name"], row["agent_name"]]
        propagated.add_metric(key, row["propagated_msgs"])
        exceptions.add_metric(key, row["exceptionq_msgs"])
        failures.add_metric(key, row["failures"])
        status.add_metric([*key, row["status"], row["enabled"].lower()], 1)
    agent_status = GaugeMetricFamily(
        "aq_mgw_agent_status",
        "The agent's status (MGW_GATEWAY.AGENT_STATUS) as a label, at 1.",
        labels=["agent", "status"],
    )
    agent_up = GaugeMetricFamily(
        "aq_mgw_agent_up",
        "1 when the agent's process answers (AGENT_PING REACHABLE), else 0.",
        labels=["agent"],
    )
    for row in selectors.gateway_agents():
        agent_status.add_metric([row["agent_name"], row["agent_status"]], 1)
        agent_up.add_metric([row["agent_name"]], int(row["agent_ping"] == AgentPing.REACHABLE))
    yield from (propagated, exceptions, failures, status, agent_status, agent_up)


def _worker_families() -> Iterator[Metric]:
    up = GaugeMetricFamily(
        "aq_worker_up", "1 when the Celery worker's heartbeat is recent.", labels=["worker"]
    )
    seen = GaugeMetricFamily(
        "aq_worker_last_seen_timestamp_seconds",
        "When the worker's last heartbeat arrived (Unix time).",
        labels=["worker"],
    )
    runs = GaugeMetricFamily(
        "aq_worker_propagation_runs", "Propagation runs the worker holds now.", labels=["worker"]
    )
    for w in selectors.worker_liveness():
        up.add_metric([w["hostname"]], int(w["alive"]))
        seen.add_metric([w["hostname"]], w["last_seen"].timestamp())
        runs.add_metric([w["hostname"]], w["runs"])
    yield from (up, seen, runs)


def _spark_families() -> Iterator[Metric]:
    jobs = GaugeMetricFamily("aq_spark_jobs", "Spark bulk jobs per state.", labels=["state"])
    for state, n in selectors.spark_jobs_by_state().items():
        jobs.add_metric([state], n)
    yield jobs


class ConsoleCollector(Collector):
    """Everything /metrics shows; one pass over the database per scrape."""

    def collect(self) -> Iterator[Metric]:
        yield from _queue_families()
        yield from _propagation_families()
        yield from _gateway_families()
        yield from _worker_families()
        yield from _spark_families()
