"""Queue-to-dblink propagations (queue_to_queue=false) from one source queue over one link share
one job and one schedule (spec/queues.md §2.4-2.6): the second joins the first's schedule,
altering, disabling, stopping one does it to all; one run takes what any of them holds, applies
each one's rules at the source and sends each message once to the site with the queues that
take it (one receipt per message there). Queue-to-queue propagations over the same link stay
independent, and the two modes do not mix for one (source, link). V$PROPAGATION_SENDER shows
what the source still keeps per destination, local and remote; V$PROPAGATION_RECEIVER at the
destination names the source site."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection

from jobs import services
from jobs.models import Propagation, PropagationRun, PropagationSchedule
from sites.selectors import local_global_name
from tests.jobs.helpers import enqueue, run_now
from tests.sites.remote_queues import remote_payloads, remote_queues

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def src(site, make_link, mc_table, make_queue):
    remote_queues(site)
    with site.admin("site_b") as conn:  # site_b outlives each test's flush here
        conn.execute("DELETE FROM aq_propagation_receipt")
        conn.execute("DELETE FROM aq_propagation_arrival")
    make_link("SITE_B")
    return make_queue("SRC", mc_table)


def _create(api, name: str, dest: str, *, q2q: bool = False, **extra: object):
    return api.post(
        "/api/propagations/",
        {
            "name": name,
            "source_queue": "SRC",
            "destination_queue": dest,
            "queue_to_queue": q2q,
            **extra,
        },
        format="json",
    )


def _view(sql: str, *params: object) -> list[tuple]:
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall()


def _schedules() -> dict[str, tuple]:
    return {
        s.propagation.name: (s.latency, s.enabled, s.duration)
        for s in PropagationSchedule.objects.select_related("propagation")
    }


def test_the_second_joins_the_first_schedule_and_altering_one_alters_both(admin_api, src):
    assert _create(admin_api, "TO_A", "REMOTE_A@SITE_B", latency=5).status_code == 201
    # Oracle has one schedule per job: other values are refused naming the parameter...
    refused = _create(admin_api, "TO_B", "REMOTE_B@SITE_B", latency=7)
    assert refused.status_code == 400 and "latency" in refused.json(), refused.content
    unscheduled = _create(admin_api, "TO_B", "REMOTE_B@SITE_B", schedule=False)
    assert unscheduled.status_code == 400 and "schedule" in unscheduled.json()
    assert not Propagation.objects.filter(name="TO_B").exists()
    # ...the same value, or none, joins it.
    assert _create(admin_api, "TO_B", "REMOTE_B@SITE_B", latency=5).status_code == 201
    a, b = Propagation.objects.get(name="TO_A"), Propagation.objects.get(name="TO_B")
    assert _schedules() == {"TO_A": (5.0, True, None), "TO_B": (5.0, True, None)}

    altered = admin_api.post(
        f"/api/propagations/{b.pk}/alter-schedule/", {"latency": 9, "duration": 600}
    )
    assert altered.status_code == 200, altered.content
    assert _schedules() == {"TO_A": (9.0, True, 600.0), "TO_B": (9.0, True, 600.0)}
    assert admin_api.post(f"/api/propagations/{a.pk}/disable/").status_code == 200
    assert _schedules() == {"TO_A": (9.0, False, 600.0), "TO_B": (9.0, False, 600.0)}
    # The other's schedule is the same one: already disabled.
    assert admin_api.post(f"/api/propagations/{b.pk}/disable/").status_code == 409
    assert admin_api.post(f"/api/propagations/{b.pk}/enable/").status_code == 200
    assert _schedules() == {"TO_A": (9.0, True, 600.0), "TO_B": (9.0, True, 600.0)}
    # STOP_PROPAGATION stops the shared job.
    assert admin_api.post(f"/api/propagations/{a.pk}/stop/").status_code == 200
    assert list(Propagation.objects.order_by("name").values_list("enabled", flat=True)) == [
        False,
        False,
    ]
    assert admin_api.post(f"/api/propagations/{b.pk}/start/").status_code == 200

    # One schedule row in DBA_QUEUE_SCHEDULES, DESTINATION the link; DBA_PROPAGATION says FALSE.
    assert _view("SELECT destination, latency FROM dba_queue_schedules WHERE qname = 'SRC'") == [
        ("SITE_B", 9.0)
    ]
    assert _view(
        "SELECT propagation_name, queue_to_queue, destination_dblink FROM dba_propagation "
        "ORDER BY 1"
    ) == [("TO_A", "FALSE", "SITE_B"), ("TO_B", "FALSE", "SITE_B")]

    # Unscheduling one unschedules the job; scheduling one schedules it again, for both.
    assert admin_api.post(f"/api/propagations/{a.pk}/unschedule/").status_code in (200, 204)
    assert _schedules() == {}
    assert admin_api.post(f"/api/propagations/{b.pk}/schedule/", {"latency": 2}).status_code == 201
    assert _schedules() == {"TO_A": (2.0, True, None), "TO_B": (2.0, True, None)}


def test_each_member_page_names_the_job_and_its_other_members(admin_api, admin_client, src):
    assert _create(admin_api, "TO_A", "REMOTE_A@SITE_B").status_code == 201
    assert _create(admin_api, "TO_B", "REMOTE_B@SITE_B").status_code == 201
    a, b = Propagation.objects.get(name="TO_A"), Propagation.objects.get(name="TO_B")
    page = admin_client.get(b.get_absolute_url()).content.decode()
    job = page.split('id="propagation-job">', 1)[1].split("</dd>", 1)[0]
    assert job.startswith("SRC@SITE_B: one schedule and one run for 2 propagations"), job
    assert f'href="{a.get_absolute_url()}"' in job and "TO_B" in job
    assert (
        f'href="{b.get_absolute_url()}"' in admin_client.get(a.get_absolute_url()).content.decode()
    )


def test_queue_to_queue_propagations_over_the_same_link_stay_independent(admin_api, src):
    assert _create(admin_api, "TO_A", "REMOTE_A@SITE_B", q2q=True).status_code == 201
    assert _create(admin_api, "TO_B", "REMOTE_B@SITE_B", q2q=True, latency=7).status_code == 201
    a = Propagation.objects.get(name="TO_A")

    altered = admin_api.post(f"/api/propagations/{a.pk}/alter-schedule/", {"latency": 9})
    assert altered.status_code == 200
    assert admin_api.post(f"/api/propagations/{a.pk}/disable/").status_code == 200
    assert admin_api.post(f"/api/propagations/{a.pk}/stop/").status_code == 200

    assert _schedules() == {"TO_A": (9.0, False, None), "TO_B": (7.0, True, None)}
    assert Propagation.objects.get(name="TO_B").enabled
    assert _view("SELECT destination FROM dba_queue_schedules WHERE qname = 'SRC' ORDER BY 1") == [
        ('"SITE_USER"."REMOTE_A"@SITE_B',),
        ('"SITE_USER"."REMOTE_B"@SITE_B',),
    ]


@pytest.mark.parametrize("first_q2q", [True, False])
def test_the_two_modes_do_not_mix_for_one_source_and_link(admin_api, src, first_q2q):
    assert _create(admin_api, "FIRST", "REMOTE_A@SITE_B", q2q=first_q2q).status_code == 201
    before = list(Propagation.objects.values_list("name", flat=True))

    response = _create(admin_api, "SECOND", "REMOTE_B@SITE_B", q2q=not first_q2q)

    assert response.status_code == 400, response.content
    assert list(response.json()) == ["queue_to_queue"]
    assert "FIRST" in str(response.json())
    assert list(Propagation.objects.values_list("name", flat=True)) == before


def test_one_run_sends_each_message_once_to_the_queues_that_take_it(
    admin_api, admin_user, src, site, sc_table, make_queue, rule_set, fast_windows
):
    local = make_queue("LOCAL_DST", sc_table)
    services.propagation_create(
        user=admin_user,
        name="TO_A",
        source_queue=src,
        destination_queue="REMOTE_A@SITE_B",
        queue_to_queue=False,
        positive_rule_set=rule_set("ONLY_LOW", ":msg.n < 4"),
    )
    services.propagation_create(
        user=admin_user,
        name="TO_B",
        source_queue=src,
        destination_queue="REMOTE_B@SITE_B",
        queue_to_queue=False,
    )
    services.propagation_create(
        user=admin_user, name="TO_LOCAL", source_queue=src, destination_queue=local, schedule=False
    )
    tag = uuid.uuid4().hex
    enqueue(src, [{"tag": tag, "n": n} for n in range(6)])

    sender = (
        "SELECT propagation_name, dst_queue_name, dblink, queue_to_queue, unacknowledged, "
        "oldest_unacknowledged_age > 0 FROM v_propagation_sender ORDER BY 1"
    )
    assert _view(sender) == [
        ("TO_A", "REMOTE_A", "SITE_B", "FALSE", 6, True),
        ("TO_B", "REMOTE_B", "SITE_B", "FALSE", 6, True),
        ("TO_LOCAL", "LOCAL_DST", "LOCAL", "TRUE", 6, True),
    ]
    a = Propagation.objects.get(name="TO_A")

    results = run_now(a)

    assert [r.split(":")[0] for r in results] == ["SUCCEEDED"], results
    # One run for the job (under its first propagation), none of TO_B's own.
    assert not PropagationRun.objects.filter(propagation__name="TO_B").exists()
    run = PropagationRun.objects.get(propagation=a)
    assert (run.messages, run.propagated, run.discarded) == (6, 6, 2)
    assert sorted(p["n"] for p in remote_payloads(site, "REMOTE_A", tag)) == [0, 1, 2, 3]
    assert sorted(p["n"] for p in remote_payloads(site, "REMOTE_B", tag)) == [0, 1, 2, 3, 4, 5]
    job = "SRC@SITE_B"
    with site.admin("site_b") as conn:
        # Each message crossed once: one receipt each under the job's stream, not one per queue.
        receipts = conn.execute(
            "SELECT count(*), count(DISTINCT source_msgid) FROM aq_propagation_receipt "
            "WHERE stream = %s",
            (job,),
        ).fetchone()
        receiver = conn.execute(
            "SELECT src_dbname, src_queue_name, stream, dst_queue_name, total_msgs "
            "FROM v_propagation_receiver WHERE propagation_id IS NULL ORDER BY dst_queue_name"
        ).fetchall()
    assert receipts == (6, 6)
    me = local_global_name()
    assert receiver == [(me, "SRC", job, "REMOTE_A", 4), (me, "SRC", job, "REMOTE_B", 6)]
    # The source kept nothing for the job's destinations; the local one still waits.
    assert _view(sender) == [
        ("TO_A", "REMOTE_A", "SITE_B", "FALSE", 0, None),
        ("TO_B", "REMOTE_B", "SITE_B", "FALSE", 0, None),
        ("TO_LOCAL", "LOCAL_DST", "LOCAL", "TRUE", 6, True),
    ]
    # The job's totals are one set, on both rows; DBA_QUEUE_SCHEDULES shows it once.
    totals = {s.propagation.name: s.total_number for s in PropagationSchedule.objects.all()}
    assert totals == {"TO_A": 6, "TO_B": 6}
    assert _view(
        "SELECT destination, total_number FROM dba_queue_schedules WHERE qname = 'SRC'"
    ) == [("SITE_B", 6)]


def test_the_patch_of_what_get_returned_is_accepted_and_a_new_destination_is_not(
    admin_api, src, sc_table, make_queue
):
    make_queue("LOCAL_DST", sc_table)
    assert _create(admin_api, "TO_A", "REMOTE_A@SITE_B").status_code == 201
    assert _create(admin_api, "TO_LOCAL", "LOCAL_DST", q2q=True).status_code == 201
    for p in Propagation.objects.all():
        body = admin_api.get(f"/api/propagations/{p.pk}/").json()
        body["comment"] = "echoed"

        echoed = admin_api.patch(f"/api/propagations/{p.pk}/", body, format="json")

        assert echoed.status_code == 200, (p.name, echoed.content)
        assert echoed.json()["comment"] == "echoed"

    a = Propagation.objects.get(name="TO_A")
    for change in (
        {"destination_queue": "REMOTE_B"},
        {"destination_queue": "REMOTE_B@SITE_B"},
        {"destination_queue": "REMOTE_A", "destination_dblink": "OTHER"},
    ):
        moved = admin_api.patch(f"/api/propagations/{a.pk}/", change, format="json")
        assert moved.status_code == 400, (change, moved.content)
        assert list(moved.json()) == ["destination_queue"], moved.json()
    assert Propagation.objects.get(pk=a.pk).destination == "REMOTE_A@SITE_B"
