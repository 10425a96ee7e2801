#!/usr/bin/env bash
# A throwaway Slurm cluster for the tests: one controller (slurmctld), one GPU node (slurmd, `Gres=gpu:4` on four
# character devices made in the temporary folder) and accounting (slurmdbd on a private MariaDB), with munged on a
# key and socket of its own. Everything lives in one temporary folder: configuration, state, spool, logs, pid files,
# the MariaDB datadir and sockets; the daemons listen on 127.0.0.1 at free ports chosen at start. It never reads,
# starts or edits the machine's own services or their configuration (/etc/slurm, /etc/munge, /etc/mysql, ports
# 6817-6819 and 3306); installing the Debian packages when they are missing is the only change made outside the
# folder, and the services those packages bring are kept from starting.
#
# Needs root (slurmd runs jobs as their users; munged and MariaDB run as root here). Sourced by the tests; by hand:
#   source scripts/slurm-scratch.sh && slurm_scratch_start   # exports SLURM_CONF, EAI_TEST_SLURM_* (see below)
#   sbatch -A physics --gres=gpu:2 --mem=100 -o /dev/null --wrap 'sleep 20'; squeue --json; sacct --json -a
#   slurm_scratch_stop
# (without -o, sbatch's job writes slurm-<id>.out into the folder it was submitted from.)
# or run it: `scripts/slurm-scratch.sh` starts a cluster, prints the `export …` lines, and keeps it until Enter.
#
# The cluster: ClusterName=eai-test, node $EAI_TEST_SLURM_NODE (gpu-node-1: 8 CPUs, 8000 MB, gpu:4 on
# $EAI_TEST_SLURM_GPU_DEVICES/nvidia0..3, indices 0-3), partition $EAI_TEST_SLURM_PARTITION (gpu, default),
# accounts physics and bio (user root in both, default physics). Give jobs --mem: without it a job takes the whole
# node's memory and the next one waits.

SLURM_SCRATCH_NODE=gpu-node-1
SLURM_SCRATCH_PARTITION=gpu
SLURM_SCRATCH_CLUSTER=eai-test
# Seconds each daemon gets to become ready.
SLURM_SCRATCH_TIMEOUT=${SLURM_SCRATCH_TIMEOUT:-90}

slurm_scratch_log() { echo "slurm-scratch: $*" >&2; }

# The binaries used; all of them come from Debian's packages slurmctld, slurmd, slurmdbd, slurm-client, munge and
# mariadb-server.
slurm_scratch_missing() {
  local b missing=""
  for b in slurmctld slurmd slurmdbd sbatch squeue scontrol sinfo sacct sacctmgr munged munge unmunge mungekey \
      mariadb-install-db mariadbd mariadb mariadb-admin; do
    command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || missing="$missing $b"
  done
  echo "${missing# }"
}

