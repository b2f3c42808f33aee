"""Bulk actions on the list pages: the action bar and tick boxes only for a role that may use a
verb, a confirmation page listing the objects, then each object's outcome; the pages call the
same code as the API (core.bulk), so these check the page's part only."""

from __future__ import annotations

import pytest

from queues import services as qs
from queues.choices import QueueKind
from queues.models import Queue

pytestmark = pytest.mark.django_db

LISTS = ["/queues/", "/propagations/", "/gateway/jobs/"]
BULK = "/queues/bulk/"


@pytest.fixture
def three(admin_user, queue_table) -> list[Queue]:
    return [
        qs.queue_create(user=admin_user, name=name, queue_table=queue_table)
        for name in ("Q_A", "Q_B", "Q_C")
    ]


@pytest.mark.parametrize("path", LISTS)
def test_monitor_sees_no_action_bar_and_no_tick_boxes(monitor_client, three, path):
    response = monitor_client.get(path)

    assert response.status_code == 200
    assert b'id="bulk-form"' not in response.content
    assert b"aq-bulk-pk" not in response.content


@pytest.mark.parametrize("path", LISTS)
def test_operator_sees_the_operate_verbs_but_not_the_configure_ones(operator_client, path):
    response = operator_client.get(path)

    assert response.status_code == 200
    assert b'id="bulk-form"' in response.content
    assert b'value="drop"' not in response.content
    assert b'value="delete"' not in response.content


def test_administrator_ticks_rows_of_the_queue_list(admin_client, three):
    html = admin_client.get("/queues/").content.decode()

    assert 'value="drop"' in html and 'value="stop"' in html
    for q in three:
        assert f'name="ids" value="{q.pk}" form="bulk-form" aria-label="Select {q.name}"' in html
    assert 'aria-label="Select all on this page"' in html
    # The table's own poll (a partial) keeps the tick boxes, so the page can put ticks back.
    partial = admin_client.get("/queues/", headers={"HX-Request": "true"}).content.decode()
    assert f'value="{three[0].pk}" form="bulk-form"' in partial


@pytest.mark.parametrize(
    ("user_client", "query"),
    [("monitor_client", "action=stop"), ("operator_client", "action=drop")],
)
def test_a_verb_the_role_may_not_use_is_a_403_and_does_nothing(request, three, user_client, query):
    client = request.getfixturevalue(user_client)
    ids = "&".join(f"ids={q.pk}" for q in three)

    shown = client.get(f"{BULK}?{query}&{ids}")
    done = client.post(BULK, {"action": query.split("=")[1], "ids": [q.pk for q in three]})

    assert (shown.status_code, done.status_code) == (403, 403)
    assert Queue.objects.filter(pk__in=[q.pk for q in three]).count() == 3
    assert Queue.objects.filter(pk__in=[q.pk for q in three], enqueue_enabled=False).count() == 0


def test_confirmation_lists_the_queues_and_changes_nothing(operator_client, three):
    response = operator_client.get(f"{BULK}?action=stop&ids={three[0].pk}&ids={three[2].pk}")

    assert response.status_code == 200
    html = response.content.decode()
    assert "Stop 2 queues?" in html
    assert "Q_A" in html and "Q_C" in html and "Q_B" not in html
    assert not Queue.objects.filter(enqueue_enabled=False, kind=QueueKind.NORMAL).exists()


def test_a_destructive_verb_says_it_cannot_be_undone(admin_client, three):
    response = admin_client.get(f"{BULK}?action=drop&ids={three[0].pk}")

    assert "This cannot be undone." in response.content.decode()


def test_the_post_shows_each_outcome_with_the_services_reason(operator_client, three):
    exception_queue = Queue.objects.get(kind=QueueKind.EXCEPTION)

    response = operator_client.post(
        BULK, {"action": "start_enqueue", "ids": [three[0].pk, exception_queue.pk]}
    )

    assert response.status_code == 200
    html = response.content.decode()
    assert "Start enqueue: 1 done, 1 refused" in html
    assert f'data-id="{exception_queue.pk}" data-outcome="refused"' in html
    assert "Exception queues cannot be enabled for enqueue." in html


def test_htmx_gets_the_outcome_alone(operator_client, three):
    response = operator_client.post(
        BULK, {"action": "stop", "ids": [three[0].pk]}, headers={"HX-Request": "true"}
    )

    assert response.status_code == 200
    assert "<html" not in response.content.decode()
    assert 'id="bulk-results"' in response.content.decode()


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("action=stop", "ids: Select at least one queue."),
        ("action=halt&ids=1", "action: Unknown action"),
        ("action=stop&ids=999999", "ids: No queue with id 999999."),
    ],
)
def test_bad_input_is_a_400_page_naming_the_field(operator_client, three, query, said):
    response = operator_client.get(f"{BULK}?{query}")

    assert response.status_code == 400
    assert said in response.content.decode()


