from django.db import models


class RunState(models.TextChoices):
    """One Celery execution inside a propagation window (a row created before its task is sent)."""

    QUEUED = "QUEUED", "Queued"
    RUNNING = "RUNNING", "Running"
    SUCCEEDED = "SUCCEEDED", "Succeeded"
    FAILED = "FAILED", "Failed"
    LOST = "LOST", "Lost"  # its task never started (broker lost it, or the worker was full)


class ScheduleState(models.TextChoices):
    """What an operator sees for a propagation; derived, never stored."""

    RUNNING = "running", "Running"
    IDLE = "idle", "Idle"
    STUCK = "stuck", "Stuck"
    QUEUED = "queued", "Waiting for a worker"
    WAITING = "waiting", "Waiting for window"
    BACKING_OFF = "backing_off", "Backing off"
    DISABLED = "disabled", "Disabled"
    FAILED = "failed", "Failed"
    STOPPED = "stopped", "Propagation stopped"
    UNSCHEDULED = "unscheduled", "Not scheduled"
    RESTRICTED = "restricted", "Held by maintenance mode"


# Bootstrap badge colour per state, one place for pages and the graph.
STATE_COLOURS = {
    ScheduleState.RUNNING: "success",
    ScheduleState.IDLE: "info",
    ScheduleState.STUCK: "danger",
    ScheduleState.QUEUED: "secondary",
    ScheduleState.WAITING: "secondary",
    ScheduleState.BACKING_OFF: "warning",
    ScheduleState.DISABLED: "secondary",
    ScheduleState.FAILED: "danger",
    ScheduleState.STOPPED: "secondary",
    ScheduleState.UNSCHEDULED: "light",
    ScheduleState.RESTRICTED: "warning",
}


class RunEnd(models.TextChoices):
    """Why a run ended (its FAILED runs carry the error instead)."""

    WINDOW_END = "window_end", "Window ended"
    SLICE = "slice", "Time slice used up"
    YIELDED = "yielded", "Idle; gave its slot to a waiting run"
    DISABLED = "disabled", "Schedule or propagation disabled"
    DROPPED = "dropped", "Propagation or schedule removed"
    WORKER_STOP = "worker_stop", "Its worker was shutting down"
    OWNER_MOVED = "owner_moved", "Its queue table moved to another instance"


class SparkJobState(models.TextChoices):
    """A bulk propagation job on Spark (a row created before its task is sent)."""

    SUBMITTED = "SUBMITTED", "Submitted"
    RUNNING = "RUNNING", "Running"
    SUCCEEDED = "SUCCEEDED", "Succeeded"
    FAILED = "FAILED", "Failed"
    CANCELLED = "CANCELLED", "Cancelled"


SPARK_ACTIVE_STATES = (SparkJobState.SUBMITTED, SparkJobState.RUNNING)


class SparkJobPhase(models.TextChoices):
    """Where a Spark job is within its state, for the page while Spark has no task to count
    yet: QUEUED while SUBMITTED; STARTING, READING, WRITING while RUNNING (the following task
    derives them from the driver's reports); then the finished state itself."""

    QUEUED = "QUEUED", "Submitted: task queued"
    STARTING = "STARTING", "Starting Spark"
    READING = "READING", "Reading"
    WRITING = "WRITING", "Writing"
    SUCCEEDED = "SUCCEEDED", "Succeeded"
    FAILED = "FAILED", "Failed"
    CANCELLED = "CANCELLED", "Cancelled"


# The order phases move in within an attempt (a follower never moves one back).
SPARK_PHASE_ORDER = {p: i for i, p in enumerate(SparkJobPhase.values)}
SPARK_STATE_COLOURS = {
    SparkJobState.SUBMITTED: "secondary",
    SparkJobState.RUNNING: "primary",
    SparkJobState.SUCCEEDED: "success",
    SparkJobState.FAILED: "danger",
    SparkJobState.CANCELLED: "warning",
}


class SparkSelection(models.TextChoices):
    """Which source messages a bulk job takes (all of them READY at submission, at most)."""

    ALL_READY = "ALL_READY", "All READY messages"
    ENQ_TIME_RANGE = "ENQ_TIME_RANGE", "Enqueued in a time range"
    CORRELATION = "CORRELATION", "Correlation id (% and _ wildcards)"
    CONDITION = "CONDITION", "A rule condition"


class SparkMode(models.TextChoices):
    COPY = "COPY", "Copy (the source keeps its messages)"
    MOVE = "MOVE", "Move (consumed at the source once every destination has them)"