# Installs the packages when a binary is missing. The packages' services (munge, slurmctld, slurmd, slurmdbd,
# mariadb) are kept from starting by a policy-rc.d that answers 101 ("action forbidden") for the time of the
# install; one the machine already has is put back afterwards. The services of the packages this install added
# are then stopped and disabled, should an init have ignored policy-rc.d; those of packages the machine had
# before are left as they are.
slurm_scratch_install() {
  local missing policy=/usr/sbin/policy-rc.d saved="" rc=0 pkg added="" apt_log
  missing=$(slurm_scratch_missing)
  [ -n "$missing" ] || return 0
  if [ "$(id -u)" -ne 0 ]; then
    slurm_scratch_log "missing $missing: run as root (it installs slurmctld slurmd slurmdbd slurm-client munge mariadb-server)"
    return 1
  fi
  for pkg in slurmctld slurmd slurmdbd munge mariadb-server; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || added="$added $pkg"
  done
  slurm_scratch_log "installing slurmctld slurmd slurmdbd slurm-client munge mariadb-server (missing: $missing); their services are not started"
  if [ -e "$policy" ]; then
    saved=$(mktemp "${TMPDIR:-/tmp}/eai-test-slurm-policy-rc.d.XXXXXX") || return 1
    cp -p "$policy" "$saved" || return 1
  fi
  printf '#!/bin/sh\n# eai-gpu scripts/slurm-scratch.sh: no service starts during its install\nexit 101\n' >"$policy" \
    && chmod 0755 "$policy" || rc=1
  apt_log=$(mktemp "${TMPDIR:-/tmp}/eai-test-slurm-apt.XXXXXX") || rc=1
  if [ "$rc" -eq 0 ]; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        slurmctld slurmd slurmdbd slurm-client munge mariadb-server; } >"$apt_log" 2>&1 || rc=1
    [ "$rc" -eq 0 ] || { slurm_scratch_log "apt-get install failed:"; tail -n 20 "$apt_log" >&2; }
  fi
  if [ -n "$saved" ]; then mv -f "$saved" "$policy"; else rm -f "$policy"; fi
  rm -f "$apt_log"
  [ "$rc" -eq 0 ] || return 1
  local svc
  for pkg in $added; do
    svc=$pkg
    [ "$pkg" != mariadb-server ] || svc=mariadb
    if [ -d /run/systemd/system ]; then
      systemctl stop "$svc" >/dev/null 2>&1 || true
      systemctl disable "$svc" >/dev/null 2>&1 || true
    elif [ -x "/etc/init.d/$svc" ]; then
      if "/etc/init.d/$svc" status >/dev/null 2>&1; then "/etc/init.d/$svc" stop >/dev/null 2>&1 || true; fi
    fi
  done
  if command -v ss >/dev/null 2>&1 && ss -ltnH 2>/dev/null | awk '{print $4}' | grep -qE ':(6817|6818|6819|3306)$'; then
    slurm_scratch_log "warning: after the install something listens on a default port of Slurm or MariaDB (6817-6819, 3306):"
    ss -ltnpH 2>/dev/null | grep -E ':(6817|6818|6819|3306) ' >&2 || true
  fi
  missing=$(slurm_scratch_missing)
  [ -z "$missing" ] || { slurm_scratch_log "installed, but still missing: $missing"; return 1; }
}

