# tests/slurm_lib.sh -- for the tests on a real throw-away Slurm cluster
# (tools/slurm-cluster.sh); sourced after tests/lib.sh. Uses $T, check, bad.
CLUSTER=$DS_SRC/tools/slurm-cluster.sh
SLURM_TEST=$(basename "$0" .sh)
skip() { echo "skip: $*"; echo "$SLURM_TEST: 0 passed, 0 failed, 1 skipped"; exit 0; }

# slurm_need PACKAGE...: what tools/slurm-cluster.sh needs (its 'check');
# tools/test.sh installs the packages (tools/setup.sh DS_TEST_PACKAGES), so a
# test never installs anything itself: "skip: <reason>" and the apt-get line
slurm_need() {
  local why
  why=$(bash "$CLUSTER" check 2>&1) && return 0
  skip "$why (apt-get install $*, or run tools/test.sh as root)"
}

# slurm_start CPUS [NODES]: a cluster of NODES nodes (default 1) of CPUS CPUs
# each in C (a short directory name: the munge socket path is limited), its
# environment in this shell; torn down on any exit,
# after slurm_cleanup_hook (if the test defines one) and, when something
# failed, the last lines of the daemons' logs and of the job logs $T/*.out
slurm_start() {
  C=$(mktemp -d /tmp/dss.XXXXXX)
  trap slurm_cleanup EXIT
  [ "$(nproc)" -lt "$1" ] && export SLURM_CLUSTER_EXTRA=SlurmdParameters=config_overrides
  bash "$CLUSTER" start "$C" "$1" --nodes "${2:-1}" || { bad "cluster did not start"; report; exit 1; }
  eval "$(bash "$CLUSTER" env "$C")"
}
slurm_cleanup() {
  local rc=$? f
  if declare -F slurm_cleanup_hook >/dev/null; then slurm_cleanup_hook || true; fi
  if [ "$rc" -ne 0 ] || [ "$fails" -ne 0 ]; then
    echo "---- slurm logs (last lines)"
    tail -n 15 "$C"/log/slurmctld.log "$C"/log/slurmd*.log 2>/dev/null || true
    echo "---- slurmd errors (all; not PMIx's cleanup of an already removed directory)"
    grep -h 'error' "$C"/log/slurmd*.log 2>/dev/null | grep -vE 'rmdir_recursive|Failed to remove /tmp/spmix|^: No such' || true
    for f in "$T"/*.out; do [ -e "$f" ] && { echo "---- $f"; tail -n 40 "$f"; }; done
  fi
  bash "$CLUSTER" stop "$C" || true
  rm -rf "$C" "$T"
}

# slurm_wait_chain NAME SECONDS T0: until no job named NAME is left, at most
# SECONDS after T0 (unix time); sets q (what squeue still shows) and elapsed
slurm_wait_chain() {
  local deadline=$(($3 + $2))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    q=$(squeue -h -n "$1" -o '%i %T %r' 2>/dev/null || echo "squeue failed")
    [ -z "$q" ] && break
    sleep 2
  done
  elapsed=$(( $(date +%s) - $3 ))
  echo "$SLURM_TEST: chain finished after ${elapsed}s; queue: '${q:-empty}'"
  check "job chain ended within $2 s (${elapsed}s)" test -z "$q"
}

# slurm_sweep_yaml FILE NAME SEED SERIES LRS [STEPS [GRID_LINE]]: a sweep of
# linear and ReLU networks of ~9 CPU-seconds a point (one worker; STEPS
# 9000 of a host that runs these nets at 1 ms a step; scaled to this host by
# slurm_step_scale), over the learning rates LRS (a YAML list's items),
# recording SERIES. With biases: a bias-free linear net would take its
# end-to-end product step (src/nn/mlp.c), several times faster, and the
# drains these tests time would find its points already done;
# GRID_LINE: one more grid axis, e.g. '  ranks_per_point: [1, 2]'
slurm_sweep_yaml() {
  slurm_step_scale
  local steps
  steps=$(awk -v s="${6:-9000}" -v k="$DS_SLURM_SCALE" 'BEGIN { printf "%d", s * k + 0.5 }')
  slurm_sweep_file "$1" "$2" "$3" "$4" "$5" "$steps" "${7:-}"
}
# slurm_step_scale: DS_SLURM_SCALE, this host's steps per reference step.
# These tests time drains against points of ~9 CPU-seconds: a host 3x as
# fast (AVX-512, say) finished their sweeps inside the first job, and no
# drain happened. So the test sweep's two nets are timed here, in CPU
# seconds of one process (rank 0 trains them: no mpirun), at 500 and 2500
# steps; the difference (start-up cancels) gives the CPU time of a step, and
# the steps are scaled to 1 ms of CPU a step (clamped to 0.25x..8x); once a
# test. CPU time, not wall: a scale taken from wall time on a loaded machine
# (x1.84 during a CI run) was too small once the load fell, and slurm_chain's
# sweep fit into its first job again.
slurm_step_scale() {
  [ -n "${DS_SLURM_SCALE:-}" ] && return
  local d s c=() ms=0 ok=1 TIMEFORMAT=%U+%S
  d=$(mktemp -d "${T:-/tmp}/scale.XXXX")
  for s in 500 2500; do
    slurm_sweep_file "$d/s$s.yaml" scale 1 loss 0.002 "$s" ""
    { time "$DYNSWEEP" run "$d/s$s.yaml" -o "$d/s$s.h5" --quiet >"$d/log" 2>&1; } 2>"$d/t$s" || ok=0
    c+=("$(awk -F+ '{ printf "%.3f", $1 + $2 }' "$d/t$s")")
  done
  # 2 points x 2000 steps between the runs; a failed run: no scale (x1), said
  [ "$ok" = 1 ] && ms=$(awk -v a="${c[0]}" -v b="${c[1]}" 'BEGIN { printf "%.4f", (b - a) / 4 }') ||
    echo "$SLURM_TEST: timing the test nets failed (steps x 1): $(tail -n 2 "$d/log")"
  DS_SLURM_SCALE=$(awk -v w="$ms" 'BEGIN { k = w > 0 ? 1 / w : 1; k = k < 0.25 ? 0.25 : k > 8 ? 8 : k; printf "%.3f", k }')
  echo "$SLURM_TEST: these nets take $ms ms of CPU a step here (${c[0]} s for 500 steps, ${c[1]} s for 2500): steps x $DS_SLURM_SCALE"
  rm -rf "$d"
}
slurm_sweep_file() {
  cat >"$1" <<Y
name: $2
seed: $3
model: {type: linear, width: 64, depth: 4, bias: true, init: gaussian, init_scale: 1.0}
data: {kind: teacher, d_in: 32, d_out: 8, rank: 4, n_train: 512, n_test: 128, noise: 0.01}
loss: {type: mse, reduction: half_mean}
optimizer: {type: gd}
train: {steps: $6, tol: 0, diverge_above: 1.0e6}
record:
  series: [$4]
  every: 50
  per_decade: 5
grid:
  lr: [$5]
  model.type: [linear, relu]
$7
Y
}

# store_attr STORE NAME: a string root attribute of a store (h5dump)
store_attr() { h5dump -a "/$2" "$1" 2>/dev/null | sed -n 's/.*(0): "\(.*\)".*/\1/p'; }

# slurm_sacct JOBS FILE: sacct's JobID|State|ExitCode lines of JOBS (a comma
# list) into FILE, once none is running or pending any more (accounting lags
# a little behind the jobs; at most 30 s)
slurm_sacct() {
  local i
  for i in $(seq 30); do
    sacct -n -P -j "$1" -o JobID,State,ExitCode >"$2" 2>&1 || true
    grep -qE 'RUNNING|PENDING|COMPLETING' "$2" || break
    sleep 1
  done
  echo "---- sacct -j $1 -o JobID,State,ExitCode"; cat "$2"
}