def test_an_htmx_confirm_for_a_queue_gone_meanwhile_gets_the_error_alone(operator_client, three):
    gone = three[1].pk
    qs.queue_delete(user=None, queue=three[1])  # by someone else, after the confirmation page

    response = operator_client.post(
        BULK, {"action": "stop", "ids": [three[0].pk, gone]}, headers={"HX-Request": "true"}
    )

    assert response.status_code == 400
    html = response.content.decode()
    assert "<html" not in html
    assert f"ids: No queue with id {gone}." in html
    assert not Queue.objects.filter(enqueue_enabled=False, kind=QueueKind.NORMAL).exists()


def test_the_confirmation_of_one_object_says_it_in_the_singular(admin_client, admin_user):
    from queues import services as qs

    qt = qs.queue_table_create(user=admin_user, name="QT_ONE", sort_order="enq_time")
    q = qs.queue_create(user=admin_user, name="ONLY_ONE", queue_table=qt)

    body = admin_client.get(f"/queues/bulk/?action=stop&ids={q.pk}").content.decode()

    assert "Stop 1 queue?" in body and ">Stop 1 queue</button>" in body
    assert "1 queues" not in body


# --- everything that matches the filter ----------------------------------------------------------


@pytest.mark.parametrize("path", LISTS)
def test_each_list_table_carries_its_filter_and_its_number_of_matches(operator_client, three, path):
    """What "select all N matching" sends (bulk.js): the filter without paging or sorting, and
    the count, in the table, which the poll replaces with its own."""
    html = operator_client.get(
        f"{path}?q=Q_&page=1&per_page=2&sort=name", HTTP_HX_REQUEST="true"
    ).content.decode()

    assert 'data-bulk-filter="q=Q_"' in html
    assert "data-bulk-total=" in html


def test_monitor_gets_no_filter_data_and_a_403_for_a_filter(monitor_client, three):
    assert b"data-bulk-total" not in monitor_client.get("/queues/?q=Q_").content
    assert monitor_client.get(BULK, {"action": "stop", "filter": "q=Q_"}).status_code == 403


def test_the_confirmation_counts_the_matches_and_says_the_filter(operator_client, three):
    response = operator_client.get(
        BULK, {"action": "stop", "filter": "q=Q_&kind=NORMAL_QUEUE&enqueue_enabled=true"}
    )

    assert response.status_code == 200
    html = response.content.decode()
    assert "Stop 3 queues?" in html
    terms = html.split('id="bulk-filter-terms">', 1)[-1].split("</ul>", 1)[0]
    assert "<li>Search: Q_</li>" in terms and "<li>Kind: Normal queue</li>" in terms, terms
    assert "<li>Enqueue enabled: Yes</li>" in html
    assert 'name="expected_count" value="3"' in html
    assert 'name="ids"' not in html
    assert not Queue.objects.filter(enqueue_enabled=False, kind=QueueKind.NORMAL).exists()


def test_a_bad_filter_is_a_400_page_naming_the_parameter(operator_client, three):
    response = operator_client.get(BULK, {"action": "stop", "filter": "kind=TELEPORT"})

    assert response.status_code == 400
    assert b'data-field="filter.kind"' in response.content


def test_a_filter_that_matches_more_at_confirmation_does_nothing_and_asks_again(
    operator_client, admin_user, queue_table, three
):
    qs.queue_create(user=admin_user, name="Q_LATE", queue_table=queue_table)

    response = operator_client.post(
        BULK, {"action": "stop", "filter": "q=Q_", "expected_count": "3"}
    )

    assert response.status_code == 409
    html = response.content.decode()
    assert "4 queues match now, not 3; nothing was done." in html
    assert 'id="bulk-review"' in html and "Review the 4 now matching" in html
    assert not Queue.objects.filter(enqueue_enabled=False, kind=QueueKind.NORMAL).exists()


def test_the_confirmed_filter_is_run_again_and_each_match_is_done(operator_client, three):
    response = operator_client.post(
        BULK, {"action": "stop", "filter": "q=Q_", "expected_count": "3"}
    )

    assert response.status_code == 200
    assert response.content.decode().count('data-outcome="done"') == 3
    assert Queue.objects.filter(enqueue_enabled=False, kind=QueueKind.NORMAL).count() == 3
