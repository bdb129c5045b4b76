#!/usr/bin/env bash
# tools/slurm-cluster.sh -- a throw-away Slurm cluster of one or more nodes on
# loopback, for trying `dynsweep submit` and for the tests/slurm_*.sh tests.
#
#   tools/slurm-cluster.sh start DIR [CPUS] [--nodes K]
#                                             write DIR/slurm.conf, start munged,
#                                             slurmctld and one slurmd per node;
#                                             wait until every node is idle
#   tools/slurm-cluster.sh env DIR            print 'export SLURM_CONF=...' lines
#                                             (several nodes: OMPI_MCA_btl=self,tcp)
#   tools/slurm-cluster.sh stop DIR           stop the daemons (DIR is kept)
#   tools/slurm-cluster.sh kill-node DIR NODE lose a node: kill -9 its slurmd,
#                                             slurmstepds and tasks
#   tools/slurm-cluster.sh check              exit 0 if the packages are there
#
# One node (default): node 'localhost'. K > 1: nodes node1..nodeK, each a
# `slurmd -N nodeI` with its own port, spool, pid and log file (%n in
# slurm.conf) and its own TmpFS (DIR/tmp/nodeI: srun --mpi=pmix needs it); CPUS is
# per node (default: the cores split between the nodes, at least 1; more than
# the machine has is declared with SlurmdParameters=config_overrides) and the
# memory (half of RAM) is split between them. SlurmdTimeout=10: a node whose
# slurmd is gone is DOWN ~10 s later (a lost node ends its job at once).
#
# SLURM_CLUSTER_EXTRA (optional): more slurm.conf lines, e.g.
# 'SlurmdParameters=config_overrides' to declare more CPUs than the machine has.
# SLURM_ACCOUNTING=1 (optional): job accounting, so that sacct works: a
# MariaDB server (its own data directory in DIR, loopback port, no grant
# tables: a throw-away) and slurmdbd (accounting_storage/slurmdbd); needs the
# Debian packages slurmdbd and mariadb-server ('check' says so).
#
# Then:  eval "$(tools/slurm-cluster.sh env DIR)"; sinfo; sbatch ...
#
# Everything lives in DIR: its own munge key and socket, slurm.conf, state,
# spool, logs and pid files; the daemons listen on two free loopback ports
# chosen at start. Nothing under /etc or /run is touched, so it runs beside a
# real Slurm or munge installation. Needs root (slurmd launches jobs) and the
# Debian packages slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge.
# Uses cons_tres, proctrack/linuxproc and task/none: no cgroups needed.
set -euo pipefail

SBIN_NEEDED=(munged slurmctld slurmd sbatch srun scontrol sinfo squeue)

sc_check() {
  local p missing=() need=("${SBIN_NEEDED[@]}")
  [ -n "${SLURM_ACCOUNTING:-}" ] && need+=(slurmdbd sacct sacctmgr mariadbd mariadb-install-db)
  for p in "${need[@]}"; do
    command -v "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "missing programs: ${missing[*]} (Debian: apt-get install slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge${SLURM_ACCOUNTING:+ slurmdbd mariadb-server})"
    return 1
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "not root: slurmd must run as root to launch jobs"
    return 1
  fi
  return 0
}

# A TCP port nothing listens on (loopback), from a pseudo-random start.
sc_free_port() {
  local p=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 )) used
  used=$(ss -Htan 2>/dev/null | awk '{print $4}' | sed 's/.*://' | sort -u)
  while grep -qx "$p" <<<"$used" || grep -qx "$p" <<<"${SC_TAKEN:-}"; do
    p=$(( p + 1 )); [ "$p" -gt 60000 ] && p=20000
  done
  SC_TAKEN="${SC_TAKEN:-}"$'\n'"$p"
  echo "$p"
}

sc_env() {
  local d=$1
  echo "export SLURM_CONF='$d/slurm.conf'"
  # several nodes on one host: Open MPI names its shared-memory (vader)
  # segments by host name, job and node-local rank, so local rank 0 of node1
  # and of node2 map the same segment and crash (SIGSEGV in
  # mca_btl_vader_poll_handle_frag); TCP between all ranks instead
  if [ "$(cat "$d/nodes" 2>/dev/null || echo 1)" -gt 1 ]; then echo "export OMPI_MCA_btl=self,tcp"; fi
  echo "unset SLURM_JOB_ID SLURM_JOBID SLURM_CONF_SERVER"
}

