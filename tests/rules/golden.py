"""The seed's rule conditions, byte for byte, for the generator tests: test data in
``data/generators_golden.json``, extracted once from seed 002 (``seeds/002_dafb8fc72e40d811.txt``
of the team's spec; its sha256 is recorded beside the lines) by line number, so that the tests run
in a plain clone without the seed."""

from __future__ import annotations

import json
from pathlib import Path

DATA = json.loads((Path(__file__).parent / "data" / "generators_golden.json").read_text("utf-8"))

# Seed 002's line number → the line.
SEED_LINES: dict[int, str] = {int(n): line for n, line in DATA["lines"].items()}

L299_GLOBAL_DML = SEED_LINES[299]
L305_GLOBAL_DDL = SEED_LINES[305]
L333_GLOBAL_DML_ALL = SEED_LINES[333]
L335_GLOBAL_DDL_ALL = SEED_LINES[335]
L376_SCHEMA_DML = SEED_LINES[376]
L378_SCHEMA_DDL = SEED_LINES[378]
L427_TABLE_DML = SEED_LINES[427]
L438_TABLE_DDL = SEED_LINES[438]
L509_SUBSET_INSERT = SEED_LINES[509]
L525_SUBSET_UPDATE = SEED_LINES[525]
L535_SUBSET_DELETE = SEED_LINES[535]
L750_MESSAGE_EUROPE = SEED_LINES[750]
L765_MESSAGE_AMERICAS = SEED_LINES[765]
L831_SCHEMA_DML_APPLY = SEED_LINES[831]
L849_NEGATIVE_TABLE = SEED_LINES[849]
L889_AND_CONDITION_DML = SEED_LINES[889]
L891_AND_CONDITION_DDL = SEED_LINES[891]
