from core.status import StatusView
from jobs.models import DbaPropagation, DbaQueueSchedule, VPropagationReceiver, VPropagationSender

STATUS_VIEWS = (
    StatusView(
        "dba_propagation",
        DbaPropagation,
        hidden=("propagation_id",),
        app="Propagations",
        description="Propagations: source, destination, rule sets, status and last error.",
    ),
    StatusView(
        "dba_queue_schedules",
        DbaQueueSchedule,
        hidden=("schedule_id",),
        app="Propagations",
        description="Propagation schedules: window, latency, runs, totals, failures.",
    ),
    StatusView(
        "v_propagation_sender",
        VPropagationSender,
        hidden=("propagation_id",),
        app="Propagations",
        description="Sender-side counters per destination, local and remote, with the messages "
        "the source still keeps for it (unacknowledged) and the oldest one's age.",
    ),
    StatusView(
        "v_propagation_receiver",
        VPropagationReceiver,
        hidden=("receiver_id", "propagation_id"),
        app="Propagations",
        description="Receiver-side counters per source site, source queue (stream) and queue "
        "here, with the source site's global name.",
    ),
)
