#!/usr/bin/env bash
# A PostgreSQL cluster that fails over, on this machine: one etcd and two Patroni nodes running PostgreSQL with
# streaming, synchronous replication, everything on 127.0.0.1 at free ports, in one temporary folder. The
# failover test (crates/cli/tests/cli/failover.rs) starts and stops it through this script; a developer too:
#
#   scripts/pg-ha.sh start     # prints `export EAI_DATABASE_URL=postgres://postgres@127.0.0.1:P1,127.0.0.1:P2/...`
#   scripts/pg-ha.sh status    # the members, their roles and replication state (Patroni's REST API)
#   scripts/pg-ha.sh stop      # stops everything and removes the folder
#
# The folder is $EAI_PG_HA_DIR (default /tmp/eai-pg-ha; one cluster per folder). `start` writes $DIR/env: the
# URL, the nodes' data folders, PostgreSQL ports and REST ports, for tests to read.
#
# Settings, and why:
# - ttl 10, loop_wait 1, retry_timeout 4: fast failover (Patroni's rule: loop_wait + 2 * retry_timeout <= ttl).
# - primary_start_timeout 0: a primary whose postmaster died is not restarted in place; the standby (in sync,
#   so nothing acknowledged is lost) is promoted at once.
# - synchronous_mode: true: a commit is acknowledged to the client only once the synchronous standby has it
#   (synchronous_commit = on), so a primary lost after answering loses nothing that was answered.
#   synchronous_mode_strict: false (the default, kept): when the standby is gone too, the last node accepts
#   writes alone again after Patroni has removed the standby from synchronous_standby_names, and an
#   acknowledged commit then lives on that one node only until a standby catches up. Strict mode would refuse
#   every write instead (the service answers 503 until a second node is back): availability was preferred;
#   set it to true where losing two nodes in a row must not lose an acknowledged write.
# - fsync off: the tests kill processes, never the machine (the page cache survives); never in production.
# Nothing here touches the machine's own PostgreSQL (its service, /etc/postgresql, port 5432).
set -uo pipefail

DIR=${EAI_PG_HA_DIR:-/tmp/eai-pg-ha}

say() { echo "pg-ha: $*" >&2; }

bindir() {
  if [ -n "${EAI_TEST_PG_BINDIR:-}" ]; then echo "$EAI_TEST_PG_BINDIR"; return; fi
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The user the servers run as: PostgreSQL refuses root, so as root the package's postgres user (or a system
# user made for it), as in scripts/pg-scratch.sh.
owner() {
  if [ "$(id -u)" -ne 0 ]; then id -un; return; fi
  local o=postgres
  id -u "$o" >/dev/null 2>&1 || o=eai-test-pg
  id -u "$o" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$o" || return 1
  echo "$o"
}

# Starts `$@` as the owner in a session of its own (it outlives this script), its output to $log; prints its
# pid (setpriv execs: the pid is the server's own).
spawn() {
  local log=$1; shift
  if [ "$(id -un)" = "$OWNER" ]; then
    setsid "$@" >"$log" 2>&1 </dev/null &
  else
    setsid setpriv --reuid="$OWNER" --regid="$(id -g "$OWNER")" --init-groups env HOME="$DIR" "$@" \
      >"$log" 2>&1 </dev/null &
  fi
  echo $!
}

node_yaml() {
  local n=$1 rest=$2 port=$3
  cat <<EOF
scope: eai-ha
namespace: /eai-pg-ha-$ETCD_PORT/
name: node$n
restapi:
  listen: 127.0.0.1:$rest
  connect_address: 127.0.0.1:$rest
etcd3:
  hosts: 127.0.0.1:$ETCD_PORT
log:
  level: WARNING
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    primary_start_timeout: 0
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    synchronous_mode_strict: false
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        max_connections: 300
        wal_level: replica
        hot_standby: "on"
        wal_log_hints: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        synchronous_commit: "on"
        fsync: "off"
        full_page_writes: "off"
        shared_buffers: 128MB
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
    - auth: trust
  pg_hba:
    - local all all trust
    - host replication replicator 127.0.0.1/32 trust
    - host all all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:$port
  connect_address: 127.0.0.1:$port
  data_dir: $DIR/node$n/data
  bin_dir: $BINDIR
  pgpass: $DIR/node$n/pgpass
  authentication:
    superuser:
      username: postgres
    replication:
      username: replicator
    rewind:
      username: postgres
  parameters:
    unix_socket_directories: $DIR/node$n
tags:
  nofailover: false
  noloadbalance: false
  clonefrom: false
  nosync: false
EOF
}

# The replication state seen from the leader: "<leader port> <sync standbys streaming>".
leader_state() {
  local p
  for p in $PG1 $PG2; do
    if [ "$("$BINDIR/psql" -w -Atq "postgres://postgres@127.0.0.1:$p/postgres?connect_timeout=2" \
        -c 'SELECT pg_is_in_recovery()' 2>/dev/null)" = "f" ]; then
      echo "$p $("$BINDIR/psql" -w -Atq "postgres://postgres@127.0.0.1:$p/postgres?connect_timeout=2" \
        -c "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming'" 2>/dev/null)"
      return
    fi
  done
}

