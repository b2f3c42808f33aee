"""The dashboard starts with what needs an operator: failing and stopped propagations and
exception queues holding messages, each linking to its page."""

from __future__ import annotations

from jobs import services
from jobs.models import Propagation, PropagationSchedule


def test_the_dashboard_lists_failing_propagations_and_full_exception_queues_first(
    monitor_client, admin_user, propagation_queues, expired_message
):
    q = propagation_queues
    p = services.propagation_create(
        user=admin_user, name="P_FAILING", source_queue=q["src"], destination_queue=q["dst"]
    )
    services.propagation_create(
        user=admin_user, name="P_STOPPED", source_queue=q["src"], destination_queue=q["other"]
    )
    services.propagation_stop(
        user=admin_user, propagation=Propagation.objects.get(name="P_STOPPED")
    )
    PropagationSchedule.objects.filter(propagation=p).update(
        failures=3, last_error_msg="destination refused the batch"
    )

    html = monitor_client.get("/").content.decode()

    assert 'data-attention="failing"' in html and "destination refused the batch" in html
    assert 'data-attention="disabled"' in html and "P_STOPPED" in html
    _source, exq, _mid = expired_message
    assert 'data-attention="exception_queue"' in html and exq.name in html
    assert f'href="/propagations/{p.pk}/"' in html
    assert html.index('id="attention"') < html.index("Messages ready")
