#!/usr/bin/env bash
# slurm_attempts.sh -- issue 11 on a real (throw-away) Slurm cluster: the
# follow-on chain of `dynsweep submit` ends when a point keeps getting killed.
# tools/slurm-cluster.sh starts munged, slurmctld and slurmd inside a memory
# cgroup of the test's own (400 MB, tests/lib.sh memcg_make), so every job
# runs under that limit. tests/sweeps/attempts.yaml's point 12 needs ~0.6 GB;
# --rank-memory 100000 bypasses the memory check, so the kernel's OOM killer
# kills its rank in the job (mpirun launcher: the job ends, exit 137). Checks:
# the chain ends by itself (the last job sees the sweep complete and cancels
# its follow-on) after 2 jobs: job 2 runs every point in a child process of
# its worker (issue 23), so point 12's OOM kill ends only its child and the
# point fails at once; the 12 other points are done, and the kills were OOM
# kills. Without the Slurm
# packages or a writable memory cgroup it prints "skip: <reason>" and passes.
. "$(dirname "$0")/lib.sh"
CLUSTER=$DS_SRC/tools/slurm-cluster.sh
skip() { echo "skip: $*"; echo "slurm_attempts: 0 passed, 0 failed, 1 skipped"; exit 0; }
unset SLURM_MEM_PER_CPU SLURM_MEM_PER_NODE SLURM_CPUS_PER_TASK OPENBLAS_NUM_THREADS
why=$(bash "$CLUSTER" check 2>&1) || skip "$why"
C=$(mktemp -d /tmp/dsa.XXXXXX)
CG=
cleanup() {
  bash "$CLUSTER" stop "$C" >/dev/null 2>&1 || true
  memcg_remove
  rm -rf "$C" "$T"
}
trap cleanup EXIT
memcg_make $((400 * 1048576)) || skip "no writable memory cgroup"
oom0=$(ooms)
in_cg bash "$CLUSTER" start "$C" 2 || { bad "cluster did not start"; report; exit 1; }
eval "$(bash "$CLUSTER" env "$C")"

sweep=$DS_SRC/tests/sweeps/attempts.yaml
t0=$(date +%s)
rc=0
"$DYNSWEEP" submit "$sweep" -o "$T/s.h5" --launcher mpirun --ntasks 2 --time 2 --max-jobs 8 \
  --run-option=--rank-memory --run-option=100000 --run-option=--verbose >"$T/submit.txt" 2>&1 || rc=$?
check "submit exits 0 (rc $rc)" test "$rc" -eq 0
deadline=$((t0 + ${DS_SLURM_WAIT:-300}))
q=x
while [ "$(date +%s)" -lt "$deadline" ]; do
  q=$(squeue -h -n ds-attempts -o '%i %T' 2>/dev/null || echo "squeue failed")
  [ -z "$q" ] && break
  sleep 2
done
elapsed=$(( $(date +%s) - t0 ))
cat "$T"/s.h5.slurm-*.out >"$T/all.log" 2>/dev/null || true
grep -h '^dynsweep-job:' "$T/all.log" || true
njobs=$(ls "$T"/s.h5.slurm-*.out 2>/dev/null | wc -l)
nkilled=$(grep -c 'stopped (exit 1[3-9][0-9]), resumable' "$T/all.log" || true)
echo "slurm_attempts: chain of $njobs job(s), $nkilled killed, $(( $(ooms) - oom0 )) OOM kill(s), ${elapsed}s"
check "the chain ended by itself within ${DS_SLURM_WAIT:-300} s (${elapsed}s; queue '${q}')" test -z "$q"
check "2 jobs: 1 killed, the 2nd saw the sweep complete ($njobs jobs, $nkilled killed)" \
  test "$njobs" -eq 2 -a "$nkilled" -eq 1
check "the last job cancelled its follow-on" grep -q 'sweep complete' "$T/all.log"
check "the kernel's OOM killer did the kills" test "$(( $(ooms) - oom0 ))" -ge 2
"$DYNSWEEP" ls "$T/s.h5" >"$T/ls.txt" 2>&1 || true
check "store: 12 done, 1 failed" grep -q '^13 points: 12 done, 0 diverged, 1 failed, 0 pending' "$T/ls.txt"
check "point 12 failed in its own process (2 starts), saying so" \
  grep -q '^failed: point 12 (2 attempt(s)): killed by SIGKILL (signal 9) in its own process (peak RSS [0-9.]* MB, estimated 559 MB)' "$T/ls.txt"
report
