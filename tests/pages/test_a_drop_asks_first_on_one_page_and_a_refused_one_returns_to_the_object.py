"""Every drop asks first, on the one confirm page (core.generic.confirm_page): its question names
the object, its Cancel goes back to it, only an administrator sees it, and asking changes nothing.
A refused drop comes back to the object's page with the reason; a done one goes to the list."""

from __future__ import annotations

import pytest

from jobs import services as job_services
from rules import services as rule_services
from rules.models import EvaluationContext, Rule, RuleSet


@pytest.fixture
def objects(admin_user, propagation, propagation_queues) -> dict:
    ctx = rule_services.evaluation_context_create(user=admin_user, name="CTX_DROP", variables=[])
    rule = rule_services.rule_create(user=admin_user, name="R_DROP", condition=":msg.region = 'EU'")
    return {
        "queue table": propagation_queues["dst"].queue_table,
        "queue": propagation_queues["other"],
        "propagation": propagation,
        "rule": rule,
        "rule set": propagation_queues["rule_set"],
        "evaluation context": ctx,
    }


PATHS = {
    "queue table": "/queues/tables/{pk}/delete/",
    "queue": "/queues/{pk}/delete/",
    "propagation": "/propagations/{pk}/delete/",
    "rule": "/rules/{pk}/delete/",
    "rule set": "/rules/sets/{pk}/delete/",
    "evaluation context": "/rules/contexts/{pk}/delete/",
}


@pytest.mark.parametrize("kind", PATHS)
def test_each_drop_asks_on_the_one_confirm_page(admin_client, monitor_client, objects, kind):
    obj = objects[kind]
    path = PATHS[kind].format(pk=obj.pk)

    asked = admin_client.get(path)
    html = asked.content.decode()

    assert asked.status_code == 200
    assert "core/confirm.html" in [t.name for t in asked.templates]
    assert f"Drop {kind} {obj.name}?" in html
    assert f'type="submit">Drop {kind}</button>' in html
    assert f'href="{obj.get_absolute_url()}">Cancel</a>' in html
    assert monitor_client.get(path).status_code == 403
    assert type(obj).objects.filter(pk=obj.pk).exists()


def test_a_refused_drop_returns_to_the_objects_page_with_the_reason(
    admin_client, admin_user, propagation_queues
):
    rule_set = propagation_queues["rule_set"]
    job_services.propagation_create(
        user=admin_user,
        name="P_RULED",
        source_queue=propagation_queues["src"],
        destination_queue=propagation_queues["other"],
        positive_rule_set=rule_set,
        schedule=False,
    )

    response = admin_client.post(f"/rules/sets/{rule_set.pk}/delete/", follow=True)

    assert RuleSet.objects.filter(pk=rule_set.pk).exists()
    assert response.redirect_chain[-1][0] == rule_set.get_absolute_url()
    assert "P_RULED" in response.content.decode()


@pytest.mark.parametrize(
    ("path", "model", "gone_to"),
    [
        ("/rules/contexts/{pk}/delete/", EvaluationContext, "/rules/contexts/"),
        ("/rules/{pk}/delete/", Rule, "/rules/"),
    ],
)
def test_a_done_drop_goes_to_the_list_with_its_message(admin_client, objects, path, model, gone_to):
    obj = objects["evaluation context" if model is EvaluationContext else "rule"]

    response = admin_client.post(path.format(pk=obj.pk), follow=True)

    assert not model.objects.filter(pk=obj.pk).exists()
    assert response.redirect_chain[-1][0] == gone_to
    assert f"{obj.name} dropped." in response.content.decode()
