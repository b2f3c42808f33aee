from django.db import models


class SortOrder(models.TextChoices):
    """A queue table's message ordering (DBMS_AQADM.CREATE_QUEUE_TABLE ``sort_list``)."""

    ENQ_TIME = "enq_time", "enq_time"
    PRIORITY = "priority", "priority"
    COMMIT_TIME = "commit_time", "commit_time"
    PRIORITY_COMMIT_TIME = "priority,commit_time", "priority, commit_time"


class QueueKind(models.TextChoices):
    NORMAL = "NORMAL_QUEUE", "Normal queue"
    EXCEPTION = "EXCEPTION_QUEUE", "Exception queue"


class MessageState(models.TextChoices):
    WAITING = "WAITING", "Waiting"
    READY = "READY", "Ready"
    PROCESSED = "PROCESSED", "Processed"
    EXPIRED = "EXPIRED", "Expired"


class MessageKind(models.TextChoices):
    USER = "USER", "User message"
    ROW_LCR = "ROW_LCR", "Row change record"
    DDL_LCR = "DDL_LCR", "DDL change record"


class DequeueMode(models.TextChoices):
    REMOVE = "REMOVE", "Remove"
    LOCKED = "LOCKED", "Locked"
    BROWSE = "BROWSE", "Browse"


class Navigation(models.TextChoices):
    FIRST_MESSAGE = "FIRST_MESSAGE", "First message"
    NEXT_MESSAGE = "NEXT_MESSAGE", "Next message"


class Visibility(models.TextChoices):
    ON_COMMIT = "ON_COMMIT", "On commit"
    IMMEDIATE = "IMMEDIATE", "Immediate"


class Privilege(models.TextChoices):
    ENQUEUE = "ENQUEUE", "Enqueue"
    DEQUEUE = "DEQUEUE", "Dequeue"
    ALL = "ALL", "Enqueue and dequeue"
