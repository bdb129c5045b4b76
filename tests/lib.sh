# tests/lib.sh -- shared helpers for the shell tests (sourced).
set -euo pipefail
: "${DYNSWEEP:?DYNSWEEP must point to the dynsweep binary (ctest sets it)}"
: "${DS_SRC:?DS_SRC must point to the source tree}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# the store layout follows the plan unless a test asks (docs/store.md, format 5)
unset DYNSWEEP_STORE_SEGMENTS DYNSWEEP_PUBLISH_FACTOR DYNSWEEP_SEG_CAP DYNSWEEP_BLOCK_ROWS DYNSWEEP_STORE_BLOCKS
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0 passes=0
ok()   { passes=$((passes + 1)); echo "ok: $*"; }
bad()  { fails=$((fails + 1)); echo "FAIL: $*" >&2; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
report() { echo "$(basename "$0" .sh): $passes passed, $fails failed"; [ "$fails" -eq 0 ]; }
drun() { mpirun --oversubscribe -n "$1" "$DYNSWEEP" run "${@:2}"; }
# exit code of a command, its output in $T/out and $T/err
code() { set +e; "$@" >"$T/out" 2>"$T/err"; echo $?; set -e; }
# plan_refuses SWEEP WHAT MESSAGE [--set ...]: `dynsweep plan SWEEP --set ...`
# exits 2 and its message holds MESSAGE (the message is shown when not)
plan_said() { [ "$1" = 2 ] && grep -qF -- "$2" "$T/err"; }
plan_refuses() {
  local sweep=$1 what=$2 msg=$3; shift 3
  local rc; rc=$(code "$DYNSWEEP" plan "$sweep" "$@")
  plan_said "$rc" "$msg" || cat "$T/err" >&2
  check "plan refuses $what (exit $rc): $msg" plan_said "$rc" "$msg"
}

# /usr/bin/python3 with h5py for the deep store checks (tests/store_check.py)
PY=/usr/bin/python3
HAVE_H5PY=$([ -x "$PY" ] && "$PY" -c 'import h5py, numpy' 2>/dev/null && echo 1 || echo 0)
# deep_check STORE [REFERENCE]: every finished point complete (and equal to
# the reference); without h5py only that h5dump reads the file
deep_check() {
  if [ "$HAVE_H5PY" = 1 ]; then "$PY" "$DS_SRC/tests/store_check.py" "$@"
  else h5dump -H "$1" >/dev/null; fi
}
# same_points A B: the series of every point equal bit for bit, whatever the
# order the points finished in (tests/store_diff.py; replaces h5diff /points)
same_points() { "$PY" "$DS_SRC/tests/store_diff.py" "$1" "$2"; }
# kill_session SID: SIGKILL every live process of the session SID leads
# (a job started with `setsid mpirun ...`: mpirun and its ranks, which Open
# MPI puts in process groups of their own but not in sessions of their own)
kill_session() {
  local sid=$1 pids i
  for i in $(seq 1 40); do
    pids=$(ps -o pid=,stat= -s "$sid" 2>/dev/null | awk '$2 !~ /^Z/ {print $1}' | tr '\n' ' ')
    [ -z "${pids// /}" ] && return 0
    kill -KILL $pids 2>/dev/null || true
    sleep 0.05
  done
  return 1
}
# md5 of a file, or "missing"
sum_of() { if [ -e "$1" ]; then md5sum < "$1"; else echo missing; fi; }
# start_bg LOG ARGS...: `mpirun --oversubscribe ARGS` in a session of its own,
# in the background (a wrapper subshell, so that killing the job is not
# reported by bash); sets SID (the session id = mpirun's pid) and BG (the job)
start_bg() {
  local log=$1; shift
  rm -f "$T/sid"
  ( setsid bash -c 'echo $$ > "$0"; exec mpirun --oversubscribe "$@"' "$T/sid" "$@" >"$log" 2>&1; exit $? ) &
  BG=$!
  while [ ! -s "$T/sid" ]; do sleep 0.01; done
  SID=$(cat "$T/sid")
}
# wait_bg: waits for the background job; its exit code in RC
wait_bg() { set +e; wait "$BG"; RC=$?; set -e; }
# bg_running: is the background job still running?
bg_running() { kill -0 "$BG" 2>/dev/null; }
# drain_run STORE WAIT LOG MPIRUN-ARGS...: runs mpirun MPIRUN-ARGS in the
# background (start_bg, output in LOG) and sends it SIGUSR1 WAIT s after
# STORE's journal appeared; a run that ended before the signal (exit 0: a
# fast host, or a loaded one's slow start counted into WAIT) is made again
# from nothing with half the wait, 5 tries. Exit code of the last in RC
drain_run() {
  local store=$1 nap=$2 log=$3 try; shift 3
  for try in 1 2 3 4 5; do
    rm -rf "$store" "$store".*
    start_bg "$log" "$@"
    while bg_running && [ ! -e "$store.journal" ]; do sleep 0.01; done
    sleep "$nap"
    kill -USR1 "$SID" 2>/dev/null || true
    wait_bg
    [ "$RC" -eq 0 ] || return 0
    echo "drain_run: $(basename "$store"): the run ended before SIGUSR1 ${nap} s after its journal (try $try)"
    nap=$(echo "$nap / 2" | bc -l)
  done
}

# ---- a memory cgroup of the test's own (issue 11: real memory limits)
# memcg_make BYTES: a child of this process's memory cgroup (v1 memory
# controller or v2) limited to BYTES, no swap; sets CG, returns 1 if none
# can be made here (not root, no writable cgroup). in_cg CMD...: runs CMD in
# it. ooms: OOM kills in it so far. memcg_remove: kills what is left in it
# and removes it (call it from the EXIT trap).
memcg_make() {
  local v1 v2
  CG=
  v1=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)
  v2=$(awk -F: '$1 == 0 {print $3}' /proc/self/cgroup)
  if [ -n "$v1" ] && [ -d "/sys/fs/cgroup/memory$v1" ]; then
    CG=/sys/fs/cgroup/memory${v1%/}/dynsweep-test-$$
    mkdir "$CG" 2>/dev/null && echo "$1" >"$CG/memory.limit_in_bytes" &&
      { echo 0 >"$CG/memory.swappiness" 2>/dev/null || true; } || CG=
  elif [ -n "$v2" ] && [ -f "/sys/fs/cgroup${v2%/}/memory.max" ]; then
    CG=/sys/fs/cgroup${v2%/}/dynsweep-test-$$
    mkdir "$CG" 2>/dev/null && echo "$1" >"$CG/memory.max" &&
      { echo 0 >"$CG/memory.swap.max" 2>/dev/null || true; } || CG=
  fi
  [ -n "$CG" ]
}
in_cg() { sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG" "$@"; }
ooms() { { cat "$CG/memory.oom_control" "$CG/memory.events" 2>/dev/null || true; } |
         awk '$1 == "oom_kill" {n = $2} END {print n + 0}'; }
memcg_remove() {
  local p i
  [ -n "${CG:-}" ] || return 0
  for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
  for i in $(seq 1 50); do rmdir "$CG" 2>/dev/null && break; sleep 0.1; done
}

# long_sweep: $T/long.yaml, tests/sweeps/long.yaml with its steps scaled so a
# point takes ~2 s of this host (never fewer than its 60000). The drain tests
# need every worker mid-point 0.6 s after the store appears; an AVX-512 host
# ran its 60000 steps in 0.67 s and finished the sweep before the signal.
long_sweep() {
  local w steps
  mpirun --oversubscribe -n 2 "$DYNSWEEP" run "$DS_SRC/tests/sweeps/long.yaml" -o "$T/lcal.h5" -q \
    --set train.steps=6000 --set train.tol=0 --set 'grid.lr=[0.01]' >"$T/lcal.log" 2>&1 || true
  w=$("$DYNSWEEP" ls "$T/lcal.h5" 2>/dev/null | awk '$5 == "done" { s += $10; n++ } END { if (n) printf "%.4f", s / n }')
  steps=$(awk -v w="${w:-0}" 'BEGIN { s = w > 0 ? 6000 * 2.0 / w : 60000; s = s < 60000 ? 60000 : s > 2000000 ? 2000000 : s; printf "%d", s }')
  sed "s/^  steps: 60000$/  steps: $steps/" "$DS_SRC/tests/sweeps/long.yaml" >"$T/long.yaml"
  grep -q "^  steps: $steps\$" "$T/long.yaml" || bad "long_sweep: sed changed nothing"
  echo "long_sweep: 6000 steps take ${w:-?} s here: $steps steps a point"
  rm -f "$T/lcal.h5"*
}
