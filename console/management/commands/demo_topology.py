"""Load the demo topology the console starts with, through the queue services (``user=None``).

The demo is declared in the constants below: queue tables covering every sort order, a typed
queue table (ORDER, with a JSON Schema), a multi-consumer queue with two subscribers and three
propagations (rule-routed, negative-ruled, windowed), and a few
dozen messages, some delayed, some prioritised, some expiring, two in an exception queue after
failed attempts and one row/DDL change-record stream. Running the command again does nothing once
any demo queue table exists, so ``scripts/run-console.sh`` calls it on every start.

A second site (console/demo_site.py): another database on the same PostgreSQL server, migrated
with its own global name and holding EVENTS_IN; the demo links to it (DEMO_SITE2) and
propagates new orders from EVENTS to EVENTS_IN@DEMO_SITE2, so the first run shows messages
crossing databases once the worker runs. Where the server refuses to create the database, the
demo goes on without it and says so (``--without-second-site`` skips it on purpose).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from queues import engine, services
from queues.choices import SortOrder
from queues.models import Queue, QueueTable

# --- the demo, as data ---------------------------------------------------------------------------

ORDER_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "ORDER",
    "type": "object",
    "required": ["order_id", "customer", "items", "total", "currency"],
    "properties": {
        "order_id": {"type": "integer", "minimum": 1},
        "customer": {"type": "string", "minLength": 1},
        "region": {"type": "string", "enum": ["EMEA", "AMER", "APAC"]},
        "items": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["sku", "qty"],
                "properties": {
                    "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{3}$"},
                    "qty": {"type": "integer", "minimum": 1},
                },
            },
        },
        "total": {"type": "number", "minimum": 0},
        "currency": {"type": "string", "enum": ["EUR", "USD", "GBP"]},
    },
}


@dataclass(frozen=True)
class DemoQueue:
    name: str
    comment: str
    max_retries: int = 5
    retry_delay: float = 0.0
    retention_time: float = 0.0
    subscribers: tuple[str, ...] = ()


@dataclass(frozen=True)
class DemoQueueTable:
    name: str
    sort_order: str
    comment: str
    queues: tuple[DemoQueue, ...]
    multiple_consumers: bool = False
    payload_type: str = "ANY"
    payload_schema: dict[str, Any] | None = None


TOPOLOGY: tuple[DemoQueueTable, ...] = (
    DemoQueueTable(
        name="ORDERS_QT",
        sort_order=SortOrder.ENQ_TIME,
        payload_type="ORDER",
        payload_schema=ORDER_SCHEMA,
        comment="Demo: typed ORDER payloads in arrival order.",
        queues=(
            DemoQueue(
                "ORDERS",
                "Incoming orders; three failed attempts send one to AQ$_ORDERS_QT_E.",
                max_retries=3,
            ),
            DemoQueue(
                "ORDERS_BACKLOG", "Orders waiting for stock.", max_retries=10, retry_delay=60
            ),
        ),
    ),
    DemoQueueTable(
        name="ALERTS_QT",
        sort_order=SortOrder.PRIORITY,
        comment="Demo: operational alerts, most urgent (lowest number) first.",
        queues=(DemoQueue("ALERTS", "Alerts from the monitoring system."),),
    ),
    DemoQueueTable(
        name="LEDGER_QT",
        sort_order=SortOrder.COMMIT_TIME,
        comment="Demo: commit-time ordering; a transaction's messages share one commit number.",
        queues=(
            DemoQueue("LEDGER", "Account postings in commit order."),
            DemoQueue("CDC_CHANGES", "Row and DDL change records captured from SALES."),
        ),
    ),
    DemoQueueTable(
        name="EVENTS_QT",
        sort_order=SortOrder.PRIORITY_COMMIT_TIME,
        multiple_consumers=True,
        comment="Demo: multi-consumer publish/subscribe; each subscriber reads every event once.",
        queues=(
            DemoQueue(
                "EVENTS",
                "Business events for billing and shipping.",
                retention_time=3600,
                subscribers=("BILLING", "SHIPPING"),
            ),
        ),
    ),
    DemoQueueTable(
        name="GATEWAY_QT",
        sort_order=SortOrder.ENQ_TIME,
        comment="Demo: queues the Messaging Gateway moves to and from RabbitMQ.",
        queues=(
            DemoQueue("TO_RABBIT", "Sent to RabbitMQ's amq.topic (aq.in.demo) by job RABBIT_OUT."),
            DemoQueue("FROM_RABBIT", "Received from RabbitMQ (aq.in.#) by job RABBIT_IN."),
            DemoQueue("GW_EXCEPTIONS", "Messages the gateway could not convert."),
        ),
    ),
    DemoQueueTable(
        name="DOWNSTREAM_QT",
        sort_order=SortOrder.ENQ_TIME,
        comment="Demo: queues fed by propagations from EVENTS.",
        queues=(
            DemoQueue("BILLING_IN", "Payment events, propagated from EVENTS."),
            DemoQueue("AUDIT_IN", "Every event but new orders, propagated from EVENTS."),
            DemoQueue("ARCHIVE", "All events, propagated in hourly windows."),
        ),
    ),
)

# Propagations out of EVENTS: (name, destination, positive rule, negative rule, schedule).
# Created before the events are enqueued, so the source keeps each event for each of them.
PROPAGATIONS: tuple[tuple[str, str, str, str, dict[str, Any]], ...] = (
    ("EVENTS_TO_BILLING", "BILLING_IN", ":msg.event IN ('order_paid', 'refund_issued')", "", {}),
    ("EVENTS_TO_AUDIT", "AUDIT_IN", "", ":msg.event = 'order_placed'", {"latency": 1}),
    # Hourly ten-minute windows: between them it shows "waiting for window" and a backlog.
    ("EVENTS_TO_ARCHIVE", "ARCHIVE", "", "", {"duration": 600, "next_time": "0 * * * *"}),
)

# Orders whose every dequeue fails, so they land in the exception queue with MAX_RETRIES_EXCEEDED.
FAILING_ORDERS = ("ORD-1007", "ORD-1011")
# Events each subscriber has already consumed (the first two by BILLING, the first by SHIPPING):
# the first is then PROCESSED and kept for the queue's retention time.
CONSUMED_EVENTS = {"BILLING": 2, "SHIPPING": 1}

CUSTOMERS = ("ACME", "Globex", "Initech", "Umbrella", "Hooli", "Stark")
SKUS = ("BOL-100", "NUT-200", "GEA-310", "CAB-420", "PIP-530")
HOSTS = ("db01", "db02", "web01", "mq01")


def _order(rng: random.Random, order_id: int) -> dict[str, Any]:
    items = [{"sku": rng.choice(SKUS), "qty": rng.randint(1, 9)} for _ in range(rng.randint(1, 3))]
    return {
        "order_id": order_id,
        "customer": rng.choice(CUSTOMERS),
        "region": rng.choice(("EMEA", "AMER", "APAC")),
        "items": items,
        "total": round(sum(i["qty"] for i in items) * rng.uniform(4, 40), 2),
        "currency": rng.choice(("EUR", "USD", "GBP")),
    }


def demo_messages() -> dict[str, list[engine.NewMessage]]:
    """The demo's messages per queue. Seeded, so every install shows the same data."""
    rng = random.Random(2)
    orders = []
    for n in range(1001, 1013):
        corr = f"ORD-{n}"
        delay = {1004: 300.0, 1009: 3600.0}.get(n, 0.0)  # WAITING until due
        expiration = 120.0 if n in (1005, 1010) else None  # expire after two minutes if unread
        orders.append(
            engine.NewMessage(
                payload=_order(rng, n),
                type_name="ORDER",
                correlation=corr,
                sender="WEBSHOP",
                delay=delay,
                expiration=expiration,
                headers={"channel": "web"},
            )
        )
    backlog = [
        engine.NewMessage(
            payload=_order(rng, n),
            type_name="ORDER",
            correlation=f"ORD-{n}",
            sender="WEBSHOP",
            delay=900.0 if n == 901 else 0.0,
        )
        for n in range(900, 904)
    ]
    alerts = []
    for i in range(10):
        severity = rng.choice((1, 2, 3, 3, 4, 5, 5))
        alerts.append(
            engine.NewMessage(
                payload={
                    "host": rng.choice(HOSTS),
                    "severity": severity,
                    "text": (
                        "disk 91% full",
                        "replication lag 40 s",
                        "certificate expires soon",
                        "queue depth above 10k",
                        "login failures",
                    )[i % 5],
                },
                priority=severity,
                correlation=f"ALERT-{i + 1}",
                sender="MONITOR",
                delay=600.0 if i == 9 else 0.0,
            )
        )
    ledger = [
        engine.NewMessage(
            payload={
                "account": f"ACC-{100 + i % 3}",
                "amount": round(rng.uniform(-500, 500), 2),
                "posting": i + 1,
            },
            correlation=f"TX-{i // 3 + 1}",
            sender="LEDGER_APP",
        )
        for i in range(8)
    ]
    cdc = [
        engine.NewMessage(
            kind=engine.ROW_LCR,
            sender="CAPTURE_SALES",
            payload={
                "source_database_name": "SALES.EXAMPLE.COM",
                "command_type": cmd,
                "object_owner": "HR",
                "object_name": "EMPLOYEES",
                "tag": None,
                "transaction_id": f"7.{i}.1024",
                "old_values": old,
                "new_values": new,
            },
        )
        for i, (cmd, old, new) in enumerate(
            (
                ("INSERT", {}, {"EMPLOYEE_ID": 207, "LAST_NAME": "Lovelace", "SALARY": 9000}),
                (
                    "UPDATE",
                    {"EMPLOYEE_ID": 207, "SALARY": 9000},
                    {"EMPLOYEE_ID": 207, "SALARY": 9500},
                ),
                ("INSERT", {}, {"EMPLOYEE_ID": 208, "LAST_NAME": "Hopper", "SALARY": 9900}),
                ("DELETE", {"EMPLOYEE_ID": 150, "LAST_NAME": "Tucker"}, {}),
            )
        )
    ]
    cdc.append(
        engine.NewMessage(
            kind=engine.DDL_LCR,
            sender="CAPTURE_SALES",
            payload={
                "source_database_name": "SALES.EXAMPLE.COM",
                "command_type": "ALTER TABLE",
                "object_type": "TABLE",
                "object_owner": "HR",
                "object_name": "EMPLOYEES",
                "base_table_owner": "HR",
                "base_table_name": "EMPLOYEES",
                "ddl_text": "ALTER TABLE hr.employees ADD (bonus NUMBER(8,2))",
                "tag": None,
            },
        )
    )
    events = [
        engine.NewMessage(
            payload={"event": name, "order": f"ORD-{1001 + i}"},
            priority=pri,
            correlation=f"EV-{i + 1}",
            sender="WEBSHOP",
            recipients=("SHIPPING",) if name == "address_changed" else None,
        )
        for i, (name, pri) in enumerate(
            (
                ("order_placed", 2),
                ("order_paid", 1),
                ("order_placed", 2),
                ("address_changed", 3),
                ("order_paid", 1),
                ("order_cancelled", 1),
                ("order_placed", 2),
                ("refund_issued", 1),
            )
        )
    ]
    return {
        "ORDERS": orders,
        "ORDERS_BACKLOG": backlog,
        "ALERTS": alerts,
        "LEDGER": ledger,
        "CDC_CHANGES": cdc,
        "EVENTS": events,
    }


