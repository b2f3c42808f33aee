from core.status import StatusView
from queues.models import DbaAqAgentPriv, DbaQueue, DbaQueueTable

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
)
