"""The page suite: session clients per role and the topologies come from tests/conftest.py; the
propagation pages' own fixtures are here."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _pages_setup(role_groups, fast_passwords) -> None:
    """Role groups present, cheap password hashing: for every test here."""


# --- propagations (tests/pages/test_propagation_pages*.py) ---------------------------------------


@pytest.fixture
def propagation_queues(admin_user) -> dict:
    """A multi-consumer source SRC, destinations DST and OTHER (ANY payloads), a typed queue
    TYPED_DST, and a rule set RS_EU."""
    from queues import services as qs
    from rules import services as rs

    mc = qs.queue_table_create(
        user=admin_user, name="QT_MC", sort_order="enq_time", multiple_consumers=True
    )
    sc = qs.queue_table_create(user=admin_user, name="QT_SC", sort_order="enq_time")
    typed = qs.queue_table_create(
        user=admin_user,
        name="QT_TYPED_DST",
        sort_order="enq_time",
        payload_type="ORDER",
        payload_schema={"type": "object"},
    )
    rule_set = rs.rule_set_create(user=admin_user, name="RS_EU")
    rule = rs.rule_create(user=admin_user, name="RS_EU_R0", condition=":msg.region = 'EU'")
    rs.rule_set_add_rule(user=admin_user, rule_set=rule_set, rule=rule)
    return {
        "src": qs.queue_create(user=admin_user, name="SRC", queue_table=mc),
        "dst": qs.queue_create(user=admin_user, name="DST", queue_table=sc),
        "other": qs.queue_create(user=admin_user, name="OTHER", queue_table=sc),
        "typed": qs.queue_create(user=admin_user, name="TYPED_DST", queue_table=typed),
        "rule_set": rule_set,
    }


@pytest.fixture
def propagation(admin_user, propagation_queues):
    """P_SRC_DST: SRC → DST, scheduled (default schedule), no rule sets."""
    from jobs import services as js

    return js.propagation_create(
        user=admin_user,
        name="P_SRC_DST",
        source_queue=propagation_queues["src"],
        destination_queue=propagation_queues["dst"],
    )


class PropagationSnapshot:
    """Everything a propagation write could touch, to prove a refused request changed nothing."""

    def __init__(self) -> None:
        self.values = self.take()

    @staticmethod
    def take() -> dict[str, object]:
        from core.models import ChangeLogEntry
        from jobs.models import Maintenance, Propagation, PropagationSchedule
        from queues.models import Subscriber

        return {
            "propagations": sorted(
                Propagation.objects.values_list(
                    "name",
                    "source_queue_id",
                    "destination_queue_id",
                    "positive_rule_set_id",
                    "negative_rule_set_id",
                    "enabled",
                    "comment",
                )
            ),
            "schedules": sorted(
                PropagationSchedule.objects.values_list(
                    "propagation__name",
                    "start_time",
                    "duration",
                    "next_time",
                    "latency",
                    "enabled",
                    "max_failures",
                    "failures",
                )
            ),
            "subscribers": sorted(Subscriber.objects.values_list("queue_id", "name")),
            # Pages create the (off) row on first read; only a switch turned on is a change.
            "maintenance": list(
                Maintenance.objects.filter(restricted=True).values_list("reason", flat=True)
            ),
            "changelog": ChangeLogEntry.objects.count(),
        }

    def assert_unchanged(self) -> None:
        assert self.take() == self.values


@pytest.fixture
def propagation_snapshot():  # type: ignore[no-untyped-def]
    return PropagationSnapshot
