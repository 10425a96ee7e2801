#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: made with initdb in a temporary folder, trust authentication,
# listening on 127.0.0.1 at a free port, removed when stopped. It never reads, starts or edits the machine's
# own clusters (/etc/postgresql, /var/lib/postgresql, port 5432).
#
# Sourced by scripts/test.sh; by hand, for `cargo test` alone:
#   source scripts/pg-scratch.sh && pg_scratch_start     # exports EAI_TEST_POSTGRES_URL
#   cargo test -p eai-store
#   pg_scratch_stop
#
# PostgreSQL's server binaries come from Debian's package (installed when missing, as root; its own cluster,
# if the package makes one, is left as it is), or from EAI_TEST_PG_BINDIR (a folder holding initdb and pg_ctl).

pg_scratch_bindir() {
  if [ -n "${EAI_TEST_PG_BINDIR:-}" ]; then echo "$EAI_TEST_PG_BINDIR"; return; fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; fi
}

# Starts the cluster and exports EAI_TEST_POSTGRES_URL (postgres://postgres@127.0.0.1:PORT/postgres) and
# PG_SCRATCH_DIR. Returns non-zero, saying why, when it cannot.
pg_scratch_start() {
  local bindir owner port data log
  bindir=$(pg_scratch_bindir)
  if [ -z "$bindir" ]; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "pg-scratch: no PostgreSQL server binaries (initdb): apt-get install postgresql as root, set EAI_TEST_PG_BINDIR, or set EAI_TEST_POSTGRES_URL" >&2
      return 1
    fi
    echo "pg-scratch: installing postgresql (its binaries only are used)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql || return 1
    bindir=$(pg_scratch_bindir)
    [ -n "$bindir" ] || { echo "pg-scratch: postgresql is installed but no initdb was found under /usr/lib/postgresql" >&2; return 1; }
  fi
  # initdb and postgres refuse to run as root: as root, the cluster belongs to the package's postgres user
  # (or to a system user made for it when there is none).
  owner=$(id -un)
  if [ "$(id -u)" -eq 0 ]; then
    owner=postgres
    id -u "$owner" >/dev/null 2>&1 || owner=eai-test-pg
    id -u "$owner" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$owner" || return 1
  fi
  as_owner() { if [ "$(id -un)" = "$owner" ]; then "$@"; else runuser -u "$owner" -- "$@"; fi; }

  PG_SCRATCH_DIR=$(mktemp -d "${TMPDIR:-/tmp}/eai-test-pg.XXXXXX") || return 1
  export PG_SCRATCH_DIR PG_SCRATCH_BINDIR="$bindir" PG_SCRATCH_OWNER="$owner"
  chmod 0755 "$PG_SCRATCH_DIR"
  [ "$owner" = "$(id -un)" ] || chown "$owner" "$PG_SCRATCH_DIR"
  data="$PG_SCRATCH_DIR/data"
  log="$PG_SCRATCH_DIR/server.log"
  as_owner "$bindir/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync \
    >"$PG_SCRATCH_DIR/initdb.log" 2>&1 \
    || { echo "pg-scratch: initdb failed:" >&2; cat "$PG_SCRATCH_DIR/initdb.log" >&2; return 1; }
  # A free port, then the server on it; another process may take the port in between: try a few.
  local try
  for try in 1 2 3 4 5; do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    # Durability settings off: a crash of this machine loses a scratch cluster that is thrown away anyway
    # (the tests kill eai-gpu, never PostgreSQL). Connections: the suites run many databases at once.
    if as_owner "$bindir/pg_ctl" -D "$data" -l "$log" -w -t 60 -o "-c port=$port -c listen_addresses=127.0.0.1 \
        -c unix_socket_directories=$PG_SCRATCH_DIR -c max_connections=300 -c fsync=off -c synchronous_commit=off \
        -c full_page_writes=off -c shared_buffers=256MB" start >/dev/null; then
      export EAI_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres"
      echo "pg-scratch: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') at $EAI_TEST_POSTGRES_URL (data in $data)"
      return 0
    fi
    echo "pg-scratch: start on port $port failed (try $try):" >&2
    tail -n 5 "$log" >&2
  done
  return 1
}

# Stops the cluster and removes its folder. Safe to call twice, or when it never started.
pg_scratch_stop() {
  [ -n "${PG_SCRATCH_DIR:-}" ] && [ -d "$PG_SCRATCH_DIR" ] || return 0
  if [ -f "$PG_SCRATCH_DIR/data/postmaster.pid" ]; then
    if [ "$(id -un)" = "$PG_SCRATCH_OWNER" ]; then
      "$PG_SCRATCH_BINDIR/pg_ctl" -D "$PG_SCRATCH_DIR/data" -m immediate -w stop >/dev/null 2>&1
    else
      runuser -u "$PG_SCRATCH_OWNER" -- "$PG_SCRATCH_BINDIR/pg_ctl" -D "$PG_SCRATCH_DIR/data" -m immediate -w stop >/dev/null 2>&1
    fi
  fi
  rm -rf "$PG_SCRATCH_DIR"
  unset PG_SCRATCH_DIR
}

# Run rather than sourced: start a cluster, print its URL, and keep it until Ctrl-C or Enter.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -u
  trap pg_scratch_stop EXIT
  trap 'exit 130' INT TERM
  pg_scratch_start || exit 1
  echo "export EAI_TEST_POSTGRES_URL=$EAI_TEST_POSTGRES_URL"
  echo "(Enter or Ctrl-C stops it and removes its folder)"
  read -r _ || true
fi
