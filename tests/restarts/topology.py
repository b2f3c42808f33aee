"""What the restart tests move messages through, built by ``manage.py shell`` against the private
database (the test process itself never opens Django's connection there).

A propagation PROP_SRC → PROP_DST with the default schedule (a window open now, no end), and a
gateway round trip GW_OUT → RabbitMQ queue → GW_IN: an OUTBOUND job with a foreign log queue (so
a batch in doubt after a crash is recovered, not sent twice) and an INBOUND job reading it back.
Prints one JSON line: the ids and the API token the test needs."""

from __future__ import annotations

import json
import os


def build() -> None:
    from django.contrib.auth.models import Group, User
    from rest_framework.authtoken.models import Token

    from core.choices import Role
    from gateway import services as gw
    from jobs import services as js
    from queues import services as qs

    admin = User.objects.create_superuser(username="restarts", email="", password="pw-restarts")
    admin.groups.add(Group.objects.get_or_create(name=Role.ADMINISTRATOR)[0])
    token = Token.objects.create(user=admin).key

    mc = qs.queue_table_create(
        user=admin, name="QT_RS_MC", sort_order="enq_time", multiple_consumers=True
    )
    sc = qs.queue_table_create(user=admin, name="QT_RS_SC", sort_order="enq_time")
    prop_src = qs.queue_create(user=admin, name="PROP_SRC", queue_table=mc)
    prop_dst = qs.queue_create(user=admin, name="PROP_DST", queue_table=sc)
    gw_out = qs.queue_create(user=admin, name="GW_OUT", queue_table=sc)
    gw_in = qs.queue_create(user=admin, name="GW_IN", queue_table=sc)
    prop = js.propagation_create(
        user=admin, name="RS_PROP", source_queue=prop_src, destination_queue=prop_dst
    )

    agent = gw.ensure_default_agent()
    # STARTUP refuses an agent without its agent user (spec/gateway.md §2.3); the role exists in
    # the private server (created by the test before this runs).
    agent = gw.agent_alter(
        user=admin,
        agent=agent,
        username=os.environ["RS_AGENT_USER"],
        password=os.environ["RS_AGENT_PASSWORD"],
        max_threads=2,
    )
    link = gw.link_create(
        user=admin,
        name="RS_RABBIT",
        link_type="AMQP",
        properties={"host": "127.0.0.1", "port": 5672, "username": "guest"},
        password="guest",
        outbound_log_queue=os.environ["RS_AMQP_LOG"],
    )
    gw.foreign_queue_register(
        user=admin, name="RS_BUS", link=link, provider_queue=os.environ["RS_AMQP_BUS"]
    )
    gw.job_create(
        user=admin,
        job_name="RS_OUT",
        propagation_type="OUTBOUND",
        source="GW_OUT",
        destination="RS_BUS@RS_RABBIT",
        poll_interval=0.2,
    )
    gw.job_create(
        user=admin,
        job_name="RS_IN",
        propagation_type="INBOUND",
        source="RS_BUS@RS_RABBIT",
        destination="GW_IN",
        poll_interval=0.2,
    )
    gw.agent_startup(user=admin, agent=agent)
    print(
        json.dumps(
            {
                "token": token,
                "agent": agent.pk,
                "propagation": prop.pk,
                "queues": {q.name: q.pk for q in (prop_src, prop_dst, gw_out, gw_in)},
            }
        )
    )
