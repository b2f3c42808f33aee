#!/usr/bin/env bash
# README command (1): install everything and run the console in the foreground until Ctrl-C.
#
# With no environment set it uses the embedded defaults: PostgreSQL from the pgserver wheel (data
# under var/pgdata), a filesystem Celery broker (var/broker) and Spark local[*]. DATABASE_URL,
# CELERY_BROKER_URL, SPARK_MASTER, SECRET_KEY, ALLOWED_HOSTS, DEBUG, HOST and PORT are honoured.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
VAR="$ROOT/var"
LOGS="$VAR/log"
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
PYTHON=${PYTHON:-python3}
ADMIN_USERNAME=${ADMIN_USERNAME:-admin}
mkdir -p "$VAR" "$LOGS"

say() { printf '==> %s\n' "$*"; }

# --- install -------------------------------------------------------------------------------------
# shellcheck source=scripts/lib-install.sh
source "$ROOT/scripts/lib-install.sh"
ensure_venv "$PYTHON"
ensure_project_installed "."
ensure_java
PY="$ROOT/.venv/bin/python"
# /usr/sbin: the embedded PostgreSQL (pgserver) runs useradd when started as root.
export PATH="$ROOT/.venv/bin:$PATH:/usr/sbin:/sbin"

# A port already in use would leave gunicorn failing behind our back; say so plainly instead.
if (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null; then
    echo "Port $PORT on $HOST is already in use. Stop what runs there or set PORT=..." >&2
    exit 1
fi

# Sessions must not be signed with the public default key: make one per install and keep it.
if [ -z "${SECRET_KEY:-}" ]; then
    if [ ! -s "$VAR/secret-key" ]; then
        (umask 077 && "$PY" -c 'import secrets; print(secrets.token_urlsafe(50))' >"$VAR/secret-key")
    fi
    SECRET_KEY=$(cat "$VAR/secret-key")
    export SECRET_KEY
fi

# --- the embedded PostgreSQL is stopped on exit only if this run started it ---------------------
EMBEDDED_PG=0
if [ -z "${DATABASE_URL:-}" ] && ! "$PY" -m console.embedded running "$VAR" 2>/dev/null; then
    EMBEDDED_PG=1
fi

PGIDS=()
NAMES=()
stopping=0
cleanup() {
    local rc=$?
    [ "$stopping" = 1 ] && return
    stopping=1
    # Stopping must finish even when our output is gone (a `| tee` killed by the same Ctrl-C):
    # a write then fails instead of killing this shell with SIGPIPE, and a failure is not fatal.
    trap '' INT TERM PIPE
    set +e
    if [ ${#PGIDS[@]} -gt 0 ]; then
        say "stopping ${NAMES[*]}"
        local pgid
        # TERM to each leader only: gunicorn's master and Celery's main process then stop their own
        # children in order (Celery's warm shutdown lets running tasks finish). Whatever is left
        # of a group after 30 s is killed.
        for pgid in "${PGIDS[@]}"; do kill -TERM "$pgid" 2>/dev/null || true; done
        local deadline=$((SECONDS + 30)) alive
        while :; do
            alive=0
            for pgid in "${PGIDS[@]}"; do kill -0 -- "-$pgid" 2>/dev/null && alive=1; done
            [ "$alive" = 0 ] || [ "$SECONDS" -ge "$deadline" ] && break
            sleep 0.3
        done
        for pgid in "${PGIDS[@]}"; do kill -KILL -- "-$pgid" 2>/dev/null || true; done
        wait 2>/dev/null || true
    fi
    if [ "$EMBEDDED_PG" = 1 ]; then
        "$PY" -m console.embedded stop "$VAR" || true
    fi
    say "stopped"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- database, admin account, demo, static files -------------------------------------------------
say "migrating the database"
"$PY" manage.py migrate --noinput

# The password is generated once and kept, so every run prints the same credentials.
CREDS="$VAR/admin-credentials"
if [ ! -s "$CREDS" ]; then
    (
        umask 077
        printf 'username=%s\npassword=%s\n' "$ADMIN_USERNAME" \
            "$("$PY" -c 'import secrets; print(secrets.token_urlsafe(12))')" >"$CREDS"
    )
fi
ADMIN_USERNAME=$(sed -n 's/^username=//p' "$CREDS")
ADMIN_PASSWORD=$(sed -n 's/^password=//p' "$CREDS")
export ADMIN_USERNAME ADMIN_PASSWORD
say "ensuring the administrator account $ADMIN_USERNAME"
"$PY" manage.py shell --no-imports -c '
import os
from django.contrib.auth.models import Group, User

name, password = os.environ["ADMIN_USERNAME"], os.environ["ADMIN_PASSWORD"]
user = User.objects.filter(username=name).first()
if user is None:
    # A password changed later in the console is kept: only a new account gets the stored one.
    user = User.objects.create_superuser(username=name, email="", password=password)
user.groups.add(Group.objects.get(name="administrator"))
'

say "loading the demo topology"
"$PY" manage.py demo_topology
# Start the gateway's DEFAULT_AGENT (its worker starts below and picks the start up); after an
# unclean stop the agent is still marked running, and the reaper restarts it by itself.
"$PY" manage.py mgwadm startup --agent_name DEFAULT_AGENT >/dev/null 2>&1 || true

say "collecting static files"
"$PY" manage.py collectstatic --noinput -v0

# --- processes -----------------------------------------------------------------------------------
# Each child gets its own session (setsid), so Ctrl-C reaches only this script, which then stops
# each child's whole process group (gunicorn and Celery workers fork) in order.
start() {
    local name=$1
    shift
    setsid "$@" >>"$LOGS/$name.log" 2>&1 &
    PGIDS+=("$!")
    NAMES+=("$name")
}

say "starting the web server, four Celery workers and Celery beat (logs in var/log/)"
start web gunicorn console.wsgi:application --bind "$HOST:$PORT" \
    --workers "${WEB_WORKERS:-2}" --threads "${WEB_THREADS:-4}" --worker-class gthread \
    --timeout 120 --graceful-timeout 10 --access-logfile - --error-logfile -
start worker celery -A console worker --loglevel INFO --concurrency "${WORKER_CONCURRENCY:-2}" \
    --queues celery --hostname "worker@%h"
# Propagation windows hold a pool slot while they listen for messages, so they get a worker of
# their own (threads: a waiting window costs a thread and a connection, not a process).
start propagation celery -A console worker --loglevel INFO --queues propagation --pool threads \
    --concurrency "${PROPAGATION_CONCURRENCY:-8}" --hostname "propagation@%h"
# Spark bulk jobs: a task follows its spark-submit for the job's whole run (threads: a job costs
# a thread waiting on a subprocess; the driver itself is a process of its own).
start spark celery -A console worker --loglevel INFO --queues spark --pool threads \
    --concurrency "${SPARK_CONCURRENCY:-2}" --hostname "spark@%h"
# The Messaging Gateway's DEFAULT_AGENT: its session holds a thread for as long as it runs.
start gateway celery -A console worker --loglevel INFO --queues mgw.DEFAULT_AGENT --pool threads \
    --concurrency "${GATEWAY_CONCURRENCY:-2}" --hostname "gateway@%h"
start beat celery -A console beat --loglevel INFO \
    --schedule "$VAR/celerybeat-schedule" --pidfile=

# Wait for the web server to answer before telling the user where to go.
URL="http://$HOST:$PORT/"
ready=0
for _ in $(seq 1 120); do
    if "$PY" -c 'import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1] + "login/", timeout=2)
except Exception:
    sys.exit(1)' "$URL" 2>/dev/null; then
        ready=1
        break
    fi
    for i in "${!PGIDS[@]}"; do
        if ! kill -0 "${PGIDS[$i]}" 2>/dev/null; then
            echo "The ${NAMES[$i]} process exited; the end of var/log/${NAMES[$i]}.log:" >&2
            tail -n 30 "$LOGS/${NAMES[$i]}.log" >&2
            exit 1
        fi
    done
    sleep 0.5
done
[ "$ready" = 1 ] || echo "warning: ${URL}login/ does not answer yet; see var/log/web.log" >&2

cat <<EOF

  AQ console is running at $URL
    username: $ADMIN_USERNAME
    password: $ADMIN_PASSWORD
  (kept in var/admin-credentials; a password changed in the console is not reset)
  API: ${URL}api/  schema: ${URL}api/schema/  docs: ${URL}api/docs/
  Logs: var/log/web.log, var/log/worker.log, var/log/propagation.log, var/log/spark.log, var/log/gateway.log, var/log/beat.log

  Press Ctrl-C to stop.

EOF

# Stay in the foreground; if any child dies, stop the others and say which one.
while :; do
    for i in "${!PGIDS[@]}"; do
        if ! kill -0 "${PGIDS[$i]}" 2>/dev/null; then
            echo "The ${NAMES[$i]} process exited; the end of var/log/${NAMES[$i]}.log:" >&2
            tail -n 30 "$LOGS/${NAMES[$i]}.log" >&2
            exit 1
        fi
    done
    sleep 1 &
    wait $! 2>/dev/null || true
done