# Prints N distinct free TCP ports of 127.0.0.1 (held together while chosen, so they differ).
slurm_scratch_ports() {
  python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

# Polls "$@" until it succeeds, SLURM_SCRATCH_TIMEOUT seconds at most; on timeout says what it waited for and prints
# the tail of the log file given first.
slurm_scratch_wait() {
  local what=$1 log=$2 deadline
  shift 2
  deadline=$((SECONDS + SLURM_SCRATCH_TIMEOUT))
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      slurm_scratch_log "$what is not ready after ${SLURM_SCRATCH_TIMEOUT}s; the end of $log:"
      tail -n 25 "$log" >&2 2>/dev/null
      return 1
    fi
    sleep 0.2
  done
}

slurm_scratch_node_idle() {
  local state
  state=$(sinfo -h -n "$SLURM_SCRATCH_NODE" -o %t 2>/dev/null) || return 1
  [ "$state" = "idle" ]
}

# Whether slurmctld's main scheduler has run (sdiag's "Total cycles" of "Main schedule statistics").
slurm_scratch_scheduled() {
  local cycles
  cycles=$(sdiag 2>/dev/null | awk '/^Main schedule statistics/ {m = 1} m && /Total cycles:/ {print $3; exit}')
  [ -n "$cycles" ] && [ "$cycles" -gt 0 ]
}

# Starts the cluster, exports SLURM_CONF (its slurm.conf), EAI_TEST_SLURM_DIR (the temporary folder),
# EAI_TEST_SLURM_NODE (the node's name), EAI_TEST_SLURM_PARTITION (the partition) and EAI_TEST_SLURM_GPU_DEVICES
# (the folder of the node's GPU devices nvidia0..3). Returns non-zero, saying why, when it cannot; what it started
# by then is stopped again.
slurm_scratch_start() {
  if [ -n "${EAI_TEST_SLURM_DIR:-}" ] && [ -d "$EAI_TEST_SLURM_DIR" ]; then
    slurm_scratch_log "a cluster of this shell is running already ($EAI_TEST_SLURM_DIR): slurm_scratch_stop first"
    return 1
  fi
  if [ "$(id -u)" -ne 0 ]; then
    slurm_scratch_log "needs root (slurmd, munged and MariaDB run as root in the scratch cluster)"
    return 1
  fi
  slurm_scratch_install || return 1
  command -v python3 >/dev/null 2>&1 || { slurm_scratch_log "python3 is needed to choose free ports"; return 1; }
  local t0=$SECONDS
  local dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/eai-test-slurm.XXXXXX") || return 1
  chmod 0755 "$dir"
  export EAI_TEST_SLURM_DIR="$dir"
  if ! slurm_scratch_up "$dir"; then
    slurm_scratch_stop
    return 1
  fi
  export SLURM_CONF="$dir/etc/slurm.conf" EAI_TEST_SLURM_NODE="$SLURM_SCRATCH_NODE" \
    EAI_TEST_SLURM_PARTITION="$SLURM_SCRATCH_PARTITION" EAI_TEST_SLURM_GPU_DEVICES="$dir/dev"
  slurm_scratch_log "Slurm $(sinfo -V | awk '{print $2}') cluster $SLURM_SCRATCH_CLUSTER up in $((SECONDS - t0))s: SLURM_CONF=$SLURM_CONF, node $SLURM_SCRATCH_NODE (gpu:4), partition $SLURM_SCRATCH_PARTITION, accounts physics and bio"
}

# The work of slurm_scratch_start, in the folder $1. Daemons run in their own sessions (setsid) with the folder in
# their environment (EAI_TEST_SLURM_DIR), which is how slurm_scratch_stop finds them and what they leave behind.
slurm_scratch_up() {
  local dir=$1 host ports ctld_port slurmd_port dbd_port db_port
  host=$(hostname -s)
  ports=$(slurm_scratch_ports 4) || { slurm_scratch_log "no free ports"; return 1; }
  read -r ctld_port slurmd_port dbd_port db_port <<<"$ports"
  mkdir -p "$dir"/{etc,log,run,munge,state,spool,dev,mysql,tmp} || return 1
  chmod 0700 "$dir/munge" "$dir/mysql"

  # --- munged: a key and socket of its own. ---
  local munge_sock="$dir/run/munge.sock"
  mungekey --create --keyfile="$dir/munge/munge.key" --bits=1024 >/dev/null 2>&1 \
    || dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none || return 1
  chmod 0400 "$dir/munge/munge.key"
  # The key in a folder only root reads, the socket in one all may enter (munged requires both). --force: a TMPDIR
  # with a folder above writable by others is then a warning in munged.log, not a refusal.
  EAI_TEST_SLURM_DIR="$dir" setsid munged --force --key-file="$dir/munge/munge.key" --socket="$munge_sock" \
      --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed" \
      </dev/null >>"$dir/log/munged.out" 2>&1 \
    || { slurm_scratch_log "munged did not start:"; tail -n 20 "$dir/log/munged.out" "$dir/log/munged.log" >&2 2>/dev/null; return 1; }
  slurm_scratch_wait munged "$dir/log/munged.log" bash -c "munge -n -S '$munge_sock' | unmunge -S '$munge_sock'" || return 1

  # --- MariaDB: a private datadir, 127.0.0.1:$db_port and a socket in the folder. ---
  local db_sock="$dir/run/mysqld.sock"
  mariadb-install-db --no-defaults --datadir="$dir/mysql" --user=root --auth-root-authentication-method=normal \
      --skip-test-db --skip-name-resolve >"$dir/log/mariadb-install-db.log" 2>&1 \
    || { slurm_scratch_log "mariadb-install-db failed:"; tail -n 20 "$dir/log/mariadb-install-db.log" >&2; return 1; }
  # Durability off: the database is thrown away with the folder. Slurm asks for innodb_lock_wait_timeout 900 and a
  # 64 MB log file and wants a buffer pool of at least 512 MB (it logs an error otherwise; the memory is only reserved).
  EAI_TEST_SLURM_DIR="$dir" setsid -f mariadbd --no-defaults --user=root --datadir="$dir/mysql" \
      --bind-address=127.0.0.1 --port="$db_port" --socket="$db_sock" --pid-file="$dir/run/mariadbd.pid" \
      --log-error="$dir/log/mariadbd.log" --tmpdir="$dir/tmp" --skip-name-resolve --skip-log-bin \
      --innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0 --innodb-buffer-pool-size=512M \
      --innodb-log-file-size=64M --innodb-lock-wait-timeout=900 --max-connections=100 \
      </dev/null >>"$dir/log/mariadbd.out" 2>&1
  slurm_scratch_wait "MariaDB (127.0.0.1:$db_port)" "$dir/log/mariadbd.log" \
    mariadb-admin --no-defaults --socket="$db_sock" -uroot ping || return 1
  mariadb --no-defaults --socket="$db_sock" -uroot -e \
      "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm'; GRANT ALL ON *.* TO 'slurm'@'127.0.0.1';" \
      >"$dir/log/mariadb-grant.log" 2>&1 \
    || { slurm_scratch_log "creating MariaDB's slurm user failed:"; cat "$dir/log/mariadb-grant.log" >&2; return 1; }

  # --- Configuration. ---
  local i
  for i in 0 1 2 3; do
    mknod "$dir/dev/nvidia$i" c 195 "$i" || { slurm_scratch_log "mknod $dir/dev/nvidia$i failed"; return 1; }
  done
  # DCGM exporter's job mapping (--hpc-job-mapping-dir), as the README's "Slurm clusters" writes it: a file per GPU
  # index in $dir/job-map, a job id a line; the prolog adds the job to its GPUs' files, the epilog takes it out.
  mkdir -p "$dir/job-map"
  cat >"$dir/etc/prolog.sh" <<PROLOG
#!/bin/sh
for i in \$(echo "\${SLURM_JOB_GPUS:-}" | tr ',' ' '); do echo "\$SLURM_JOB_ID" >> "$dir/job-map/\$i"; done
exit 0
PROLOG
  cat >"$dir/etc/epilog.sh" <<EPILOG
#!/bin/sh
for i in \$(echo "\${SLURM_JOB_GPUS:-}" | tr ',' ' '); do sed -i "/^\${SLURM_JOB_ID}\\\$/d" "$dir/job-map/\$i"; done
exit 0
EPILOG
  chmod 0755 "$dir/etc/prolog.sh" "$dir/etc/epilog.sh"
  cat >"$dir/etc/slurm.conf" <<EOF
# Written by eai-gpu scripts/slurm-scratch.sh: a throwaway cluster in $dir.
ClusterName=$SLURM_SCRATCH_CLUSTER
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$munge_sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
TmpFS=$dir/tmp
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
SchedulerType=sched/backfill
# Batch jobs start at once rather than up to 3 s after their submission (the default batch_sched_delay).
SchedulerParameters=batch_sched_delay=0
# DCGM exporter's job-mapping files, written when a job's allocation starts (PrologFlags=Alloc).
Prolog=$dir/etc/prolog.sh
Epilog=$dir/etc/epilog.sh
PrologFlags=Alloc
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=300
KillWait=5
InactiveLimit=0
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$dbd_port
AccountingStorageTRES=gres/gpu
# The clients reach slurmdbd through the munged named here, not AuthInfo's: without it sacctmgr and sacct look
# for /run/munge/munge.socket.2.
AccountingStoragePass=$munge_sock
AccountingStorageEnforce=associations
NodeName=$SLURM_SCRATCH_NODE NodeHostname=$host NodeAddr=127.0.0.1 CPUs=8 RealMemory=8000 Gres=gpu:4 State=UNKNOWN
PartitionName=$SLURM_SCRATCH_PARTITION Nodes=$SLURM_SCRATCH_NODE Default=YES MaxTime=INFINITE State=UP
EOF
  {
    echo "# The node's four GPUs: character devices 195:0-3 made in $dir/dev (index i = nvidia<i>)."
    echo "AutoDetect=off"
    for i in 0 1 2 3; do echo "NodeName=$SLURM_SCRATCH_NODE Name=gpu File=$dir/dev/nvidia$i"; done
  } >"$dir/etc/gres.conf"
  # slurmdbd reads slurmdbd.conf from the folder of $SLURM_CONF; it must be 0600 and the SlurmUser's.
  cat >"$dir/etc/slurmdbd.conf" <<EOF
# Written by eai-gpu scripts/slurm-scratch.sh.
AuthType=auth/munge
AuthInfo=socket=$munge_sock
DbdHost=$host
DbdAddr=127.0.0.1
DbdPort=$dbd_port
SlurmUser=root
PidFile=$dir/run/slurmdbd.pid
LogFile=$dir/log/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
EOF
  chmod 0600 "$dir/etc/slurmdbd.conf"
  export SLURM_CONF="$dir/etc/slurm.conf"

  # --- slurmdbd, then the cluster and its accounts, then slurmctld and slurmd. ---
  EAI_TEST_SLURM_DIR="$dir" setsid slurmdbd </dev/null >>"$dir/log/slurmdbd.out" 2>&1 \
    || { slurm_scratch_log "slurmdbd did not start:"; tail -n 20 "$dir/log/slurmdbd.out" "$dir/log/slurmdbd.log" >&2 2>/dev/null; return 1; }
  slurm_scratch_wait "slurmdbd (127.0.0.1:$dbd_port)" "$dir/log/slurmdbd.log" sacctmgr -n show cluster || return 1
  {
    sacctmgr -i add cluster "$SLURM_SCRATCH_CLUSTER" &&
    sacctmgr -i add account physics,bio Organization=eai-test Cluster="$SLURM_SCRATCH_CLUSTER" &&
    sacctmgr -i add user root Account=physics,bio DefaultAccount=physics Cluster="$SLURM_SCRATCH_CLUSTER"
  } >"$dir/log/sacctmgr.log" 2>&1 \
    || { slurm_scratch_log "sacctmgr failed:"; cat "$dir/log/sacctmgr.log" >&2; return 1; }

  EAI_TEST_SLURM_DIR="$dir" setsid slurmctld -f "$SLURM_CONF" </dev/null >>"$dir/log/slurmctld.out" 2>&1 \
    || { slurm_scratch_log "slurmctld did not start:"; tail -n 20 "$dir/log/slurmctld.out" "$dir/log/slurmctld.log" >&2 2>/dev/null; return 1; }
  slurm_scratch_wait "slurmctld (127.0.0.1:$ctld_port)" "$dir/log/slurmctld.log" \
    bash -c 'scontrol ping | grep -q "is UP"' || return 1
  EAI_TEST_SLURM_DIR="$dir" setsid slurmd -f "$SLURM_CONF" -N "$SLURM_SCRATCH_NODE" </dev/null >>"$dir/log/slurmd.out" 2>&1 \
    || { slurm_scratch_log "slurmd did not start:"; tail -n 20 "$dir/log/slurmd.out" "$dir/log/slurmd.log" >&2 2>/dev/null; return 1; }
  slurm_scratch_wait "node $SLURM_SCRATCH_NODE (slurmd, 127.0.0.1:$slurmd_port)" "$dir/log/slurmd.log" slurm_scratch_node_idle || return 1
  # slurmctld's main scheduler first runs about 3 s after the node is up; a job submitted before waits for it.
  slurm_scratch_wait "slurmctld's first scheduling cycle" "$dir/log/slurmctld.log" slurm_scratch_scheduled || return 1
}

# The processes of the folder $1: the daemons (EAI_TEST_SLURM_DIR=$1 in their environment), the job steps
# (slurmstepd and the jobs, SLURM_CONF=$1/etc/slurm.conf in theirs), whatever names the folder on its command line,
# and the descendants of all of these.
slurm_scratch_pids() {
  local dir=$1 p found=" " mine=" " up=$BASHPID
  # Never this shell or its ancestors (a caller may have the folder in its environment).
  while [ -n "$up" ] && [ "$up" -gt 1 ]; do
    mine="$mine$up "
    up=$(ps -o ppid= -p "$up" 2>/dev/null | tr -d ' ') || up=""
  done
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    case "$mine" in *" $p "*) continue ;; esac
    if grep -qzxF -e "EAI_TEST_SLURM_DIR=$dir" -e "SLURM_CONF=$dir/etc/slurm.conf" "/proc/$p/environ" 2>/dev/null \
        || grep -qzF "$dir/" "/proc/$p/cmdline" 2>/dev/null; then
      found="$found$p "
    fi
  done
  # Descendants: a job may clear its environment.
  local pid ppid more=1
  while [ "$more" -eq 1 ]; do
    more=0
    while read -r pid ppid; do
      case "$found" in *" $ppid "*) case "$found$mine" in *" $pid "*) ;; *) found="$found$pid "; more=1 ;; esac ;; esac
    done < <(ps -e -o pid=,ppid=)
  done
  echo $found
}

