"""The queue engine is the only writer of message rows: no module outside ``queues/engine/`` (and
the migrations) INSERTs, UPDATEs, DELETEs, TRUNCATEs or COPYs into ``aq_message``,
``aq_message_consumer``, ``aq_queue_stat`` or a queue table's storage leaves (``aq_qt…``), nor
writes them through the ORM. Tests are not modules of the application (they set states up by
hand) and are not scanned.

A static scan: it sees SQL text and ORM calls, not a table name computed at run time; the engine
hands its leaf names out only in the SQL it builds (``queues/engine/sets.py``)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLES = r"(?:aq_message_consumer|aq_message|aq_queue_stat|aq_qt(?:\d+|\{)\w*)"
SQL_WRITE = re.compile(
    r"\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|TRUNCATE(?:\s+TABLE)?(?:\s+ONLY)?"
    r"(?:\s+[\w.\"{}]+\s*,)*|COPY|MERGE\s+INTO)\s+(?:ONLY\s+)?(?:\"?public\"?\.)?\"?"
    + TABLES
    + r"\b",
    re.IGNORECASE,
)
ORM_WRITE = re.compile(
    r"\b(?:Message|MessageConsumer|QueueStat)\.objects\b[^\n]*?\."
    r"(?:create|bulk_create|get_or_create|update_or_create|update|bulk_update|delete)\("
)
# The one module outside the engine allowed to write: a benchmark's plain-INSERT baseline, the
# limit the engine's copy is measured against (it deletes its own rows again).
ALLOWED = {"console/bench/propagation.py"}


def violations(text: str) -> list[str]:
    found = [m.group(0) for m in SQL_WRITE.finditer(text)]
    found += [m.group(0) for m in ORM_WRITE.finditer(text)]
    return found


def _modules() -> list[Path]:
    skip = ("queues/engine/", "/migrations/", "tests/", ".venv/", "node_modules/")
    out = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(skip) or any(s in f"/{rel}" for s in skip if s.startswith("/")):
            continue
        out.append(path)
    return out


def test_the_scan_flags_a_planted_writer_and_passes_a_reader():
    planted = {
        "conn.execute(\"UPDATE aq_message SET state = 'READY' WHERE id = %s\")": 1,
        "DELETE FROM aq_message_consumer mc USING x": 1,
        "insert into public.aq_queue_stat (queue_id) values (1)": 1,
        'f"DELETE FROM aq_qt{qt}_p WHERE id = 1"': 1,
        "TRUNCATE aq_qt12_cp": 1,
        "TRUNCATE aq_bulk_part, aq_message": 1,
        "COPY aq_message (id) FROM STDIN": 1,
        'cur.execute("""\n    WITH d AS (\n        UPDATE\n  aq_message m SET x = 1)""")': 1,
        "Message.objects.filter(queue=q).delete()": 1,
        "MessageConsumer.objects.create(message_id=1)": 1,
        # Reads and look-alikes are not writes.
        "SELECT count(*) FROM aq_message WHERE queue_id = %s": 0,
        "UPDATE aq_message_archive SET x = 1": 0,
        "UPDATE aq_bulk_part SET read = 1": 0,
        "Message.objects.filter(queue=q).count()": 0,
        "SELECT pg_get_serial_sequence('aq_message', 'id')": 0,
    }
    for text, n in planted.items():
        assert len(violations(text)) == n, text


def test_the_scan_covers_the_modules_that_used_to_write():
    scanned = {p.relative_to(ROOT).as_posix() for p in _modules()}
    assert {"jobs/spark/sink.py", "queues/services.py", "console/bench/queues.py"} <= scanned
    assert not any(s.startswith(("queues/engine/", "tests/")) for s in scanned)


def test_no_module_outside_the_engine_writes_message_tables():
    found = {}
    for path in _modules():
        rel = path.relative_to(ROOT).as_posix()
        hits = violations(path.read_text(encoding="utf-8"))
        if hits and rel not in ALLOWED:
            found[rel] = hits
    assert found == {}, f"message tables written outside queues/engine/: {found}"
