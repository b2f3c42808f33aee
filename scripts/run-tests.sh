#!/usr/bin/env bash
# README command (2), and what CI runs (.ci/run): install what the tests need, make sure the
# machine's services answer, lint, then run the whole suite. Arguments go to pytest.
#
# The suite runs against a real PostgreSQL (DATABASE_URL, default the machine's on 127.0.0.1:5432)
# and a real Redis broker (CELERY_BROKER_URL, default 127.0.0.1:6379); browser tests drive Debian's
# chromium. Exit status is pytest's, except that "no tests collected" (5) counts as a failure.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
PYTHON=${PYTHON:-python3}

say() { printf '==> %s\n' "$*"; }

# --- install -------------------------------------------------------------------------------------
# shellcheck source=scripts/lib-install.sh
source "$ROOT/scripts/lib-install.sh"
ensure_venv "$PYTHON"
ensure_project_installed ".[test]"
export PATH="$ROOT/.venv/bin:$PATH"

if [ ! -x /usr/bin/chromium ]; then
    say "installing Debian's chromium for the browser tests"
    apt_install chromium || { echo "Could not install chromium." >&2; exit 1; }
fi
ensure_java

# --- services ------------------------------------------------------------------------------------
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_for NAME PORT SECONDS CHECK...: true once CHECK succeeds (or, with no CHECK, the port opens).
wait_for() {
    local name=$1 port=$2 seconds=$3
    shift 3
    local deadline=$((SECONDS + seconds))
    while [ "$SECONDS" -lt "$deadline" ]; do
        if port_open "$port" && { [ $# -eq 0 ] || "$@" >/dev/null 2>&1; }; then
            return 0
        fi
        sleep 1
    done
    echo "$name did not answer on port $port within ${seconds}s" >&2
    return 1
}

# ensure_service NAME PORT REQUIRED START-COMMAND [-- CHECK...]
ensure_service() {
    local name=$1 port=$2 required=$3 start=$4
    shift 4
    [ "${1:-}" = "--" ] && shift
    if port_open "$port" && { [ $# -eq 0 ] || "$@" >/dev/null 2>&1; }; then
        return 0
    fi
    say "starting $name"
    if bash -c "$start" </dev/null >/dev/null 2>&1 && wait_for "$name" "$port" 90 "$@"; then
        return 0
    fi
    if [ "$required" = required ]; then
        echo "$name is needed by the tests and could not be started." >&2
        exit 1
    fi
    echo "warning: $name is not running; tests that need it will fail or skip." >&2
}

pg_ready() { pg_isready -q -h 127.0.0.1 -p 5432; }
redis_ready() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ]; }

PG_CHECK=()
command -v pg_isready >/dev/null 2>&1 && PG_CHECK=(pg_ready)
REDIS_CHECK=()
command -v redis-cli >/dev/null 2>&1 && REDIS_CHECK=(redis_ready)

ensure_service PostgreSQL 5432 required \
    'pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start' \
    -- "${PG_CHECK[@]}"
ensure_service Redis 6379 required \
    'redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
        --dir /var/lib/redis --logfile /var/log/redis/ci.log' \
    -- "${REDIS_CHECK[@]}"
# The Messaging Gateway's tests run against the real foreign brokers.
ensure_service RabbitMQ 5672 required 'rabbitmq-server -detached'
ensure_service Mosquitto 1883 required 'mosquitto -d -c /etc/mosquitto/mosquitto.conf'
ensure_service NATS 4222 required \
    'start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
        -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log'

# --- settings for the suite ----------------------------------------------------------------------
if [ -z "${DATABASE_URL:-}" ]; then
    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/aqconsole
    if ! psql "postgres://postgres@127.0.0.1:5432/postgres" -tAc \
        "SELECT 1 FROM pg_database WHERE datname = 'aqconsole'" | grep -q 1; then
        say "creating database aqconsole"
        psql "postgres://postgres@127.0.0.1:5432/postgres" -qc "CREATE DATABASE aqconsole"
    fi
fi
export CELERY_BROKER_URL=${CELERY_BROKER_URL:-redis://127.0.0.1:6379/0}
# Spark's JVMs (the jobs' drivers and the rules suite's local session) with the client compiler
# only and one GC thread: the suite's applications are short, and on two cores the server
# compiler's threads took most of a core beside the other lanes.
export AQ_SPARK_JAVA_OPTIONS=${AQ_SPARK_JAVA_OPTIONS-"-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}

# --- lint, then the suite ------------------------------------------------------------------------
say "ruff check ."
ruff check .
say "ruff format --check ."
ruff format --check .

# --- the suite: three lanes at once --------------------------------------------------------------
# With no test path among the arguments (CI), the suite runs as three pytest processes side by
# side, each with its own test database and its own Redis database as the Celery broker, so none
# sees another's tasks. Lane A holds the suites that run real workers, private servers and the
# foreign brokers (they share those brokers' names, so they stay in one lane, one at a time) and
# the pages in a real browser; lane S the Spark applications (tests/jobs; each cluster takes free
# loopback ports) and the API; lane B the rest (pages, engine, rules). The split balances what
# was measured on this kind of machine (2 cores): with the browser and API suites in lane B, it
# took 2,691 s beside 1,509 s (A) and 1,545 s (S); split as below (and Spark's JVMs lighter, see
# AQ_SPARK_JAVA_OPTIONS above), A 1,563 s, S 1,821 s, B 1,377 s. On a slower machine of the kind
# (2026-11-28) the same split took A 2,510 s, S 2,949 s, B 2,561 s: the API's schema fuzzing
# and its list-cost test moved to lane B, and lane B's longest tests got cheaper. A fourth lane made
# every lane slower: the machine is CPU-bound with three (load average 5-9), so more lanes only
# add contention.
# AQ_TEST_LANES=1 runs everything in one process; arguments go to pytest either way.
LANE_A=(tests/celery tests/restarts tests/gateway tests/sites tests/instances
    tests/test_bench_smoke.py tests/browser)
LANE_S=(tests/jobs tests/api)
# Files of lane S's folders that run in lane B instead, to even the lanes out (see above).
S_TO_B=(tests/api/test_the_api_conforms_to_its_schema_under_fuzzing.py
    tests/api/test_list_endpoints_cost_the_same_whatever_their_size.py)

run_pytest() {
    local rc=0
    pytest "$@" </dev/null || rc=$?
    if [ "$rc" -eq 5 ]; then
        echo "pytest collected no tests: something is wrong with the suite or its arguments." >&2
        return 1
    fi
    return "$rc"
}

paths_given=false
for arg in "$@"; do
    # A test path (maybe with ::node), not an option or an option's value.
    case "$arg" in
        -*) ;;
        *) [ -e "${arg%%::*}" ] && paths_given=true ;;
    esac
done

if [ "$paths_given" = true ] || [ "${AQ_TEST_LANES:-3}" = 1 ]; then
    say "pytest $*"
    run_pytest "$@"
    exit $?
fi

# The settings module makes var/secret-key on first use: make it before the lanes start, so
# all of them (and every worker they start) encrypt and decrypt with the same key.
DJANGO_SETTINGS_MODULE=console.settings python -c "import django; django.setup()"

TEST_DB=${TEST_DATABASE_NAME:-test_aqconsole}
BROKER_A=$CELERY_BROKER_URL
BROKER_B=${AQ_TEST_BROKER_B:-redis://127.0.0.1:6379/2}
BROKER_S=${AQ_TEST_BROKER_S:-redis://127.0.0.1:6379/3}
if [ "$(printf '%s\n' "$BROKER_A" "$BROKER_B" "$BROKER_S" | sort -u | wc -l)" -ne 3 ]; then
    echo "The three lanes need three brokers: CELERY_BROKER_URL, AQ_TEST_BROKER_B and" \
        "AQ_TEST_BROKER_S must differ." >&2
    exit 1
fi
IGNORE_S=()
for path in "${S_TO_B[@]}"; do
    if [ ! -f "$path" ]; then
        # moved() below handles files only: a folder here would run in both lanes or in none.
        echo "S_TO_B names $path, which is not a test file." >&2
        exit 1
    fi
    IGNORE_S+=(--ignore="$path")
done
# Lane B ignores lanes A and S, except S_TO_B: a folder holding one of those is ignored file by
# file (its test files sit directly in it).
moved() {
    local p
    for p in "${S_TO_B[@]}"; do [[ $p == "$1" || $p == "$1"/* ]] && return 0; done
    return 1
}
IGNORE_B=()
for path in "${LANE_A[@]}"; do IGNORE_B+=(--ignore="$path"); done
for path in "${LANE_S[@]}"; do
    if moved "$path"; then
        for file in "$path"/test_*.py; do moved "$file" || IGNORE_B+=(--ignore="$file"); done
    else
        IGNORE_B+=(--ignore="$path")
    fi
done

LOGS=$(mktemp -d)
# start_lane NAME TEST_DATABASE BROKER PYTEST-ARGS...: the lane's output goes to its log.
start_lane() {
    local name=$1 db=$2 broker=$3
    shift 3
    say "pytest lane ${name^^}: $* (test database $db, broker $broker)"
    (
        set +e
        export TEST_DATABASE_NAME=$db CELERY_BROKER_URL=$broker
        run_pytest "$@" >"$LOGS/$name.log" 2>&1
        echo $? >"$LOGS/$name.rc"
    ) &
}
started=$SECONDS
start_lane a "$TEST_DB" "$BROKER_A" "${LANE_A[@]}" "$@"
start_lane s "${TEST_DB}_s" "$BROKER_S" "${LANE_S[@]}" "${IGNORE_S[@]}" "$@"
start_lane b "${TEST_DB}_b" "$BROKER_B" tests "${IGNORE_B[@]}" "$@"
LANES=(a s b)
# Say how far each lane is while they run (a CI log that stops for 30 minutes helps nobody).
all_done() {
    local lane
    for lane in "${LANES[@]}"; do [ -f "$LOGS/$lane.rc" ] || return 1; done
}
until all_done; do
    sleep 60
    for lane in "${LANES[@]}"; do
        last=$(tail -c 2000 "$LOGS/$lane.log" 2>/dev/null | tr '\r' '\n' | grep -o '\[ *[0-9]*%\]' | tail -1 || true)
        printf '    lane %s: %s %s\n' "${lane^^}" "${last:-starting}" \
            "$([ -f "$LOGS/$lane.rc" ] && echo "(done)")"
    done
done
wait
failed=0
summary=()
for lane in "${LANES[@]}"; do
    say "lane ${lane^^} output"
    cat "$LOGS/$lane.log"
    rc=$(cat "$LOGS/$lane.rc")
    summary+=("lane ${lane^^} exit $rc")
    [ "$rc" -eq 0 ] || failed=1
done
say "${summary[*]}, $((SECONDS - started)) s for all"
rm -rf "$LOGS"
exit "$failed"
