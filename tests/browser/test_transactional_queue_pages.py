"""SET_UP_QUEUE and a transactional queue's dequeue panel in Debian's chromium.

Scenario: an administrator opens the queue list, sets up a Streams queue through "Set up queue"
for a user (after a user that does not exist was refused under queue_user), lands on the new
queue, adds a subscriber, and (a setup step: the enqueue form puts one message per submit) three
transactions each enqueue a group of two messages. The dequeue panel then takes the first group
message by message (a browse in between does not lose it), shows the end of the group, answers a
further Next message with AQ's end-of-group error (ORA-25235) rather than a server error, and
Next transaction moves to the next group, leaving the rest of a half-taken one in the queue.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import htmx_submit, nav, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_admin_sets_up_a_queue_and_dequeues_it_group_by_group(
    page, live_server, login, admin_user, page_problems
):
    from django.contrib.auth.models import User
    from django.db import transaction

    from queues import engine, services
    from queues.models import Agent, Message, MessageGroupLease, Queue, QueuePrivilege

    server_errors: list[str] = []
    page.on("response", lambda r: server_errors.append(r.url) if r.status >= 500 else None)
    hr = User.objects.create_user(username="hr", password="pw-hr")
    login(page, "alice", "pw-alice")

    nav(page, "Queues", "Queues")
    expect(page.get_by_role("heading", name="Queues")).to_be_visible()
    page.get_by_role("link", name="Set up queue").click()
    expect(page.get_by_role("heading", name="Set up queue")).to_be_visible()
    expect(page.get_by_label("Queue table")).to_have_value("STREAMS_QUEUE_TABLE")
    shot(page, "tx-01-set-up-form")

    # A user that does not exist: the form says so under queue_user, and nothing is created.
    page.get_by_label("Queue table").fill("STRM_QT")
    page.get_by_label("Queue name").fill("STRM_Q")
    page.get_by_label("Queue user").fill("nobody")
    # An action, not an edit: the button says what it does.
    page.get_by_role("button", name="Set up", exact=True).click()
    expect(page.locator('[data-field="queue_user"]')).to_have_text("User 'nobody' does not exist.")
    expect(page.get_by_label("Queue user")).to_have_value("nobody")
    shot(page, "tx-02-set-up-unknown-user")
    assert not Queue.objects.filter(name="STRM_Q").exists()

    page.get_by_label("Queue user").fill("hr")
    page.get_by_role("button", name="Set up", exact=True).click()
    expect(page.locator("#queue-name")).to_have_text("STRM_Q")
    queue = Queue.objects.get(name="STRM_Q")
    assert page.url == f"{live_server.url}{queue.get_absolute_url()}"
    expect(page.locator("body")).to_contain_text("transactional grouping")
    # The page says what SET_UP_QUEUE did: the queue page shows none of the user's part.
    said = page.get_by_role("alert")
    expect(said).to_contain_text("Queue table STRM_QT created; queue STRM_Q created")
    expect(said).to_contain_text("hr is a secure queue user as agent HR (new)")
    assert Agent.objects.get(name="HR").users.filter(pk=hr.pk).exists()
    assert set(
        QueuePrivilege.objects.filter(queue=queue, user=hr).values_list("privilege", flat=True)
    ) == {"ENQUEUE", "DEQUEUE"}
    shot(page, "tx-03-new-queue")

    # Multi-consumer: a subscriber through its form.
    page.get_by_role("link", name="Add subscriber").click()
    page.get_by_label("Name").fill("APPLY")
    page.get_by_role("button", name="Add").click()
    expect(page.locator("#queue-name")).to_have_text("STRM_Q")

    # Three transactions of two messages each (setup: the page enqueues one message a submit).
    for g in ("A", "B", "C"):
        with transaction.atomic():
            for part in (1, 2):
                services.message_enqueue(
                    user=admin_user,
                    queue=queue,
                    messages=[engine.NewMessage(payload={"group": g, "part": part})],
                )
    group_of = {
        (m.payload["group"], m.payload["part"]): (m.pk, m.txn_group)
        for m in Message.objects.filter(queue=queue)
    }
    ga, gb, gc = (group_of[(g, 1)][1] for g in "ABC")
    assert len({ga, gb, gc}) == 3 and group_of[("A", 2)][1] == ga
    page.reload()
    # The message table shows each message's transaction group.
    expect(page.locator("#message-table thead")).to_contain_text("Transaction group")
    expect(page.locator("#message-table tbody tr").filter(has_text=str(ga))).to_have_count(2)

    deq = page.locator("#dequeue-panel")
    result = page.locator("#dequeue-result")
    hint = page.locator("#dequeue-position")
    token = deq.locator('input[name="group_token"]')
    # Next transaction is on offer here (it is not on a queue without grouping, below).
    expect(deq.get_by_label("Navigation").locator("option")).to_have_text(
        ["First message", "Next message", "Next transaction"]
    )

    def go(navigation: str = "NEXT_MESSAGE", mode: str = "REMOVE") -> None:
        deq.get_by_label("Mode", exact=True).select_option(mode)
        deq.get_by_label("Navigation").select_option(navigation)
        htmx_submit(page, deq.get_by_role("button", name="Go"), "/dequeue/")

    def shows(key: tuple[str, int], position: str, *, end: bool) -> None:
        msgid, group = group_of[key]
        expect(result).to_contain_text(f"#{msgid} ")
        expect(result.locator(".aq-group")).to_have_text(
            f"group {group}, message {position}" + (" (end of group)" if end else "")
        )

    # Group A, message by message.
    deq.get_by_label("Consumer name").fill("APPLY")
    go()
    shows(("A", 1), "1/2", end=False)
    expect(hint).to_contain_text(f"This page holds group {ga}")
    lease = MessageGroupLease.objects.get(queue=queue, txn_group=ga)
    expect(token).to_have_value(str(lease.owner_token))
    shot(page, "tx-05-group-a-first")

    # A browse in between: it shows the group's next message and takes no lease, and the page
    # keeps the group it holds (forgetting the token stranded A's second message under a lease
    # nobody held, and the next REMOVE took group B).
    go(mode="BROWSE")
    shows(("A", 2), "2/2", end=True)
    expect(token).to_have_value(str(lease.owner_token))

    go()
    shows(("A", 2), "2/2", end=True)
    expect(hint).to_contain_text(f"End of group {ga}")
    assert not MessageGroupLease.objects.filter(queue=queue, txn_group=ga).exists()
    shot(page, "tx-06-group-a-end")

    # Past the end: AQ's end-of-group error, in the panel, and nothing dequeued.
    go()
    expect(deq.locator('[data-field="group_token"]')).to_contain_text(
        "ORA-25235: fetched all messages of the current transaction group"
    )
    expect(deq.locator('[data-field="group_token"]')).to_contain_text("NEXT_TRANSACTION")
    expect(result).to_have_count(0)
    assert Message.objects.filter(queue=queue, state="READY").count() == 4
    shot(page, "tx-07-end-of-group-error")

    # Next transaction: group B; again, mid-group: group C, B's second message left in the queue.
    go("NEXT_TRANSACTION")
    shows(("B", 1), "1/2", end=False)
    go("NEXT_TRANSACTION")
    shows(("C", 1), "1/2", end=False)
    go()
    shows(("C", 2), "2/2", end=True)
    shot(page, "tx-08-group-c-end")
    left = Message.objects.filter(queue=queue, state="READY").values_list("pk", flat=True)
    assert list(left) == [group_of[("B", 2)][0]]
    expect(page.locator("#message-table tbody tr").filter(has_text="Ready")).to_have_count(1)

    # A queue without grouping offers no Next transaction (it could only be refused there).
    plain_qt = services.queue_table_create(user=admin_user, name="QT_PLAIN", sort_order="enq_time")
    plain = services.queue_create(user=admin_user, name="Q_PLAIN", queue_table=plain_qt)
    page.goto(f"{live_server.url}{plain.get_absolute_url()}")
    options = page.locator("#dequeue-panel").get_by_label("Navigation").locator("option")
    expect(options).to_have_text(["First message", "Next message"])
    expect(page.locator("#message-table thead")).not_to_contain_text(re.compile("Transaction"))

    assert not server_errors, server_errors
    page_problems.assert_none()