# sc_start DIR CPUS NODES (CPUS empty: the cores split between the nodes)
sc_start() {
  local d=$1 nodes=${3:-1} cpus=${2:-}
  [ -n "$cpus" ] || cpus=$(( $(nproc) / nodes > 0 ? $(nproc) / nodes : 1 ))
  mkdir -p "$d"
  d=$(cd "$d" && pwd)
  chmod 0700 "$d"
  mkdir -p "$d/state" "$d/spool" "$d/log" "$d/munge"
  chmod 0700 "$d/munge"
  # ---- munge: own key, socket, pid/log/seed files ----
  dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$d/munge/munge.key"
  munged --force --socket="$d/munge/sock" --key-file="$d/munge/munge.key" \
    --pid-file="$d/munge/munged.pid" --log-file="$d/log/munged.log" \
    --seed-file="$d/munge/seed" --num-threads=2
  local i
  for i in $(seq 50); do [ -S "$d/munge/sock" ] && break; sleep 0.1; done
  [ -S "$d/munge/sock" ] || { echo "munged did not start; see $d/log/munged.log" >&2; return 1; }

  local ctlport slurmdport mem acct="AccountingStorageType=accounting_storage/none" gather=none
  ctlport=$(sc_free_port)
  slurmdport=$(sc_free_port)
  mem=$(awk -v k="$nodes" '/MemTotal/ {printf "%d", $2 / 1024 / 2 / k}' /proc/meminfo)
  if [ -n "${SLURM_ACCOUNTING:-}" ]; then
    sc_start_accounting "$d" || return 1
    acct="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$(cat "$d/dbd.port")
AccountingStoragePass=$d/munge/sock"  # for slurmdbd with munge: the munge socket
    gather=linux
  fi
  # one node: 'localhost' as before; K nodes: node1..nodeK, each slurmd with
  # its own port and (%n) spool, pid and log file
  local names=localhost spool=$d/spool pidf=$d/slurmd.pid logf=$d/log/slurmd.log nodelines k
  nodelines="NodeName=localhost NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=$cpus RealMemory=$mem State=UNKNOWN"
  if [ "$nodes" -gt 1 ]; then
    names="node[1-$nodes]" spool="$d/spool/%n" pidf="$d/slurmd.%n.pid" logf="$d/log/slurmd.%n.log" nodelines=
    for k in $(seq "$nodes"); do
      mkdir -p "$d/spool/node$k" "$d/tmp/node$k"
      nodelines+="NodeName=node$k NodeAddr=127.0.0.1 NodeHostname=localhost Port=$(sc_free_port) CPUs=$cpus RealMemory=$mem State=UNKNOWN"$'\n'
    done
  fi
  echo "$nodes" >"$d/nodes"
  # several nodes: a node whose slurmd is gone is DOWN after 10 s, not 300.
  # TmpFS per cluster and node: Slurm's PMIx plugin makes its client
  # directory TmpFS/spmix_appdir_UID_JOB.STEP on every node of a step, and
  # the slurmstepd fails if it exists ("File exists": srun --mpi=pmix "task 0
  # launch failed: Unspecified error"). In /tmp it would: one /tmp for all
  # nodes (the second node's step), and a directory an earlier throw-away
  # cluster left (a step killed with its cluster) under the same job id, as
  # every such cluster numbers its jobs from 1.
  mkdir -p "$d/tmp/localhost"
  local timeout="SlurmdTimeout=300"
  [ "$nodes" -gt 1 ] && timeout="SlurmdTimeout=10"
  timeout+=$'\n'"TmpFS=$d/tmp/%n"
  cat >"$d/slurm.conf" <<EOF
# test cluster of $nodes node(s) written by tools/slurm-cluster.sh
ClusterName=dstest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctlport
SlurmdPort=$slurmdport
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$d/munge/sock
CredType=cred/munge
StateSaveLocation=$d/state
SlurmdSpoolDir=$spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$pidf
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$logf
SlurmctldDebug=info
MailProg=/bin/true
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/$gather
$acct
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=pmix
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
ReturnToService=2
MinJobAge=300
KillWait=20
$timeout
InactiveLimit=0
OverTimeLimit=0
MessageTimeout=10
PluginDir=/usr/lib/x86_64-linux-gnu/slurm-wlm
${SLURM_CLUSTER_EXTRA:-}
$nodelines
PartitionName=debug Nodes=$names Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  export SLURM_CONF="$d/slurm.conf"
  unset SLURM_JOB_ID SLURM_JOBID
  if [ -n "${SLURM_ACCOUNTING:-}" ]; then
    # the cluster in the accounting database (with the root account and user)
    sacctmgr -i add cluster dstest >"$d/log/sacctmgr.log" 2>&1 ||
      { echo "sacctmgr add cluster failed:" >&2; cat "$d/log/sacctmgr.log" >&2; return 1; }
  fi
  slurmctld -f "$d/slurm.conf" -i
  sc_start_slurmds "$d"
  for i in $(seq 150); do
    if [ "$(sinfo -h -N -o '%T' 2>/dev/null | grep -cx idle)" -eq "$nodes" ]; then
      echo "slurm-cluster: up in $d (slurmctld port $ctlport, $nodes node(s) $names of $cpus CPUs each)"
      return 0
    fi
    sleep 0.2
  done
  echo "slurm-cluster: not every node became idle; logs:" >&2
  tail -n 20 "$d"/log/*.log >&2 || true
  sinfo -N -l >&2 || true
  return 1
}

sc_start_slurmds() {
  local d=$1 k nodes
  nodes=$(cat "$d/nodes")
  if [ "$nodes" -eq 1 ]; then slurmd -f "$d/slurm.conf" -N localhost; return; fi
  for k in $(seq "$nodes"); do
    slurmd -f "$d/slurm.conf" -N "node$k"
  done
}

# MariaDB and slurmdbd for SLURM_ACCOUNTING=1; writes DIR/dbd.port.
sc_start_accounting() {
  local d=$1 dbport dbdport i
  dbport=$(sc_free_port)
  dbdport=$(sc_free_port)
  mkdir -p "$d/db"
  mariadb-install-db --no-defaults --user=root --datadir="$d/db/data" --skip-test-db \
    --auth-root-authentication-method=normal >"$d/log/mariadb-install.log" 2>&1 ||
    { echo "mariadb-install-db failed; see $d/log/mariadb-install.log" >&2; return 1; }
  # no grant tables: anyone on loopback may connect; a throw-away database
  mariadbd --no-defaults --user=root --datadir="$d/db/data" --socket="$d/db/sock" \
    --port="$dbport" --bind-address=127.0.0.1 --pid-file="$d/db/mariadbd.pid" \
    --log-error="$d/log/mariadb.log" --skip-grant-tables --innodb-buffer-pool-size=32M \
    --performance-schema=OFF --skip-log-bin >/dev/null 2>&1 </dev/null &
  for i in $(seq 300); do [ -S "$d/db/sock" ] && [ -s "$d/db/mariadbd.pid" ] && break; sleep 0.1; done
  [ -S "$d/db/sock" ] || { echo "mariadbd did not start; see $d/log/mariadb.log" >&2; return 1; }
  # slurmdbd reads slurmdbd.conf from the directory of SLURM_CONF
  cat >"$d/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$d/munge/sock
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$dbdport
SlurmUser=root
PidFile=$d/slurmdbd.pid
LogFile=$d/log/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$dbport
StorageUser=root
StorageLoc=slurm_acct_db
PluginDir=/usr/lib/x86_64-linux-gnu/slurm-wlm
EOF
  chmod 0600 "$d/slurmdbd.conf"
  echo "$dbdport" >"$d/dbd.port"
  SLURM_CONF="$d/slurm.conf" slurmdbd
  for i in $(seq 300); do
    ss -Htln 2>/dev/null | awk '{print $4}' | grep -q ":$dbdport\$" && return 0
    sleep 0.1
  done
  echo "slurmdbd did not start; see $d/log/slurmdbd.log" >&2
  return 1
}

# Kill one daemon by its pid file: TERM, then KILL after a few seconds.
sc_kill_pidfile() {
  local f=$1 pid
  [ -s "$f" ] || return 0
  pid=$(cat "$f")
  kill -TERM "$pid" 2>/dev/null || { rm -f "$f"; return 0; }
  # gone, or a zombie (daemons are reparented to a pid 1 that may not reap)
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$f"
}

sc_stop() {
  local d=$1 f pid
  [ -d "$d" ] || return 0
  export SLURM_CONF="$d/slurm.conf"
  # jobs first, so their steps and slurmstepd processes end with them
  if [ -s "$d/slurmctld.pid" ] && kill -0 "$(cat "$d/slurmctld.pid")" 2>/dev/null; then
    scancel --full --quiet --partition=debug 2>/dev/null || true
    for pid in $(seq 30); do
      [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  for f in "$d"/slurmd.pid "$d"/slurmd.node*.pid; do sc_kill_pidfile "$f"; done
  # slurmstepd processes left behind (their cwd or args name DIR's spool)
  for pid in $(pgrep -x slurmstepd 2>/dev/null || true); do
    if tr '\0' ' ' 2>/dev/null <"/proc/$pid/environ" | grep -q "SLURM_CONF=$d/slurm.conf"; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  sc_kill_pidfile "$d/slurmctld.pid"
  sc_kill_pidfile "$d/slurmdbd.pid"
  sc_kill_pidfile "$d/db/mariadbd.pid"
  sc_kill_pidfile "$d/munge/munged.pid"
}

# sc_kill_node DIR NODE: a node lost at once (kill -9): its slurmd, its
# slurmstepds (they listen on sockets in the node's spool directory) and the
# tasks on it (SLURMD_NODENAME=NODE and this cluster's SLURM_CONF in their
# environment), all stopped first so that none reacts to the others' deaths
sc_kill_node() {
  local d=$1 n=$2 pid env pids=()
  grep -q "^NodeName=$n " "$d/slurm.conf" || { echo "no node $n in $d/slurm.conf" >&2; return 2; }
  [ -s "$d/slurmd.$n.pid" ] && pids+=("$(cat "$d/slurmd.$n.pid")")
  pids+=($(ss -Hxlp 2>/dev/null | grep -F "$d/spool/$n/" | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u))
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    env=$(tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ") || continue
    if grep -qx "SLURMD_NODENAME=$n" <<<"$env" && grep -qx "SLURM_CONF=$d/slurm.conf" <<<"$env"; then
      pids+=("$pid")
    fi
  done
  [ "${#pids[@]}" -gt 0 ] || { echo "nothing of node $n runs" >&2; return 1; }
  kill -STOP "${pids[@]}" 2>/dev/null || true
  kill -KILL "${pids[@]}" 2>/dev/null || true
  rm -f "$d/slurmd.$n.pid"
  echo "slurm-cluster: node $n lost: killed ${#pids[@]} process(es): ${pids[*]}"
}

cmd=${1:-}
case "$cmd" in
  check) sc_check ;;
  start) [ $# -ge 2 ] || { echo "usage: $0 start DIR [CPUS] [--nodes K]" >&2; exit 2; }
         dir=$2 cpus= nodes=1; shift 2
         while [ $# -gt 0 ]; do
           case "$1" in
             --nodes) nodes=${2:-}; shift 2 || { echo "--nodes needs a number" >&2; exit 2; } ;;
             --nodes=*) nodes=${1#--nodes=}; shift ;;
             *) [ -z "$cpus" ] || { echo "start: unexpected '$1'" >&2; exit 2; }; cpus=$1; shift ;;
           esac
         done
         [[ "$nodes" =~ ^[1-9][0-9]?$ ]] || { echo "--nodes: expected 1..99, got '$nodes'" >&2; exit 2; }
         [[ -z "$cpus" || "$cpus" =~ ^[1-9][0-9]*$ ]] || { echo "CPUS: expected a number >= 1, got '$cpus'" >&2; exit 2; }
         sc_check >&2 || exit 1
         sc_start "$dir" "$cpus" "$nodes" ;;
  kill-node) [ $# -eq 3 ] || { echo "usage: $0 kill-node DIR NODE" >&2; exit 2; }
         sc_kill_node "$(cd "$2" && pwd)" "$3" ;;
  stop)  [ $# -ge 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }
         sc_stop "$2" ;;
  env)   [ $# -ge 2 ] || { echo "usage: $0 env DIR" >&2; exit 2; }
         sc_env "$(cd "$2" && pwd)" ;;
  *) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; [ "$cmd" = -h ] || [ "$cmd" = --help ]; exit $? ;;
esac
