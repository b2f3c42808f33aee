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
