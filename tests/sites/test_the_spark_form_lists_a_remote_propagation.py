"""The Spark job form lists every propagation, a remote one (QUEUE@LINK, no local destination
queue) included: the demo always has one, and its label once broke the form (a 500)."""

from __future__ import annotations

import pytest
from django.conf import settings

from jobs import services
from tests.sites.remote_queues import remote_hub

pytestmark = pytest.mark.django_db


def test_the_spark_form_names_a_remote_propagations_destination(
    site, make_link, admin_user, admin_client, mc_table, make_queue
):
    remote_hub(site, settings.AQ_GLOBAL_NAME)
    make_link("SITE_B")
    src = make_queue("SRC", mc_table)
    services.propagation_create(
        user=admin_user, name="SRC_TO_B", source_queue=src, destination_queue="B_HUB@SITE_B"
    )

    response = admin_client.get("/spark/new/")

    assert response.status_code == 200
    assert "SRC_TO_B (SRC → B_HUB@SITE_B)" in response.content.decode()
