#!/usr/bin/env bash
# What each restart costs (docs/RESTARTS.md): runs tests/restarts ROUNDS times (default 3) on
# their private PostgreSQL and Redis, with the settings' default timings unless
# AQ_RESTARTS_TIMINGS=short, then prints min / median / max of each figure (seconds from the
# server being back until the web process took an enqueue and each pipeline moved a message).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export AQ_RESTARTS_TIMINGS=${AQ_RESTARTS_TIMINGS:-production}
ROUNDS=${ROUNDS:-3}
FIGURES=test-artifacts/restarts/figures.json
PYTHON=${PYTHON:-python}
rm -f "$FIGURES"
for i in $(seq 1 "$ROUNDS"); do
    echo "==> round $i of $ROUNDS ($AQ_RESTARTS_TIMINGS timings)"
    "$PYTHON" -m pytest tests/restarts -q -p no:cacheprovider -s -m restarts
done
"$PYTHON" - "$FIGURES" "$AQ_RESTARTS_TIMINGS" <<'PY'
import json
import statistics
import sys

data = json.load(open(sys.argv[1]))[sys.argv[2]]
print(f"\n{'restart':<24}{'figure':<26}{'min':>8}{'median':>8}{'max':>8}  (n)")
for kind in sorted(data):
    rounds = data[kind]
    for key in sorted({k for r in rounds for k in r}):
        values = [r[key] for r in rounds if key in r]
        print(
            f"{kind:<24}{key:<26}{min(values):>8.2f}{statistics.median(values):>8.2f}"
            f"{max(values):>8.2f}  ({len(values)})"
        )
PY
