from django.db import models


class StreamsRuleType(models.TextChoices):
    """How a system-created rule was generated (DBA_STREAMS_RULES.STREAMS_RULE_TYPE)."""

    GLOBAL = "GLOBAL", "Global"
    SCHEMA = "SCHEMA", "Schema"
    TABLE = "TABLE", "Table"
    SUBSET = "SUBSET", "Subset"
    MESSAGE = "MESSAGE", "Message"


class RuleType(models.TextChoices):
    DML = "DML", "DML"
    DDL = "DDL", "DDL"


class SubsettingOperation(models.TextChoices):
    INSERT = "INSERT", "INSERT"
    UPDATE = "UPDATE", "UPDATE"
    DELETE = "DELETE", "DELETE"


class Classification(models.TextChoices):
    """Oracle's rules engine indexes simple conditions; complex ones are evaluated one by one."""

    SIMPLE = "simple", "Simple"
    COMPLEX = "complex", "Complex"


class VariableType(models.TextChoices):
    ROW_LCR = "SYS.LCR$_ROW_RECORD", "Row change record (SYS.LCR$_ROW_RECORD)"
    DDL_LCR = "SYS.LCR$_DDL_RECORD", "DDL change record (SYS.LCR$_DDL_RECORD)"
    USER = "USER", "User message type"


class DeclarativeType(models.TextChoices):
    """Declarative rule-based transformations, listed in Oracle's default execution order."""

    KEEP_COLUMNS = "KEEP COLUMNS", "Keep columns"
    DELETE_COLUMN = "DELETE COLUMN", "Delete column"
    RENAME_COLUMN = "RENAME COLUMN", "Rename column"
    ADD_COLUMN = "ADD COLUMN", "Add column"
    RENAME_TABLE = "RENAME TABLE", "Rename table"
    RENAME_SCHEMA = "RENAME SCHEMA", "Rename schema"


class ValueType(models.TextChoices):
    OLD = "OLD", "Old values"
    NEW = "NEW", "New values"
    BOTH = "*", "Old and new values"
