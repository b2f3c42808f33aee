"""Directed networks across real sites (this test database is site A; site_b and site_c are on
the private server, each running this project's own propagation runner in a subprocess):

- A → B: the copy at B has origin A, route [A] and its tag;
- B → C forwards it unchanged: origin A, route [A, B];
- B → A sends nothing that came from A (loop prevention: consumed at B, counted discarded), but
  does send B's own message, which A in turn never sends back to B;
- at B, a negative rule on ``:dml.is_null_tag()`` stops a tagged message being forwarded, and a
  positive rule on ``:dml.get_source_database_name()`` forwards only what came from A.
"""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection

from jobs import services
from jobs.models import PropagationRun
from queues import engine
from sites import services as site_services
from tests.jobs.helpers import run_now
from tests.sites.forwarding import (
    make_queue_at,
    messages_at,
    run_at,
    run_totals,
    site_shell,
)
from tests.sites.helpers import SITE_B, SITE_USER

pytestmark = pytest.mark.django_db(transaction=True)

SETUP_B = """
from jobs import services as js
from queues.models import Queue
from rules import services as rs
from sites import services as ss
ss.database_link_create(user=None, name="SITE_C", host="127.0.0.1", port={port},
                        database="site_c", username={user!r}, password="site-pw")
# Back to A (this test's database), as its superuser (trust on the shared server).
ss.database_link_create(user=None, name="SITE_A", host={a_host!r}, port={a_port},
                        database={a_db!r}, username="postgres", password="unused")

def rule_set(name, condition):
    s = rs.rule_set_create(user=None, name=name)
    rs.rule_set_add_rule(user=None, rule_set=s,
                         rule=rs.rule_create(user=None, name=name + "_R", condition=condition))
    return s

fwd = Queue.objects.get(name="FWD")
js.propagation_create(
    user=None, name="FWD_TO_C", source_queue=fwd, destination_queue="C_IN@SITE_C",
    positive_rule_set=rule_set("FROM_A", ":dml.get_source_database_name() = {a_name!r}"),
    negative_rule_set=rule_set("TAGGED", ":dml.is_null_tag() = 'N'"),
)
js.propagation_create(user=None, name="FWD_TO_A", source_queue=fwd,
                      destination_queue="SRC@SITE_A")
"""


def lcr(n: int) -> dict:
    # Every change record claims DBS1 as its source: what the rules at B see as the source
    # database is then the message's origin site (A), not the payload's.
    return {
        "source_database_name": "DBS1.EXAMPLE.COM",
        "command_type": "INSERT",
        "object_owner": "HR",
        "object_name": "T",
        "new_values": {"N": n},
    }


def _here(queue) -> list[tuple]:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT (payload->'new_values'->>'N')::int, encode(tag, 'hex'), origin_site, route "
            "FROM aq_message WHERE queue_id = %s ORDER BY id",
            [queue.pk],
        )
        return cur.fetchall()


def test_forwarding_keeps_the_origin_and_a_cycle_moves_nothing_twice(
    site, admin_user, mc_table, make_queue, fast_windows
):
    a = settings.AQ_GLOBAL_NAME
    make_queue_at(site, "site_b", "FWD", multi=True)
    make_queue_at(site, "site_c", "C_IN", multi=False)
    site_services.database_link_create(user=admin_user, name="SITE_B", **site.link_fields())
    src = make_queue("SRC", mc_table)
    to_b = services.propagation_create(
        user=admin_user, name="TO_B", source_queue=src, destination_queue="FWD@SITE_B"
    )
    db = connection.settings_dict
    site_shell(
        site,
        "site_b",
        SETUP_B.format(
            port=site.port,
            user=SITE_USER,
            a_host=db["HOST"] or "127.0.0.1",
            a_port=int(db["PORT"] or 5432),
            a_db=db["NAME"],
            a_name=a,
        ),
    )
    # B's own message (no origin: B), for both of B's propagations.
    with site.admin("site_b") as conn:
        conn.autocommit = False
        engine.enqueue(
            conn,
            engine.queue_info(conn, "FWD"),
            [engine.NewMessage(kind="ROW_LCR", payload=lcr(9))],
        )
        conn.commit()
    # A's three: untagged, tagged 02, untagged.
    from queues import services as qs

    qs.message_enqueue(
        user=admin_user,
        queue=src,
        messages=[
            engine.NewMessage(kind="ROW_LCR", payload=lcr(0)),
            engine.NewMessage(kind="ROW_LCR", payload=lcr(1), tag="02"),
            engine.NewMessage(kind="ROW_LCR", payload=lcr(2)),
        ],
    )

    # A → B: origin A, route [A], tags kept.
    run_now(to_b)
    assert messages_at(site, "site_b", "FWD") == [
        (9, None, None, None),
        (0, None, a, [a]),
        (1, "02", a, [a]),
        (2, None, a, [a]),
    ]

    # B → C forwards A's untagged messages unchanged: origin A, route [A, B]. The tagged one
    # (negative rule) and B's own (its source database is its payload's DBS1, not A) stay.
    assert all(r.startswith("SUCCEEDED") for r in run_at(site, "site_b", "FWD_TO_C"))
    assert messages_at(site, "site_c", "C_IN") == [
        (0, None, a, [a, SITE_B]),
        (2, None, a, [a, SITE_B]),
    ]
    assert run_totals(site, "site_b", "FWD_TO_C") == (2, 2)

    # B → A: nothing that came from A goes back (3 consumed at B as discarded); B's own goes.
    assert all(r.startswith("SUCCEEDED") for r in run_at(site, "site_b", "FWD_TO_A"))
    assert run_totals(site, "site_b", "FWD_TO_A") == (1, 3)
    assert _here(src) == [
        (0, None, None, None),
        (1, "02", None, None),
        (2, None, None, None),
        (9, None, SITE_B, [SITE_B]),
    ]
    with site.admin("site_b") as conn:  # nothing left waiting at B for either propagation
        left = conn.execute(
            "SELECT count(*) FROM aq_message_consumer c JOIN aq_message m ON m.id = c.message_id "
            "JOIN queues_queue q ON q.id = m.queue_id WHERE q.name = 'FWD'"
        ).fetchone()[0]
        assert left == 0

    # A → B again: B's message arrived from B, so A never sends it back; nothing moves twice.
    run_now(to_b)
    runs = PropagationRun.objects.filter(propagation=to_b)
    assert (sum(r.propagated for r in runs), sum(r.discarded for r in runs)) == (3, 1)
    assert len(messages_at(site, "site_b", "FWD")) == 4
    assert len(messages_at(site, "site_c", "C_IN")) == 2
    assert not src.messages.filter(state="READY").exists()
