"""A form post over Django's limits gets a readable page (413) naming the limit, rather than
Django's bare "Bad Request (400)"; nothing is written."""

from __future__ import annotations

from django.conf import settings

from queues.models import Message


def test_a_post_over_the_memory_limit_names_it(admin_client, queue):
    response = admin_client.post(
        f"/queues/{queue.pk}/enqueue/",
        {"payload": "[" + "1," * settings.DATA_UPLOAD_MAX_MEMORY_SIZE + "1]", "kind": "USER"},
    )

    assert response.status_code == 413
    page = response.content.decode()
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE" in page
    assert "<h1" in page and "Request refused" in page
    assert not Message.objects.exists()


def test_a_post_with_too_many_fields_names_the_limit(admin_client, queue):
    fields = {f"f{i}": "1" for i in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1)}

    response = admin_client.post(f"/queues/{queue.pk}/enqueue/", fields)

    assert response.status_code == 413
    assert "DATA_UPLOAD_MAX_NUMBER_FIELDS" in response.content.decode()
    assert not Message.objects.exists()
