#!/usr/bin/env bash
# Installs the two peer queues that `manage.py bench queues --peers` measures beside the engine, on
# the same PostgreSQL server, each in a database of its own (docs/BENCHMARKS.md, "Side by side"):
#   - PgQ (Skype's batch queue) from Debian's postgresql-<major>-pgq3 package (installed with apt-get
#     when missing), as the extension pgq in the database pgqpeer;
#   - PGMQ (pure SQL) from a git directory of the public repository pgmq/pgmq, in the database
#     pgmqpeer. A bare git directory will do: the SQL is read with `git show`, no work tree needed.
# Nothing of either is committed to this project. Both databases are dropped and created afresh.
#
# Usage: scripts/install-bench-peers.sh [PGMQ_GIT_DIR]
#   PGMQ_GIT_DIR   the pgmq/pgmq git directory (argument or environment variable)
#   PGMQ_REF       the commit, tag or branch of it to install (default HEAD)
#   PEERS_SERVER   the server, without a database name; default: DATABASE_URL's server, else
#                  postgresql://postgres@127.0.0.1:5432
# apt-get needs root (or sudo without a password) on the machine that runs the server.
set -euo pipefail

say() { printf '==> %s\n' "$*"; }
die() {
    printf 'install-bench-peers: %s\n' "$*" >&2
    exit 1
}

git_dir=${1:-${PGMQ_GIT_DIR:-}}
ref=${PGMQ_REF:-HEAD}
[ -n "$git_dir" ] || die "give the pgmq/pgmq git directory as the argument or in PGMQ_GIT_DIR"
# Checked before anything is installed, so a wrong directory changes nothing.
commit=$(git --git-dir "$git_dir" rev-parse --verify -q "$ref^{commit}" 2>/dev/null) ||
    die "$git_dir is not a git directory with a commit $ref"
sql=$(git --git-dir "$git_dir" show "$commit:pgmq-extension/sql/pgmq.sql" 2>/dev/null) ||
    die "$git_dir at $ref has no pgmq-extension/sql/pgmq.sql: is it pgmq/pgmq?"

if [ -n "${PEERS_SERVER:-}" ]; then
    server=$PEERS_SERVER
elif [ -n "${DATABASE_URL:-}" ]; then
    # postgres://user@host:port/dbname?opts -> postgres://user@host:port
    server=${DATABASE_URL%%\?*}
    server=${server%/*}
else
    server=postgresql://postgres@127.0.0.1:5432
fi

psql_at() { psql -X -v ON_ERROR_STOP=1 -qAt "$@"; }

psql_at "$server/postgres" -c "select 1" >/dev/null || die "cannot connect to $server/postgres"
major=$(psql_at "$server/postgres" -c "select current_setting('server_version_num')::int / 10000")

fresh_db() {
    psql_at "$server/postgres" -c "set client_min_messages = warning" \
        -c "drop database if exists $1" -c "create database $1"
}

# --- PgQ -----------------------------------------------------------------------------------------
pgq_pkg=postgresql-$major-pgq3
available() {
    [ "$(psql_at "$server/postgres" -c "select count(*) from pg_available_extensions where name = 'pgq'")" = 1 ]
}
if ! available; then
    say "installing Debian's $pgq_pkg"
    sudo=""
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null 2>&1 || die "$pgq_pkg is missing and this is not root (no sudo either)"
        sudo="sudo -n"
    fi
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null >/dev/null ||
        die "apt-get update failed"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$pgq_pkg" </dev/null >/dev/null ||
        die "apt-get install $pgq_pkg failed"
    available || die "$pgq_pkg is installed but the server at $server offers no pgq extension (another machine?)"
fi
fresh_db pgqpeer
psql_at "$server/pgqpeer" -c "create extension pgq"
version=$(psql_at "$server/pgqpeer" -c "select extversion from pg_extension where extname = 'pgq'")
# Probe: a queue and an event, then nothing left.
psql_at "$server/pgqpeer" -c "select pgq.create_queue('probe')" \
    -c "select pgq.insert_event('probe', 'm', 'x')" -c "select pgq.drop_queue('probe')" >/dev/null
say "PgQ $version installed in pgqpeer"

# --- PGMQ ----------------------------------------------------------------------------------------
fresh_db pgmqpeer
printf '%s\n' "$sql" | psql_at "$server/pgmqpeer" >/dev/null
psql_at "$server/pgmqpeer" -c "select pgmq.create('probe')" -c "select pgmq.drop_queue('probe')" >/dev/null
# Which PGMQ was measured: `bench queues --peers` prints this comment into its JSON.
psql_at "$server/postgres" -c "comment on database pgmqpeer is 'pgmq/pgmq@$commit'"
say "PGMQ pgmq/pgmq@${commit:0:12} installed in pgmqpeer"