start() {
  if [ -f "$DIR/env" ]; then say "$DIR already holds a cluster (scripts/pg-ha.sh stop first)"; return 1; fi
  command -v patroni >/dev/null || { say "no patroni: apt-get install patroni (scripts/test.sh does)"; return 1; }
  command -v etcd >/dev/null || { say "no etcd: apt-get install etcd-server etcd-client (scripts/test.sh does)"; return 1; }
  BINDIR=$(bindir)
  [ -n "$BINDIR" ] && [ -x "$BINDIR/initdb" ] || { say "no PostgreSQL server binaries under /usr/lib/postgresql"; return 1; }
  OWNER=$(owner) || return 1
  mkdir -p "$DIR/node1" "$DIR/node2" "$DIR/etcd" || return 1
  chmod 0755 "$DIR"
  [ "$OWNER" = "$(id -un)" ] || chown -R "$OWNER" "$DIR"
  chmod 0700 "$DIR/node1" "$DIR/node2" "$DIR/etcd"
  ETCD_PORT=$(free_port); ETCD_PEER=$(free_port)
  REST1=$(free_port); REST2=$(free_port); PG1=$(free_port); PG2=$(free_port)

  local etcd_pid
  etcd_pid=$(spawn "$DIR/etcd.log" etcd --name eai-ha --data-dir "$DIR/etcd/data" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
    --initial-cluster "eai-ha=http://127.0.0.1:$ETCD_PEER" --listen-metrics-urls "" )
  echo "$etcd_pid" > "$DIR/etcd.pid"
  local i
  for i in $(seq 1 100); do
    curl -fsS "http://127.0.0.1:$ETCD_PORT/health" >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -fsS "http://127.0.0.1:$ETCD_PORT/health" >/dev/null 2>&1 || { say "etcd did not start:"; tail -n 20 "$DIR/etcd.log" >&2; return 1; }

  node_yaml 1 "$REST1" "$PG1" > "$DIR/node1.yml"
  node_yaml 2 "$REST2" "$PG2" > "$DIR/node2.yml"
  [ "$OWNER" = "$(id -un)" ] || chown "$OWNER" "$DIR/node1.yml" "$DIR/node2.yml"
  spawn "$DIR/node1.log" patroni "$DIR/node1.yml" > "$DIR/node1.pid"
  # The first node bootstraps (initdb) and leads; the second clones it with pg_basebackup.
  for i in $(seq 1 600); do
    [ -n "$(leader_state)" ] && break
    sleep 0.1
  done
  spawn "$DIR/node2.log" patroni "$DIR/node2.yml" > "$DIR/node2.pid"

  local url="postgres://postgres@127.0.0.1:$PG1,127.0.0.1:$PG2/postgres?target_session_attrs=read-write"
  cat > "$DIR/env" <<EOF
EAI_PG_HA_URL='$url'
EAI_PG_HA_BINDIR='$BINDIR'
EAI_PG_HA_NODE1_PORT=$PG1
EAI_PG_HA_NODE2_PORT=$PG2
EAI_PG_HA_NODE1_REST=$REST1
EAI_PG_HA_NODE2_REST=$REST2
EAI_PG_HA_NODE1_DATA='$DIR/node1/data'
EAI_PG_HA_NODE2_DATA='$DIR/node2/data'
EAI_PG_HA_ETCD_PORT=$ETCD_PORT
EOF
  # Ready: a leader, and a synchronous standby streaming from it.
  local st=""
  for i in $(seq 1 1200); do
    st=$(leader_state)
    [ "${st#* }" = "1" ] && break
    sleep 0.1
  done
  if [ "${st#* }" != "1" ]; then
    say "no leader with a streaming synchronous standby within 120 s (leader state: '${st:-none}'):"
    tail -n 20 "$DIR/node1.log" "$DIR/node2.log" >&2
    return 1
  fi
  say "leader on port ${st% *}, synchronous standby streaming; folder $DIR"
  echo "export EAI_DATABASE_URL='$url'"
}

# Kills what `start` started (by the pids it recorded), the servers' postmasters too, then removes the folder.
stop() {
  [ -d "$DIR" ] || return 0
  local f pid
  for f in "$DIR/node1.pid" "$DIR/node2.pid" "$DIR/etcd.pid"; do
    [ -f "$f" ] && pid=$(cat "$f") && [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
  done
  for f in "$DIR/node1/data/postmaster.pid" "$DIR/node2/data/postmaster.pid"; do
    [ -f "$f" ] && pid=$(head -n 1 "$f") && [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
  done
  sleep 0.2
  rm -rf "$DIR"
}

status() {
  [ -f "$DIR/env" ] || { say "no cluster in $DIR"; return 1; }
  # shellcheck disable=SC1091
  source "$DIR/env"
  local r
  for r in $EAI_PG_HA_NODE1_REST $EAI_PG_HA_NODE2_REST; do
    curl -fsS "http://127.0.0.1:$r/cluster" 2>/dev/null && echo && return 0
  done
  say "neither node's REST API answers"
  return 1
}

case "${1:-}" in
  start) start || { stop; exit 1; } ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status   (folder: \$EAI_PG_HA_DIR, default /tmp/eai-pg-ha)" >&2; exit 2 ;;
esac
