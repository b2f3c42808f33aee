from core.status import StatusView
from queues.models import (
    DbaAqAgentPriv,
    DbaQueue,
    DbaQueueTable,
    DbaQueueTableOwnerLog,
    DbaService,
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
        description="Queue tables: sort order, recipients, secure, payload type; primary, "
        "secondary and owner instance (INST_ID, 0 = none).",
    ),
    StatusView(
        "dba_queues",
        DbaQueue,
        app="Queues",
        description="Queues: type, retries, retention, enqueue and dequeue enabled, network name.",
    ),
    StatusView(
        "dba_services",
        DbaService,
        app="Queues",
        description="Queue services: one per queue, named as its network name, resolving to its "
        "queue table's owner instance (INST_ID 0: no instance up).",
    ),
    StatusView(
        "dba_queue_table_owner_log",
        DbaQueueTableOwnerLog,
        app="Queues",
        description="Ownership moves of queue tables (this project's, not Oracle's): when, from "
        "which instance to which, and why.",
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
