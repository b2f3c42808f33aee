"""Bad input through the propagation forms: the form comes back (400) with the error on the
field at fault, never a 500, and nothing is written."""

from __future__ import annotations

import pytest


def _assert_form_error(response, field: str, text: str = "") -> str:  # type: ignore[no-untyped-def]
    html = response.content.decode()
    assert response.status_code == 400, html[:3000]
    assert f'data-field="{field}"' in html, html[:5000]
    if text:
        assert text in html, html[:5000]
    return html


def _create_form(q: dict, **changes: object) -> dict:
    form = {
        "name": "P_BAD",
        "source_queue": q["src"].pk,
        "destination_queue": q["other"].pk,
        "queue_to_queue": "on",
        "schedule_now": "on",
        "latency": "3",
    }
    for key, value in changes.items():
        form[key] = q[value].pk if isinstance(value, str) and value in q else value
    return form


@pytest.mark.parametrize(
    ("changes", "field", "text"),
    [
        ({"destination_queue": "src"}, "destination_queue", "cannot propagate to itself"),
        ({"destination_queue": "typed"}, "destination_queue", "ORDER"),
        ({"destination_queue": "dst"}, "destination_queue", "already goes from SRC to DST"),
        ({"source_queue": "dst", "destination_queue": "other"}, "source_queue", "single-consumer"),
        ({"next_time": "every tuesday", "duration": "60"}, "next_time", "not an interval"),
        ({"next_time": "61 * * * *", "duration": "60"}, "next_time", "minute"),
        ({"next_time": "10m"}, "next_time", "needs a duration"),
        ({"latency": "-1"}, "latency", "cannot be negative"),
        ({"latency": "soon"}, "latency", ""),
        ({"duration": "0"}, "duration", "positive"),
        ({"max_failures": "0"}, "max_failures", "at least 1"),
        ({"start_time": "yesterday"}, "start_time", ""),
        ({"name": "1BAD"}, "name", ""),
        ({"name": ""}, "name", ""),
        ({"name": "p_src_dst"}, "name", "already exists"),
        ({"source_queue": "999999"}, "source_queue", ""),
        (
            {"negative_rule_set": "rule_set", "positive_rule_set": "rule_set"},
            "negative_rule_set",
            "",
        ),
    ],
)
def test_a_bad_propagation_form_names_the_field(
    admin_client, propagation, propagation_queues, propagation_snapshot, changes, field, text
):
    before = propagation_snapshot()

    response = admin_client.post("/propagations/add/", _create_form(propagation_queues, **changes))

    _assert_form_error(response, field, text)
    before.assert_unchanged()


@pytest.mark.parametrize(
    ("data", "field", "text"),
    [
        ({"next_time": "SYSDATE + 1/0", "duration": "10"}, "next_time", "Division by zero"),
        ({"next_time": "* * * *", "duration": "10"}, "next_time", "five fields"),
        ({"latency": "-0.5"}, "latency", "cannot be negative"),
        ({"duration": "-3"}, "duration", ""),
        ({"latency": ""}, "latency", ""),
    ],
)
def test_a_bad_schedule_alteration_names_the_field(
    admin_client, propagation, propagation_snapshot, data, field, text
):
    before = propagation_snapshot()

    response = admin_client.post(
        f"/propagations/{propagation.pk}/schedule/edit/", {"latency": "3", **data}
    )

    _assert_form_error(response, field, text)
    before.assert_unchanged()


def test_a_bad_edit_names_the_field(admin_client, propagation, propagation_snapshot):
    before = propagation_snapshot()

    response = admin_client.post(
        f"/propagations/{propagation.pk}/edit/", {"positive_rule_set": "424242"}
    )

    _assert_form_error(response, "positive_rule_set")
    before.assert_unchanged()


@pytest.mark.parametrize(
    "path",
    [
        "/propagations/999999/",
        "/propagations/999999/status/",
        "/propagations/999999/edit/",
        "/propagations/999999/schedule/edit/",
        "/propagations/999999/delete/",
    ],
)
def test_an_unknown_propagation_is_a_404(admin_client, path):
    assert admin_client.get(path).status_code == 404


def test_posting_to_an_unknown_propagation_is_a_404(operator_client, propagation_snapshot):
    before = propagation_snapshot()

    assert operator_client.post("/propagations/999999/stop/").status_code == 404
    before.assert_unchanged()


@pytest.mark.parametrize(
    "query",
    ["state=nonsense", "source_queue=abc", "rule_set=-1", "has_backlog=maybe", "per_page=0"],
)
def test_bad_list_filters_never_break_the_list(admin_client, propagation, query):
    assert admin_client.get(f"/propagations/?{query}").status_code == 200
    assert admin_client.get(f"/propagations/runs/?{query}").status_code == 200
