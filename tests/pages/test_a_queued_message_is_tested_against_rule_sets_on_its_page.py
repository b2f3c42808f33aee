"""The queue page's "Test a message" form tries a message of that queue against rule sets."""

from __future__ import annotations

import pytest

from queues import engine, services
from rules import services as rule_services

LCR = {
    "source_database_name": "DBS1.EXAMPLE.COM",
    "command_type": "INSERT",
    "object_owner": "HR",
    "tag": None,
    "old_values": {},
    "new_values": {"ID": 1},
}


@pytest.fixture
def excluded(admin_user):
    rule_services.rules_generate(
        user=admin_user,
        kind="exclude_table",
        params={"table_name": "hr.job_history", "source_database": "dbs1.example.com"},
        rule_set="HR_POS",
        negative_rule_set="HR_NEG",
    )
    from rules.models import RuleSet

    return RuleSet.objects.get(name="HR_POS"), RuleSet.objects.get(name="HR_NEG")


def _enqueue(queue, table: str) -> int:
    [mid] = services.message_enqueue(
        user=None,
        queue=queue,
        messages=[engine.NewMessage(kind="ROW_LCR", payload={**LCR, "object_name": table})],
    )
    return mid


def test_the_excluded_table_is_discarded_and_another_is_performed(
    client, monitor_user, queue, excluded
):
    pos, neg = excluded
    client.force_login(monitor_user)
    url = f"/queues/{queue.pk}/rule-test/"

    discarded = client.post(
        url, {"message_id": _enqueue(queue, "JOB_HISTORY"), "positive": pos.pk, "negative": neg.pk}
    )
    performed = client.post(
        url, {"message_id": _enqueue(queue, "DEPARTMENTS"), "positive": pos.pk, "negative": neg.pk}
    )

    assert discarded.status_code == 200
    assert 'id="rule-test-decision">DISCARD' in discarded.content.decode()
    assert 'id="rule-test-decision">PERFORM' in performed.content.decode()


def test_a_message_of_another_queue_is_an_error_on_message_id(
    client, monitor_user, queue, excluded
):
    client.force_login(monitor_user)
    response = client.post(f"/queues/{queue.pk}/rule-test/", {"message_id": 999999})
    assert response.status_code == 400
    assert 'data-field="message_id"' in response.content.decode()