# Stops every process of the cluster (slurmd and its job steps, slurmctld, slurmdbd, MariaDB, munged) and removes
# the folder; unsets what slurm_scratch_start exported. Safe to call twice, or when it never started. Nothing in
# the folder is kept, so nothing is shut down gracefully: all get KILL at once (slurmstepd ignores TERM, and the
# daemons' clean shutdowns take seconds for nothing).
slurm_scratch_stop() {
  local dir=${EAI_TEST_SLURM_DIR:-} pids killed="" i p
  [ -n "$dir" ] && [ -d "$dir" ] || return 0
  for i in 1 2 3 4 5; do
    pids=$(slurm_scratch_pids "$dir")
    [ -n "$pids" ] || break
    killed="$killed $pids"
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.2
  done
  [ -z "$pids" ] || slurm_scratch_log "processes of $dir still alive after KILL: $pids"
  # Until they are reaped too (by init: the daemons are in sessions of their own), 3 s at most, so that a check
  # right after (pgrep slurm) sees nothing.
  for i in $(seq 1 30); do
    for p in $killed; do [ -e "/proc/$p" ] && break; p=""; done
    [ -n "$p" ] || break
    sleep 0.1
  done
  rm -rf "$dir"
  unset EAI_TEST_SLURM_DIR EAI_TEST_SLURM_NODE EAI_TEST_SLURM_PARTITION EAI_TEST_SLURM_GPU_DEVICES
  [ "${SLURM_CONF:-}" != "$dir/etc/slurm.conf" ] || unset SLURM_CONF
}

# Run rather than sourced: start a cluster, print its exports, and keep it until Ctrl-C or Enter.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -u
  trap slurm_scratch_stop EXIT
  trap 'exit 130' INT TERM
  slurm_scratch_start || exit 1
  echo "export SLURM_CONF=$SLURM_CONF"
  echo "export EAI_TEST_SLURM_DIR=$EAI_TEST_SLURM_DIR"
  echo "export EAI_TEST_SLURM_NODE=$EAI_TEST_SLURM_NODE"
  echo "export EAI_TEST_SLURM_PARTITION=$EAI_TEST_SLURM_PARTITION"
  echo "export EAI_TEST_SLURM_GPU_DEVICES=$EAI_TEST_SLURM_GPU_DEVICES"
  echo "(Enter or Ctrl-C stops it and removes its folder)"
  read -r _ || true
fi
