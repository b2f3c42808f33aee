"""README command (1) loads the demo topology: it must load on an empty database (the gateway
part included, written with the DBMS_MGWADM facade), and a second load changes nothing."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from gateway.models import Agent, ForeignQueue, Job, Link
from queues.models import Queue

pytestmark = pytest.mark.django_db


def test_the_demo_loads_with_links_jobs_and_messages_and_a_second_load_is_a_no_op():
    out = StringIO()
    # The second site has its own test (a database and a migrate of its own).
    call_command("demo_topology", "--without-second-site", stdout=out)
    assert "Demo topology loaded" in out.getvalue()
    assert set(Link.objects.values_list("name", "link_type")) == {
        ("RABBIT", "AMQP"),
        ("MOSQUITTO", "MQTT"),
        ("NATS_JS", "NATS"),
        ("REDIS_STREAMS", "REDIS"),
    }
    assert {str(f) for f in ForeignQueue.objects.all()} == {"AQ_OUT@RABBIT", "AQ_IN@RABBIT"}
    out_job, in_job = Job.objects.get(name="RABBIT_OUT"), Job.objects.get(name="RABBIT_IN")
    assert (out_job.direction, out_job.source_name, out_job.exception_name) == (
        "OUTBOUND",
        "TO_RABBIT",
        "GW_EXCEPTIONS",
    )
    assert (in_job.direction, in_job.destination_name) == ("INBOUND", "FROM_RABBIT")
    assert Queue.objects.get(name="TO_RABBIT").messages.count() == 5
    # An agent user, so that STARTUP (refused without one) can start the demo's agent.
    agent = Agent.objects.get(name="DEFAULT_AGENT")
    assert agent.username and agent.password_encrypted

    again = StringIO()
    call_command("demo_topology", "--without-second-site", stdout=again)
    assert "already loaded" in again.getvalue()
    assert Job.objects.count() == 2
