"""The page forms an administrator fills in (enqueue, new rule, new propagation, new gateway link)
take hostile text in any field without a server error: a refused input comes back as a 400 with
the error shown on a field, and nothing is written.

The body is urlencoded by hand (the test client cannot encode a lone surrogate, a browser or a
script can), so the server sees exactly the bytes a hostile client would send.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from urllib.parse import quote

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.models import ChangeLogEntry
from gateway.forms import LinkForm
from gateway.models import DEFAULT_AGENT, Agent, Link
from jobs.models import Propagation
from queues import services as queue_services
from queues.models import Message
from rules import services as rule_services
from rules.models import Rule

DEEP_ARRAY = "[" * 1_000 + "]" * 1_000
DEEP_OBJECT = '{"a":' * 200 + "1" + "}" * 200
# Tried in every field of every form once; MORE_HOSTILE only through Hypothesis (time).
HOSTILE = [
    "a\x00b",
    "\ud800",
    "\u202eevil\u202c.exe",
    "x" * 100_000,
    "'; DROP TABLE queues_queue;--",
    DEEP_ARRAY,
    '{"t": "a\\u0000b"}',
    "1e308",
    "99999999999999999999999",
]
MORE_HOSTILE = [
    "\x00",
    "x\udfffy",
    '" OR 1=1 --',
    "%s%s%n",
    DEEP_OBJECT,
    '["\\ud800"]',
    '{"k\\u0000": 1}',
    "[1e400]",
    "NaN",
    "-1e308",
    "-99999999999999999999999",
    "\u00b9",
    "\u0667",
    "0",
    "",
    " ",
    "2024-01-01T00:00:00-17:00",
    "0001-01-01T00:00:00+05:00",
    "9999-12-31T23:59:59-05:00",
]
hostile_text = st.one_of(
    st.sampled_from(HOSTILE + MORE_HOSTILE),
    st.text(alphabet=st.sampled_from("a0\x00\ud800\u202e'\";{}[]\\%¹ "), max_size=12),
)

# A field's error (core/_field.html) or the form's own (data-field="__all__").
ERROR_SHOWN = re.compile(
    r'class="(?:invalid-feedback|alert alert-danger)[^"]*" data-field="([^"]+)"'
)
_names = itertools.count()


def _post(client: Client, url: str, data: dict[str, str]) -> object:
    body = "&".join(
        f"{quote(k)}={quote(v.encode('utf-8', 'surrogatepass'))}" for k, v in data.items()
    )
    return client.post(url, body, content_type="application/x-www-form-urlencoded")


def _written() -> tuple[int, ...]:
    return (
        Message.objects.count(),
        Rule.objects.count(),
        Propagation.objects.count(),
        Link.objects.count(),
        ChangeLogEntry.objects.count(),
    )


def _check(client: Client, url: str, valid: dict[str, str], hostile: dict[str, str]) -> None:
    before = _written()
    response = _post(client, url, {**valid, **hostile})
    assert response.status_code in (200, 302, 400), (response.status_code, hostile)
    if response.status_code == 400:
        shown = set(ERROR_SHOWN.findall(response.content.decode()))
        shown -= {"__all__"}
        assert shown, f"400 without an error on a field for {hostile!r}: {shown}"
        assert _written() == before, f"a refused form wrote something: {hostile!r}"


def _hostile_fields(names: list[str]) -> st.SearchStrategy[dict[str, str]]:
    return st.dictionaries(st.sampled_from(names), hostile_text, min_size=1, max_size=3)


# Function-scoped fixtures are fine here: every example posts on the same topology, and what a
# valid example writes is never read back.
HYPOTHESIS = settings(
    max_examples=30,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture
def pages(admin_user, admin_client, queue_table) -> dict[str, Callable[[], dict[str, str]]]:
    """The four forms' URLs and, per form, a valid filling (fresh names every call)."""
    # A propagation's source is in a multi-consumer queue table (it subscribes to it).
    mc_table = queue_services.queue_table_create(
        user=admin_user, name="QT_HOSTILE_MC", multiple_consumers=True
    )
    source = queue_services.queue_create(user=admin_user, name="SRC", queue_table=mc_table)
    dest = queue_services.queue_create(user=admin_user, name="DST", queue_table=queue_table)
    for q in (source, dest):
        queue_services.queue_start(user=admin_user, queue=q, enqueue=True, dequeue=True)
    rule_set = rule_services.rule_set_create(user=admin_user, name="HOSTILE_SET")
    agent = Agent.objects.get_or_create(name=DEFAULT_AGENT)[0]  # a migration's; flushes drop it
    return {
        f"/queues/{dest.pk}/enqueue/": lambda: {
            "payload": '{"n": 1}',
            "kind": "USER",
            "priority": "1",
            "delay": "0",
            "visibility": "ON_COMMIT",
        },
        "/rules/add/": lambda: {
            "name": f"R{next(_names)}",
            "condition": "1 = 1",
            "action_context": '{"a": 1}',
            "comment": "c",
        },
        "/propagations/add/": lambda: {
            "name": f"P{next(_names)}",
            "source_queue": str(source.pk),
            "destination_queue": str(dest.pk),
            "positive_rule_set": str(rule_set.pk),
            "comment": "c",
            "latency": "3",
        },
        "/gateway/links/add/?link_type=AMQP": lambda: {
            "linkname": f"L{next(_names)}",
            "agent": str(agent.pk),
            "properties.host": "127.0.0.1",
            "max_connections": "1",
            "comment": "c",
        },
    }


def _fields(url: str, valid: dict[str, str]) -> list[str]:
    if url.startswith("/gateway/links/add/"):
        return sorted(LinkForm(link_type="AMQP").fields)
    extra = {
        "/propagations/add/": [
            "negative_rule_set",
            "queue_to_queue",
            "schedule_now",
            "start_time",
            "duration",
            "next_time",
            "max_failures",
        ],
        "/rules/add/": ["evaluation_context"],
    }
    base = ["type_name", "expiration", "correlation", "sender", "recipients"]
    return sorted({*valid, *extra.get(url, base if "enqueue" in url else [])})


@pytest.mark.django_db
@pytest.mark.parametrize(
    "form",
    ["enqueue", "rules/add", "propagations/add", "gateway/links/add"],
)
def test_hostile_form_input_never_breaks_a_page(form, pages, admin_client) -> None:
    url = next(u for u in pages if form in u)
    make_valid = pages[url]
    names = _fields(url, make_valid())
    # The filling the hostile values are mixed into is accepted as it is.
    assert _post(admin_client, url, make_valid()).status_code in (200, 302)

    # Every hostile value in every field once, then Hypothesis mixes them (and random text).
    for name, value in itertools.product(names, HOSTILE):
        _check(admin_client, url, make_valid(), {name: value})

    @HYPOTHESIS
    @given(hostile=_hostile_fields(names))
    def post(hostile: dict[str, str]) -> None:
        _check(admin_client, url, make_valid(), hostile)

    post()
