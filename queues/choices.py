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
    # TRANSACTIONAL queue tables only: skip the rest of the current transaction group.
    NEXT_TRANSACTION = "NEXT_TRANSACTION", "Next transaction"


class Visibility(models.TextChoices):
    ON_COMMIT = "ON_COMMIT", "On commit"
    IMMEDIATE = "IMMEDIATE", "Immediate"


class Privilege(models.TextChoices):
    ENQUEUE = "ENQUEUE", "Enqueue"
    DEQUEUE = "DEQUEUE", "Dequeue"
    ALL = "ALL", "Enqueue and dequeue"


class DeliveryMode(models.TextChoices):
    """DBMS_AQ's ``delivery_mode``: persistent messages are logged; buffered ones are kept without
    WAL (UNLOGGED storage) and are lost when the database crashes, as AQ's are when the instance
    fails."""

    PERSISTENT = "PERSISTENT", "Persistent"
    BUFFERED = "BUFFERED", "Buffered"


class MessageGrouping(models.TextChoices):
    """CREATE_QUEUE_TABLE's ``message_grouping``: TRANSACTIONAL makes the messages one transaction
    enqueued a group that dequeue hands out whole, in order, to one consumer."""

    NONE = "NONE", "None"
    TRANSACTIONAL = "TRANSACTIONAL", "Transactional"


class DequeueDeliveryMode(models.TextChoices):
    """DBMS_AQ's dequeue ``delivery_mode``: one kind, or either (PERSISTENT_OR_BUFFERED)."""

    PERSISTENT = "PERSISTENT", "Persistent"
    BUFFERED = "BUFFERED", "Buffered"
    PERSISTENT_OR_BUFFERED = "PERSISTENT_OR_BUFFERED", "Persistent or buffered"
