"""The instance registry as the heartbeat service writes it (no worker process: the service is
what every worker's heartbeat calls)."""

from __future__ import annotations

import pytest

from core.exceptions import DomainError
from instances import services
from instances.models import GvInstance
from instances.selectors import instance_list

pytestmark = pytest.mark.django_db


def _status(name: str) -> str:
    return instance_list().get(name=name).status


def test_the_first_report_gives_a_stable_number_and_later_beats_do_not_use_up_numbers():
    a = services.instance_heartbeat(name="node1", host="h1", worker="w1@h1")
    for _ in range(5):
        assert services.instance_heartbeat(name="NODE1", host="h1", worker="w1@h1") == a
    b = services.instance_heartbeat(name="node2", host="h2", worker="w1@h2")
    assert b == a + 1
    assert _status("node1") == _status("node2") == "UP"
    row = GvInstance.objects.get(inst_id=a)
    assert (row.instance_name, row.host_name, row.status, row.workers) == ("node1", "h1", "UP", 1)


def test_a_clean_stop_of_the_last_worker_takes_the_instance_down_at_once():
    services.instance_heartbeat(name="node1", host="h", worker="w1@h")
    services.instance_heartbeat(name="node1", host="h", worker="w2@h")
    services.instance_heartbeat(name="node1", host="h", worker="w1@h", stopping=True)
    assert _status("node1") == "UP"  # w2 still beats
    services.instance_heartbeat(name="node1", host="h", worker="w2@h", stopping=True)
    assert _status("node1") == "DOWN"
    assert GvInstance.objects.get(instance_name="node1").workers == 0


def test_an_instance_is_down_once_its_last_beat_is_older_than_the_limit(settings):
    settings.AQ_INSTANCE_HEARTBEAT_LIMIT_S = 0  # the lease ends at the beat itself
    services.instance_heartbeat(name="node1", host="h", worker="w1@h")
    assert _status("node1") == "DOWN"
    settings.AQ_INSTANCE_HEARTBEAT_LIMIT_S = 15
    services.instance_heartbeat(name="node1", host="h", worker="w1@h")
    assert _status("node1") == "UP"


def test_a_named_instance_no_worker_reported_is_registered_down():
    inst = services.instance_register(name="future1")
    assert inst.last_heartbeat is None
    assert _status("future1") == "DOWN"
    # Its first worker keeps the number the name was given.
    assert services.instance_heartbeat(name="future1", host="h", worker="w@h") == inst.inst_id
    assert _status("future1") == "UP"


@pytest.mark.parametrize("bad", ["", "-x", "a b", "x" * 65, 5, None])
def test_a_bad_instance_name_is_refused_naming_the_field(bad):
    with pytest.raises(DomainError) as err:
        services.instance_register(name=bad, field="primary_instance")  # type: ignore[arg-type]
    assert err.value.field == "primary_instance"