# --- loading -------------------------------------------------------------------------------------


@dataclass
class _Counts:
    messages: int = 0
    failed: list[str] = field(default_factory=list)


SECOND_SITE_LINK = "DEMO_SITE2"
# (name, positive rule): from EVENTS to EVENTS_IN at the second site.
REMOTE_PROPAGATION = ("EVENTS_TO_SITE2", ":msg.event = 'order_placed'")


class Command(BaseCommand):
    help = "Load the demo topology (queue tables, queues, subscribers, messages); idempotent."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--without-second-site",
            action="store_true",
            help="Do not create the second site, its database link and remote propagation.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        names = [qt.name for qt in TOPOLOGY]
        if QueueTable.objects.filter(name__in=names).exists():
            if self._give_the_default_agent_a_user():
                # A demo loaded before STARTUP needed an agent user: run-console starts it.
                self.stdout.write("DEFAULT_AGENT had no agent user; it runs as the console's.")
            if not options["without_second_site"] and self._add_second_site_later():
                return
            self.stdout.write("Demo topology already loaded; nothing to do.")
            return
        counts = _Counts()
        # Outside the transaction: another database, made by other processes, then a link whose
        # creation asks that site for its global name.
        link = None if options["without_second_site"] else self._second_site()
        with transaction.atomic():
            self._create_topology()
            self._create_propagations()
            if link is not None:
                self._create_remote_propagation(link)
            self._create_gateway()
            for queue, messages in demo_messages().items():
                services.message_enqueue(user=None, queue=queue, messages=messages)
                counts.messages += len(messages)
            counts.failed = self._fail_orders()
        # Commit-time queues give messages their order at COMMIT, so consume only after it.
        consumed = self._consume_events()
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo topology loaded: {len(TOPOLOGY)} queue tables, "
                f"{sum(len(qt.queues) for qt in TOPOLOGY)} queues, {counts.messages} messages "
                f"({len(counts.failed)} moved to an exception queue, "
                f"{consumed} event copies consumed)."
            )
        )
        if link is not None:
            self.stdout.write(
                f"Second site {link.remote_global_name} (database {link.database}): new orders "
                f"in EVENTS cross to EVENTS_IN@{link.name} when the propagation worker runs."
            )

    def _second_site(self) -> Any:
        """The second site's database, migrated, with its queue, and the link to it; None (with
        a printed note) when this server cannot hold it."""
        from console import demo_site
        from core.exceptions import DomainError
        from sites import services as site_services
        from sites.models import DatabaseLink

        if (link := DatabaseLink.objects.filter(name=SECOND_SITE_LINK).first()) is not None:
            return link
        self.stdout.write("Preparing the demo's second site (a database on the same server)...")
        try:
            site = demo_site.second_site_prepare()
            return site_services.database_link_create(
                user=None,
                name=SECOND_SITE_LINK,
                host=site.host,
                port=site.port,
                database=site.database,
                username=site.username,
                password=site.password,
                comment="Demo: the second site, a database on the same PostgreSQL server.",
            )
        except (demo_site.Skipped, DomainError) as exc:
            self.stdout.write(
                self.style.WARNING(f"No second site in the demo (remote part skipped): {exc}")
            )
            return None

    def _add_second_site_later(self) -> bool:
        """A demo loaded without its second site (before there was one, or on a server that
        refused CREATE DATABASE) gets it now, with two new orders to carry across."""
        from jobs.models import Propagation

        if Propagation.objects.filter(name=REMOTE_PROPAGATION[0]).exists():
            return False
        if not Queue.objects.filter(name="EVENTS").exists():
            return False
        link = self._second_site()
        if link is None:
            return False
        with transaction.atomic():
            self._create_remote_propagation(link)
            services.message_enqueue(
                user=None,
                queue="EVENTS",
                messages=[
                    engine.NewMessage(
                        payload={"event": "order_placed", "order": f"ORD-{n}"},
                        priority=2,
                        correlation=f"EV-{n}",
                        sender="WEBSHOP",
                    )
                    for n in (2001, 2002)
                ],
            )
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo topology already loaded; added its second site {link.remote_global_name}: "
                f"two new orders in EVENTS cross to EVENTS_IN@{link.name} when the worker runs."
            )
        )
        return True

    def _create_remote_propagation(self, link: Any) -> None:
        from jobs import services as jobs_services
        from rules import services as rules_services

        name, condition = REMOTE_PROPAGATION
        rs = rules_services.rule_set_create(user=None, name=f"{name}_POS")
        rule = rules_services.rule_create(user=None, name=f"{name}_RULE", condition=condition)
        rules_services.rule_set_add_rule(user=None, rule_set=rs, rule=rule)
        jobs_services.propagation_create(
            user=None,
            name=name,
            source_queue=Queue.objects.get(name="EVENTS"),
            destination_queue=f"EVENTS_IN@{link.name}",
            positive_rule_set=rs,
            latency=1,
        )

    def _create_propagations(self) -> None:
        from django.utils import timezone

        from jobs import services as jobs_services
        from rules import services as rules_services

        def rule_set(name: str, condition: str) -> Any:
            if not condition:
                return None
            rs = rules_services.rule_set_create(user=None, name=name)
            rule = rules_services.rule_create(user=None, name=f"{name}_RULE", condition=condition)
            rules_services.rule_set_add_rule(user=None, rule_set=rs, rule=rule)
            return rs

        events = Queue.objects.get(name="EVENTS")
        for name, dest, positive, negative, schedule in PROPAGATIONS:
            start = timezone.now().replace(minute=0, second=0, microsecond=0)
            jobs_services.propagation_create(
                user=None,
                name=name,
                source_queue=events,
                destination_queue=Queue.objects.get(name=dest),
                positive_rule_set=rule_set(f"{name}_POS", positive),
                negative_rule_set=rule_set(f"{name}_NEG", negative),
                start_time=start if schedule.get("next_time") else None,
                **schedule,
            )

    def _give_the_default_agent_a_user(self) -> bool:
        """DEFAULT_AGENT runs as the console's own database role unless it has a user."""
        from gateway import mgwadm
        from gateway.models import Agent
        from gateway.selectors import console_database_role

        if Agent.objects.filter(name=mgwadm.DEFAULT_AGENT).exclude(username="").exists():
            return False
        username, password = console_database_role()
        mgwadm.alter_agent(agent_name=mgwadm.DEFAULT_AGENT, username=username, password=password)
        return True

    def _create_gateway(self) -> None:
        """Links to the brokers these machines run on loopback, and a round trip through
        RabbitMQ: RABBIT_OUT publishes TO_RABBIT's messages to amq.topic with routing key
        aq.in.demo, RABBIT_IN reads aq.in.# back into FROM_RABBIT. A broker that is not running
        shows as a failing test connection and jobs in RETRY. Written with the DBMS_MGWADM
        facade, as an administrator's script would be. DEFAULT_AGENT gets an agent user (STARTUP
        refuses an agent without one): the console's own database role, so the agent may read
        and write what the console does."""
        from gateway import mgwadm

        self._give_the_default_agent_a_user()
        # Its worker (Celery, Django and four client libraries) holds about 100 MB: at Oracle's
        # 64 MB default the agent would warn of low memory ([436]) at every start.
        mgwadm.alter_agent(agent_name=mgwadm.DEFAULT_AGENT, max_memory=256)

        links = {
            "RABBIT": ("AMQP", {"host": "127.0.0.1", "port": 5672, "username": "guest"}, "guest"),
            "MOSQUITTO": ("MQTT", {"host": "127.0.0.1", "port": 1883}, None),
            "NATS_JS": ("NATS", {"host": "127.0.0.1", "port": 4222}, None),
            "REDIS_STREAMS": ("REDIS", {"host": "127.0.0.1", "port": 6379, "db": 2}, None),
        }
        for name, (link_type, props, password) in links.items():
            properties = {"link_type": link_type, **props}
            if password:
                properties["password"] = password
            mgwadm.create_msgsystem_link(
                linkname=name, properties=properties, comment=f"Demo: {link_type} on loopback."
            )
        mgwadm.register_foreign_queue(
            name="AQ_OUT",
            linkname="RABBIT",
            provider_queue="amq.topic",
            domain=mgwadm.DOMAIN_TOPIC,
            options={"RoutingKey": "aq.in.demo"},
        )
        mgwadm.register_foreign_queue(
            name="AQ_IN",
            linkname="RABBIT",
            provider_queue="amq.topic",
            domain=mgwadm.DOMAIN_TOPIC,
            options={"BindingKey": "aq.in.#"},
        )
        mgwadm.create_job(
            job_name="RABBIT_IN",
            propagation_type=mgwadm.INBOUND_PROPAGATION,
            source="AQ_IN@RABBIT",
            destination="FROM_RABBIT",
            comments="Demo: RabbitMQ (aq.in.#) to our queue.",
        )
        mgwadm.create_job(
            job_name="RABBIT_OUT",
            propagation_type=mgwadm.OUTBOUND_PROPAGATION,
            source="TO_RABBIT",
            destination="AQ_OUT@RABBIT",
            exception_queue="GW_EXCEPTIONS",
            comments="Demo: our queue to RabbitMQ (aq.in.demo), read back by RABBIT_IN.",
        )
        to_rabbit = Queue.objects.get(name="TO_RABBIT")
        services.message_enqueue(
            user=None,
            queue=to_rabbit,
            messages=[
                engine.NewMessage(payload={"alert": i, "text": f"demo {i}"}) for i in range(5)
            ],
        )

    def _create_topology(self) -> None:
        for spec in TOPOLOGY:
            qt = services.queue_table_create(
                user=None,
                name=spec.name,
                sort_order=spec.sort_order,
                multiple_consumers=spec.multiple_consumers,
                payload_type=spec.payload_type,
                payload_schema=spec.payload_schema,
                comment=spec.comment,
            )
            for q in spec.queues:
                queue = services.queue_create(
                    user=None,
                    name=q.name,
                    queue_table=qt,
                    max_retries=q.max_retries,
                    retry_delay=q.retry_delay,
                    retention_time=q.retention_time,
                    comment=q.comment,
                )
                for sub in q.subscribers:
                    services.subscriber_add(user=None, queue=queue, name=sub)

    def _fail_orders(self) -> list[str]:
        """Lease each failing order and release it as failed until the engine gives up on it."""
        moved = []
        for corr in FAILING_ORDERS:
            request = services.DequeueRequest(mode=engine.LOCKED, correlation=corr)
            for _ in range(100):  # bounded: max_retries + 1 failures move it
                got = services.message_dequeue(user=None, queue="ORDERS", request=request)
                if not got:
                    break
                services.message_release(
                    user=None,
                    queue="ORDERS",
                    msgid=got[0].id,
                    lock_token=str(got[0].lock_token),
                )
            moved.append(corr)
        return moved

    def _consume_events(self) -> int:
        total = 0
        with transaction.atomic():
            for consumer, n in CONSUMED_EVENTS.items():
                request = services.DequeueRequest(consumer_name=consumer, batch=n)
                total += len(services.message_dequeue(user=None, queue="EVENTS", request=request))
        return total
