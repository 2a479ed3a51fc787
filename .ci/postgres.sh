#!/usr/bin/env bash
# A throw-away PostgreSQL server for the tests: its own cluster in a temporary directory,
# listening on 127.0.0.1 only, on a free port, trusting local connections.
#
#   eval "$(bash .ci/postgres.sh start)"   # starts it; prints `export REFLEXION_TEST_POSTGRES=…`
#   pytest tests/integration/test_postgres.py
#   bash .ci/postgres.sh stop              # stops it and deletes the cluster
#
# `start` installs the Debian package (postgresql) when no server binaries are found and it
# runs as root; as root the server runs as the `postgres` system user (PostgreSQL refuses to
# run as root). A second `start` while one is running prints the same export again.
# REFLEXION_PG_ROOT overrides where the cluster lives (default /tmp/reflexion-postgres-UID).
set -euo pipefail

ROOT="${REFLEXION_PG_ROOT:-${TMPDIR:-/tmp}/reflexion-postgres-$(id -u)}"
DATA="$ROOT/data"
SOCK="$ROOT/socket"
ENV_FILE="$ROOT/env"
DB_NAME=reflexion_test
SUPERUSER=postgres

log() { echo "postgres.sh: $*" >&2; }

bindir() {
    local dir
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then
            echo "$dir"
            return 0
        fi
    done
    if command -v pg_config >/dev/null && [[ -x "$(pg_config --bindir)/initdb" ]]; then
        pg_config --bindir
        return 0
    fi
    return 1
}

ensure_installed() {
    if bindir >/dev/null; then
        return 0
    fi
    if [[ $(id -u) -ne 0 ]]; then
        log "no PostgreSQL server found: install it (sudo apt-get install -y postgresql) and rerun"
        exit 1
    fi
    log "installing PostgreSQL from the Debian packages"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2 \
        || { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2; }
    bindir >/dev/null || { log "apt-get installed no PostgreSQL server binaries"; exit 1; }
}

# Run a server program as its owner: the postgres system user when we are root.
as_owner() {
    if [[ $(id -u) -eq 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

running() {
    local bin
    bin="$(bindir)" || return 1
    [[ -f "$DATA/PG_VERSION" ]] && as_owner "$bin/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

start() {
    ensure_installed
    local bin port
    bin="$(bindir)"
    if running && [[ -f "$ENV_FILE" ]]; then
        log "already running"
        cat "$ENV_FILE"
        return 0
    fi
    rm -rf "$ROOT"
    mkdir -p "$DATA" "$SOCK"
    chmod 700 "$ROOT"
    if [[ $(id -u) -eq 0 ]]; then
        chown -R postgres: "$ROOT"
    fi
    as_owner "$bin/initdb" -D "$DATA" -U "$SUPERUSER" -A trust -E UTF8 --no-locale >/dev/null
    port="$(free_port)"
    # Loopback only; the Unix socket in the cluster's own directory (the system one may be
    # missing or not writable); fsync stays on, so a crash test means what it says.
    as_owner "$bin/pg_ctl" -D "$DATA" -l "$ROOT/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $SOCK -c max_connections=100" start >/dev/null \
        || { log "the server did not start; its log:"; cat "$ROOT/server.log" >&2; exit 1; }
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U "$SUPERUSER" "$DB_NAME"
    echo "export REFLEXION_TEST_POSTGRES=postgresql://$SUPERUSER@127.0.0.1:$port/$DB_NAME" \
        | as_owner tee "$ENV_FILE" >/dev/null
    log "started on 127.0.0.1:$port (cluster in $ROOT; stop with: bash .ci/postgres.sh stop)"
    cat "$ENV_FILE"
}

stop() {
    local bin
    if bin="$(bindir)" && [[ -f "$DATA/PG_VERSION" ]]; then
        as_owner "$bin/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$ROOT"
    log "stopped and removed $ROOT"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    *)
        echo "usage: bash .ci/postgres.sh start|stop" >&2
        exit 2
        ;;
esac
