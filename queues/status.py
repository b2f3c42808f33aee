from core.status import StatusView
from queues.models import (
    DbaAqAgentPriv,
    DbaQueue,
    DbaQueueTable,
    VBufferedPublisher,
    VBufferedQueue,
    VBufferedSubscriber,
)

STATUS_VIEWS = (
    StatusView(
        "dba_queue_tables",
        DbaQueueTable,
        hidden=("queue_table_id",),
        app="Queues",
        description="Queue tables: sort order, recipients, secure, payload type.",
    ),
    StatusView(
        "dba_queues",
        DbaQueue,
        app="Queues",
        description="Queues: type, retries, retention, enqueue and dequeue enabled.",
    ),
    StatusView(
        "dba_aq_agent_privs",
        DbaAqAgentPriv,
        hidden=("agent_user_id", "agent_id"),
        app="Queues",
        description="AQ agents and the users that may act as them.",
    ),
    StatusView(
        "v_buffered_queues",
        VBufferedQueue,
        app="Queues",
        description=(
            "V$BUFFERED_QUEUES: buffered queues, messages in memory and spilled, counters since "
            "the buffer was last reset (a crash resets it)."
        ),
    ),
    StatusView(
        "v_buffered_subscribers",
        VBufferedSubscriber,
        app="Queues",
        description="V$BUFFERED_SUBSCRIBERS: each subscriber's pending and dequeued buffered messages.",
    ),
    StatusView(
        "v_buffered_publishers",
        VBufferedPublisher,
        hidden=("publisher_key",),
        app="Queues",
        description="V$BUFFERED_PUBLISHERS: buffered publishers (senders) and their flow-control state.",
    ),
)
