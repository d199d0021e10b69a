#!/usr/bin/env bash
# A private, throwaway PostgreSQL cluster for the test suite and the bench:
# its own temp directory, a free port on 127.0.0.1 only, its unix socket in
# that directory.
#
#   postgres-cluster.sh start [--durable]
#                                    starts one; prints its settings as
#                                    KEY=value lines (and writes them to the
#                                    file named by $POSTGRES_CLUSTER_ENV, if set):
#                                    MAILROOM_TEST_DATABASE_URL, PG_CLUSTER_DIR, PG_CLUSTER_PID
#   postgres-cluster.sh stop [DIR]   stops the cluster of DIR (default
#                                    $PG_CLUSTER_DIR) and removes DIR
#   postgres-cluster.sh run CMD...   start, run CMD with MAILROOM_TEST_DATABASE_URL
#                                    set, stop whatever CMD does; exits with CMD's status
#
# The server runs as the OS user `postgres` (initdb refuses root). Durability
# is off (fsync, synchronous_commit, full_page_writes): the data is thrown away
# at the end. With --durable it is on, as on a real install, so a commit has
# survived power loss when the server confirms it: for the bench, whose
# figures must be those of a durable store.
set -euo pipefail

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PG_OS_USER=${PG_OS_USER:-postgres}
ROLE=mailroom
MARKER=mailroom-test-cluster.env

as_pg() {
  if [ "$(id -un)" = "$PG_OS_USER" ]; then "$@"; else runuser -u "$PG_OS_USER" -- "$@"; fi
}

free_port() {
  node -e "const s = require('node:net').createServer(); s.listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); });"
}

start() {
  local durability='-c fsync=off -c synchronous_commit=off -c full_page_writes=off'
  case "${1:-}" in
    '') ;;
    --durable) durability='-c fsync=on -c synchronous_commit=on -c full_page_writes=on' ;;
    *) echo "start: unknown option $1" >&2; return 2 ;;
  esac
  local dir port password url pid
  dir=$(mktemp -d "${TMPDIR:-/tmp}/mailroom-pg.XXXXXX")
  chmod 700 "$dir"
  [ "$(id -un)" = "$PG_OS_USER" ] || chown "$PG_OS_USER:" "$dir"
  # The server's working directory must be one its user can enter.
  cd "$dir"
  password=$(node -e "console.log(require('node:crypto').randomBytes(18).toString('base64url'))")
  printf '%s\n' "$password" > "$dir/pwfile"
  chown "$PG_OS_USER:" "$dir/pwfile" 2>/dev/null || true
  # Password (scram) over TCP; the socket, in a directory only the server's
  # user can enter, trusts that user.
  as_pg "$PG_BIN/initdb" -D "$dir/data" -U "$ROLE" --pwfile="$dir/pwfile" -E UTF8 --locale=C \
    --auth-host=scram-sha-256 --auth-local=trust > "$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; rm -rf "$dir"; return 1; }
  rm -f "$dir/pwfile"

  local tries=0
  while :; do
    port=$(free_port)
    if as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=300 $durability" \
      start > /dev/null; then
      break
    fi
    tries=$((tries + 1))
    # Another process may have taken the port between the probe and the start.
    if [ "$tries" -ge 3 ]; then cat "$dir/server.log" >&2; rm -rf "$dir"; return 1; fi
  done
  pid=$(head -n 1 "$dir/data/postmaster.pid")
  url="postgres://$ROLE:$password@127.0.0.1:$port/postgres"
  {
    echo "MAILROOM_TEST_DATABASE_URL=$url"
    echo "PG_CLUSTER_DIR=$dir"
    echo "PG_CLUSTER_PID=$pid"
  } > "$dir/$MARKER"
  cat "$dir/$MARKER"
  if [ -n "${POSTGRES_CLUSTER_ENV:-}" ]; then cp "$dir/$MARKER" "$POSTGRES_CLUSTER_ENV"; fi
}

stop() {
  local dir=${1:-${PG_CLUSTER_DIR:-}}
  [ -n "$dir" ] || { echo "stop: which cluster? give its directory or set PG_CLUSTER_DIR" >&2; return 2; }
  # Only directories this script made are removed.
  [ -f "$dir/$MARKER" ] || { echo "stop: $dir is not a cluster of this script" >&2; return 2; }
  local pid
  pid=$(sed -n 's/^PG_CLUSTER_PID=//p' "$dir/$MARKER")
  cd "$dir"
  if ! as_pg "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop > /dev/null 2>&1; then
    # pg_ctl could not stop it (or it was gone): make sure the postmaster of this cluster is.
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  cd /
  rm -rf "$dir"
}

run() {
  [ "$#" -gt 0 ] || { echo "run: give a command" >&2; return 2; }
  local settings dir
  settings=$(start)
  dir=$(printf '%s\n' "$settings" | sed -n 's/^PG_CLUSTER_DIR=//p')
  trap 'stop "$dir"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  local status=0
  MAILROOM_TEST_DATABASE_URL=$(printf '%s\n' "$settings" | sed -n 's/^MAILROOM_TEST_DATABASE_URL=//p') "$@" || status=$?
  exit "$status"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 start [--durable] | stop [DIR] | run CMD..." >&2; exit 2 ;;
esac
