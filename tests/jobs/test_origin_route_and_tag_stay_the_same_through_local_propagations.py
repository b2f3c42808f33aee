"""A local propagation keeps a message on its site: the copy has the same origin site, route and
tag, whether the batch is one SQL statement or goes through Python; and the rule sets read the
message's tag and origin through ``:dml.get_tag()``, ``:dml.is_null_tag()`` and
``:dml.get_source_database_name()`` the same way on both paths (docs/SITES.md)."""

from __future__ import annotations

import pytest
from django.db import connection

from jobs import runner, services
from jobs.models import PropagationRun
from queues import engine
from queues import services as qs

from .helpers import run_now

pytestmark = pytest.mark.django_db(transaction=True)


def lcr(n: int, source: str = "DBS1.EXAMPLE.COM") -> dict:
    return {
        "source_database_name": source,
        "command_type": "INSERT",
        "object_owner": "HR",
        "object_name": "T",
        "new_values": {"N": n},
    }


# Messages as they sit at this site: enqueued here (no origin), with and without a tag, and one
# that arrived from SITE_X (written as engine.receive writes it).
MESSAGES = [
    engine.NewMessage(kind="ROW_LCR", payload=lcr(0)),
    engine.NewMessage(kind="ROW_LCR", payload=lcr(1), tag="02"),
    engine.NewMessage(
        kind="ROW_LCR",
        payload=lcr(2),
        tag="1F",
        origin_site="SITE_X.LOCALHOST",
        route=["SITE_X.LOCALHOST", "SITE_Y.LOCALHOST"],
    ),
    engine.NewMessage(
        kind="ROW_LCR", payload=lcr(3), origin_site="SITE_X.LOCALHOST", route=["SITE_X.LOCALHOST"]
    ),
]


def _put(queue) -> None:
    conn = qs.raw_connection()
    engine.enqueue(conn, engine.queue_info(conn, queue.pk), MESSAGES)  # the engine may set all
    conn.commit()


def _at(queue) -> list[tuple]:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT (payload->'new_values'->>'N')::int, encode(tag, 'hex'), origin_site, route "
            "FROM aq_message WHERE queue_id = %s AND state = 'READY' ORDER BY id",
            [queue.pk],
        )
        return cur.fetchall()


def _destination_subscriber(user, dst, path: str) -> None:
    """One subscriber at the destination; with a rule on the Python path (a destination
    subscriber's rule sends the batch through Python: runner._fits_in_sql)."""
    rule = {"rule": "1 = 1"} if path == "python" else {}
    qs.subscriber_add(user=user, queue=dst, name="ALL", **rule)


EXPECTED = [
    (0, None, None, None),
    (1, "02", None, None),
    (2, "1f", "SITE_X.LOCALHOST", ["SITE_X.LOCALHOST", "SITE_Y.LOCALHOST"]),
    (3, None, "SITE_X.LOCALHOST", ["SITE_X.LOCALHOST"]),
]


@pytest.mark.parametrize("path", ["sql", "python"])
def test_a_local_copy_keeps_origin_route_and_tag(admin_user, mc_table, make_queue, path):
    src, dst = make_queue("SRC", mc_table), make_queue("DST", mc_table)
    _destination_subscriber(admin_user, dst, path)
    p = services.propagation_create(
        user=admin_user, name="P", source_queue=src, destination_queue=dst
    )
    _put(src)
    run_now(p)
    assert _at(dst) == EXPECTED
    assert [r[0] for r in _at(src)] == []  # all consumed at the source


@pytest.mark.parametrize("path", ["sql", "python"])
def test_rules_read_the_message_tag_and_origin(admin_user, mc_table, make_queue, rule_set, path):
    src, dst = make_queue("SRC", mc_table), make_queue("DST", mc_table)
    _destination_subscriber(admin_user, dst, path)
    # Untagged messages from anywhere but SITE_X, and anything from SITE_X with a tag.
    pos = rule_set(
        "POS",
        ":dml.is_null_tag() = 'Y' AND :dml.get_source_database_name() <> 'SITE_X.LOCALHOST'",
        ":dml.get_source_database_name() = 'SITE_X.LOCALHOST' AND :dml.get_tag() IS NOT NULL",
    )
    p = services.propagation_create(
        user=admin_user, name="P", source_queue=src, destination_queue=dst, positive_rule_set=pos
    )
    topo = runner.load_topology(qs.raw_connection(), p.pk)
    assert topo.keep_sql is not None  # the rules compile to SQL; the path is the destination's

    _put(src)
    run_now(p)
    # 0: untagged, from DBS1 (its payload: enqueued here); 1: tagged here; 2: SITE_X, tagged;
    # 3: SITE_X, untagged.
    assert [r[0] for r in _at(dst)] == [0, 2]
    run = PropagationRun.objects.get(propagation=p, state="SUCCEEDED")
    assert (run.propagated, run.discarded) == (2, 2)
