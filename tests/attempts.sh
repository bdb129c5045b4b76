#!/usr/bin/env bash
# attempts.sh -- issue 11: one failing point never wedges a sweep.
# tests/sweeps/attempts.yaml has twelve small points and one (point 12,
# width 6000) whose weights need ~0.6 GB. Under a real memory limit (a
# cgroup of its own, memory.limit_in_bytes / memory.max, no swap):
#  A. plan lists point 12 as unable to fit; run (no --rank-memory) fails it
#     without running it, with the reason, and finishes the other twelve in
#     one run (today: the run is killed by the OOM killer).
#  B. run anyway (--rank-memory 100000 bypasses the estimate), the OOM killer
#     kills its rank: run 1 dies; run 2 (after a job death: every point in a
#     child process of its worker, issue 23) finishes the twelve others first;
#     point 12's child is OOM-killed, so point 12 fails at once ("killed by
#     SIGKILL (signal 9) in its own process ...") and run 2 exits 0. Run 3
#     has nothing to do. Nothing finished is lost.
#  C. the same through the Slurm job script's follow-on chain (stand-in
#     sbatch/squeue/scancel, the real script body, mpirun and dynsweep): the
#     chain ends with the sweep complete after 2 jobs.
#  D. --retry failed runs exactly the failed rows again, keeps the others.
#  E. a SIGKILL of a worker by the test, then of the whole job while the
#     point runs isolated: neither fails it; a drain hands the isolated point
#     back (its child checkpoints); --isolate never keeps the old rule
#     (--max-attempts 1 fails it); the crash-loop guard.
#  G. (a figure) a bystander of an OOM kill drains in mpirun's SIGTERM window.
#  H. a store whose /summary predates the field gets it at the first publish.
# The memory figure is measured (cgroup, MemAvailable, ulimit -v, Slurm):
#  F. the other sources of the figure: ulimit -v, SLURM_MEM_PER_CPU (plan),
#     SLURM_MEM_PER_NODE shared by a node's training ranks (run).
. "$(dirname "$0")/lib.sh"
unset SLURM_MEM_PER_CPU SLURM_MEM_PER_NODE SLURM_CPUS_PER_TASK SLURM_JOB_ID SLURM_NTASKS \
  SLURM_TASKS_PER_NODE OPENBLAS_NUM_THREADS DYNSWEEP_NO_REEXEC
sweep=$DS_SRC/tests/sweeps/attempts.yaml
# field STORE ID NAME: one summary field of one point (fields before reason)
field() { "$DYNSWEEP" export "$1" --where "id=$2" | awk -F, -v c="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } { print $k }'; }
# live counts (the published store plus the journal a killed run left):
# "DONE RUNNING DIVERGED FAILED PENDING"
live() { "$DYNSWEEP" status "$1" | awk '$1 == "points:" {print $2, $4, $6, $8, $10}'; }
nfinished() { live "$1" | awk '{print $1 + $3}'; }
row() { "$DYNSWEEP" export "$1" --where "id=$2" | tail -n 1; }

# ---- a memory cgroup of our own (tests/lib.sh memcg_make), 400 MB, no swap
CG=
trap 'memcg_remove; rm -rf "$T"' EXIT
LIMIT=$((400 * 1048576))
if ! memcg_make "$LIMIT"; then
  echo "attempts: no writable memory cgroup here; the memory-limit cases need one"
  bad "cannot create a memory cgroup (run as root on a machine with cgroup v1 memory or v2)"
  report; exit 1
fi
echo "cgroup: $CG (limit $LIMIT bytes)"

oom_start=$(ooms)
# ---- A. the estimate against the real limit: plan lists it, run fails it unrun
in_cg "$DYNSWEEP" plan "$sweep" >"$T/plan" 2>&1 || true
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
check "A: no OOM kill in the cgroup" test "$(ooms)" -eq "$oom_start"

# ---- B. the estimate bypassed: the OOM killer kills the rank running point 12
oom0=$(ooms)
declare -a rcs
for i in 1 2 3; do
  rcs[$i]=$(code in_cg mpirun --oversubscribe -n 2 "$DYNSWEEP" run "$sweep" -o "$T/b.h5" --rank-memory 100000 -v)
  cp "$T/err" "$T/b$i.err"
  fin[$i]=$(nfinished "$T/b.h5")
  lv[$i]=$(live "$T/b.h5")
  echo "B: run $i exit ${rcs[$i]}, $((fin[$i])) finished, live counts (done running diverged failed pending) ${lv[$i]}"
done
oom1=$(ooms)
check "B: run 1 killed (exit ${rcs[1]} > 128), one point left running (${lv[1]})" \
  test "${rcs[1]}" -gt 128 -a "$(echo ${lv[1]} | cut -d' ' -f2)" = 1
att2=$(field "$T/b.h5" 12 status)/$(field "$T/b.h5" 12 attempts)
check "B: run 2 isolates every point after the death (its log says so)" \
  grep -q "1 point(s) were running when the last run died.*child process of its worker" "$T/b2.err"
check "B: run 2 exits 0 (${rcs[2]}): point 12's own process was killed, not the job ($att2)" \
  test "${rcs[2]}" -eq 0 -a "$att2" = "failed/2"
check "B: all 12 other points finished within two runs (${fin[2]})" test "${fin[2]}" -eq 12
check "B: run 2 ran point 12 last (12 points finished before it started)" \
  test "$(grep -c '\] point [0-9]* *done' "$T/b2.err")" -eq 12
check "B: the reason names the signal, the peak RSS and the estimate" \
  grep -q "killed by SIGKILL (signal 9) in its own process (peak RSS [0-9.]* MB, estimated 559 MB)" <(row "$T/b.h5" 12)
check "B: run 3 has nothing to do (exit ${rcs[3]})" bash -c "test ${rcs[3]} -eq 0 && grep -q 'nothing to do' '$T/b3.err'"
check "B: the kernel's OOM killer did the kills ($oom0 -> $oom1)" test "$((oom1 - oom0))" -ge 2
check "B: the store is sound" deep_check "$T/b.h5"
same=$(diff <("$DYNSWEEP" export "$T/a.h5" --where 'id<12' | cut -d, -f1-13) \
            <("$DYNSWEEP" export "$T/b.h5" --where 'id<12' | cut -d, -f1-13) >/dev/null && echo 1 || echo 0)
check "B: its 12 points equal those of A" test "$same" = 1

# ---- C. the Slurm follow-on chain ends: the job script 'dynsweep submit'
# writes (its real body), real mpirun and dynsweep in the cgroup, stand-ins
# for sbatch/squeue/scancel; each job is run when its predecessor ended
REAL_MPIRUN=$(command -v mpirun)
mkdir -p "$T/sl/bin" "$T/sl/log"
cat >"$T/sl/bin/sbatch" <<'X'
#!/bin/bash
echo "$*" >>"$FAKE_LOG/sbatch"
n=$(( $(cat "$FAKE_LOG/nextid" 2>/dev/null || echo 100) + 1 )); echo "$n" >"$FAKE_LOG/nextid"
echo "$n;cluster"
X
printf '#!/bin/bash\nexit 0\n' >"$T/sl/bin/squeue"
printf '#!/bin/bash\necho "$*" >>"$FAKE_LOG/scancel"\n' >"$T/sl/bin/scancel"
printf '#!/bin/bash\nexec env -u SLURM_JOB_ID -u SLURM_NTASKS %s --oversubscribe "$@"\n' "$REAL_MPIRUN" >"$T/sl/bin/mpirun"
chmod +x "$T"/sl/bin/*
"$DYNSWEEP" submit "$sweep" -o "$T/c.h5" --launcher mpirun --ntasks 2 --dry-run \
  --run-option=--rank-memory --run-option=100000 >/dev/null
echo 100 >"$T/sl/log/nextid"
job=100 seg=1 ended=0
while [ "$seg" -le 6 ]; do
  FAKE_LOG=$T/sl/log PATH="$T/sl/bin:$PATH" SLURM_JOB_ID=$job SLURM_NTASKS=2 DS_SEGMENT=$seg \
    in_cg bash "$T/c.h5.sbatch" >"$T/sl/job$job.out" 2>&1 || true
  next=$(cat "$T/sl/log/nextid")
  grep -h '^dynsweep-job:' "$T/sl/job$job.out" | sed 's/^dynsweep-job: [^ ]* /C: /'
  if grep -qx "$next" "$T/sl/log/scancel" 2>/dev/null; then ended=$seg; break; fi
  job=$next seg=$((seg + 1))
done
check "C: the chain ended by itself after 2 jobs (ended after job $ended)" test "$ended" -eq 2
check "C: job 1 was killed and left its follow-on" \
  test "$(grep -l 'stopped (exit 13[0-9]), resumable' "$T"/sl/job100.out | wc -l)" -eq 1
check "C: job 2 saw the sweep complete" grep -q 'sweep complete' "$T/sl/job101.out"
check "C: 12 points finished, point 12 failed in its own process (2 starts)" \
  test "$(nfinished "$T/c.h5")/$(field "$T/c.h5" 12 status)/$(field "$T/c.h5" 12 attempts)" = 12/failed/2

# ---- D. --retry failed: exactly the failed rows run again, the others are kept
rc=$(code mpirun --oversubscribe -n 2 "$DYNSWEEP" run "$sweep" -o "$T/d.h5" --rank-memory 0.075)
nf=$("$DYNSWEEP" ls "$T/d.h5" | awk '/ points: / {print $7}')
check "D: --rank-memory 0.075 MB: exit 0 ($rc), some points fail unrun ($nf)" test "$rc" -eq 0 -a "$nf" -ge 3
failed_ids=$("$DYNSWEEP" export "$T/d.h5" --where status=failed | awk -F, 'NR > 1 {printf "%s ", $1}')
"$DYNSWEEP" export "$T/d.h5" --where status!=failed >"$T/d_kept0.csv"
rc=$(code mpirun --oversubscribe -n 2 "$DYNSWEEP" run "$sweep" -o "$T/d.h5")
check "D: without --retry the failed points stay failed (exit $rc, nothing to do)" \
  bash -c "test $rc -eq 0 && grep -q 'nothing to do' '$T/err' && test \"\$('$DYNSWEEP' ls '$T/d.h5' | awk '/ points: / {print \$7}')\" = $nf"
rc=$(code mpirun --oversubscribe -n 2 "$DYNSWEEP" run "$sweep" -o "$T/d.h5" --retry failed --rank-memory 1)
check "D: --retry failed --rank-memory 1: exit 0 ($rc; $(tail -n 1 "$T/err"))" test "$rc" -eq 0
check "D: it says how many it retries" grep -q -- "--retry failed: $nf failed point(s) to run again" "$T/err"
again=""; for id in $failed_ids; do again="$again$(field "$T/d.h5" "$id" status)/$(field "$T/d.h5" "$id" attempts) "; done
want=""; for id in $failed_ids; do if [ "$id" = 12 ]; then want="${want}failed/0 "; else want="${want}done/1 "; fi; done
check "D: the failed points ($failed_ids) ran again: $again(want $want)" test "$again" = "$want"
"$DYNSWEEP" export "$T/d.h5" >"$T/d_all.csv"
kept=$(awk -F, 'NR == FNR { k[$1] = $0; next } FNR > 1 && ($1 in k) && k[$1] != $0' "$T/d_kept0.csv" "$T/d_all.csv" | wc -l)
check "D: the other rows are untouched, wall time and rank included ($kept differ)" test "$kept" -eq 0
check "D: the store is sound (old series of the retried points superseded)" deep_check "$T/d.h5"
check "D: its points equal those of A" \
  diff <("$DYNSWEEP" export "$T/a.h5" --where 'id<12' | cut -d, -f1-13) <("$DYNSWEEP" export "$T/d.h5" --where 'id<12' | cut -d, -f1-13)
rc=$(code "$DYNSWEEP" run "$sweep" -o "$T/d.h5" --retry everything)
check "D: --retry everything is refused (exit $rc)" test "$rc" -eq 2

# ---- E. a worker SIGKILLed by the test: the attempt counts; a drain's does not
# Point 3 is never trained to its end (killed, drained, then failed unrun), so
# it is long: 40 M steps, ~25 s here. At 4 M it took 2.5 s on an AVX-512
# host, and in an ASan CI run it had finished before the test's SIGKILL.
cat >"$T/long.yaml" <<'Y'
name: longpoint
seed: 3
grid:
  train.steps: [100, 200, 300, 40000000]
model: {type: linear, width: 16, depth: 3, init_scale: 1.0}
data: {kind: teacher, d_in: 4, d_out: 2, rank: 2, n_train: 32, n_test: 16, noise: 0.01}
loss: {type: mse, reduction: half_mean}
optimizer: {type: gd, lr: 0.01}
record: {series: [loss], every: 1000}
Y
# worker_of STORE: pid of world rank 1 of the background job
worker1() {
  local p
  for p in $(ps -o pid= --ppid "$SID"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && { echo "$p"; return; }
  done
}
# wait_running STORE ID: until status (published store + journal) shows point ID running
wait_running() {
  for _ in $(seq 1 600); do
    [ -e "$1" ] && [ "$(field "$1" "$2" status 2>/dev/null)" = running ] && return 0
    bg_running || return 1; sleep 0.05
  done; return 1
}
# isolated_child: pid of a dynsweep whose parent is a dynsweep rank (an
# isolated point's child process), or nothing
isolated_child() {
  local p pp
  for p in $(ps -o pid= -s "$SID" 2>/dev/null); do
    pp=$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')
    [ -n "$pp" ] && [ "$(ps -o comm= -p "$p" 2>/dev/null)" = dynsweep ] &&
      [ "$(ps -o comm= -p "$pp" 2>/dev/null)" = dynsweep ] && { echo "$p"; return; }
  done
}
start_bg "$T/e1.log" -n 2 "$DYNSWEEP" run "$T/long.yaml" -o "$T/e.h5" --publish-every 0.1
wait_running "$T/e.h5" 3 && kill -KILL "$(worker1)" || true
wait_bg
check "E: worker killed by SIGKILL while it ran point 3: the job ends (exit $RC)" test "$RC" -ne 0 -a "$RC" -ne 3
check "E: point 3 was running, 1 attempt (published before the kill)" test "$(field "$T/e.h5" 3 status)/$(field "$T/e.h5" 3 attempts)" = running/1
# run 2: after the death every point runs in a child process; the test kills
# the worker (the child's parent) while point 3 runs: the job ends, the
# child goes with it (PR_SET_PDEATHSIG), and no point is blamed
start_bg "$T/e2.log" -n 2 "$DYNSWEEP" run "$T/long.yaml" -o "$T/e.h5" --publish-every 0.1 -v
for _ in $(seq 1 600); do [ "$(grep -c '\] point [012] *done' "$T/e2.log")" -ge 3 ] && break; bg_running || break; sleep 0.05; done
child=
if wait_running "$T/e.h5" 3; then
  for _ in $(seq 1 100); do child=$(isolated_child); [ -n "$child" ] && break; sleep 0.05; done
  kill -KILL "$(worker1)" || true
fi
wait_bg
check "E: run 2 trained point 3 in a child process of its worker (pid ${child:-none})" test -n "$child"
check "E: ... the worker's SIGKILL ended the job (exit $RC) and the child with it" \
  bash -c "test $RC -ne 0 -a $RC -ne 3 && sleep 0.5 && ! kill -0 ${child:-999999} 2>/dev/null"
check "E: point 3 is not blamed: running, 2 starts ($(field "$T/e.h5" 3 status)/$(field "$T/e.h5" 3 attempts))" \
  test "$(field "$T/e.h5" 3 status)/$(field "$T/e.h5" 3 attempts)" = running/2
"$DYNSWEEP" status "$T/e.h5" >"$T/e_status" 2>&1 || true
check "E: status says what the next run does about it" \
  grep -q "^attempts: 1 point(s) were running when it died; the next run trains every" "$T/e_status"
# run 3 (--max-attempts 1 would have failed it before issue 23): isolated
# again; SIGUSR1 drains, the child checkpoints through its parent
start_bg "$T/e3.log" -n 2 "$DYNSWEEP" run "$T/long.yaml" -o "$T/e.h5" --publish-every 0.1 -v --max-attempts 1
# (point 3 is "running" in the store from run 2's death already: wait for
# this run's start of it, attempt 3, and its child, before draining)
for _ in $(seq 1 600); do [ "$(field "$T/e.h5" 3 attempts 2>/dev/null)" = 3 ] && break; bg_running || break; sleep 0.05; done
for _ in $(seq 1 100); do [ -n "$(isolated_child)" ] && break; sleep 0.05; done
sleep 0.5; kill -USR1 "$SID" || true
wait_bg
check "E: run 3 (--max-attempts 1) runs point 3 again; SIGUSR1 drains (exit $RC)" test "$RC" -eq 3
check "E: the drained start is not counted (point 3 $(field "$T/e.h5" 3 status)/$(field "$T/e.h5" 3 attempts))" \
  test "$(field "$T/e.h5" 3 status)/$(field "$T/e.h5" 3 attempts)" = pending/2
start_bg "$T/e4.log" -n 2 "$DYNSWEEP" run "$T/long.yaml" -o "$T/e.h5" --publish-every 0.1
for _ in $(seq 1 200); do grep -q "from a checkpoint" "$T/e4.log" && break; bg_running || break; sleep 0.05; done
kill -USR1 "$SID" 2>/dev/null || true
wait_bg
check "E: ... and it resumes from the checkpoint its child sent (then drained again: exit $RC)" \
  bash -c "test $RC -eq 3 && grep -q '3 of 4 points finished, 1 to run (1 from a checkpoint)' '$T/e4.log'"
rc=$(code mpirun --oversubscribe -n 2 "$DYNSWEEP" run "$T/long.yaml" -o "$T/e.h5" --isolate never --max-attempts 1)
check "E: --isolate never keeps the old rule: --max-attempts 1 fails it at once (exit $rc)" \
  test "$(field "$T/e.h5" 3 status)" = failed
check "E: ... reason" grep -q "killed while running, 2 attempts; estimated" <(row "$T/e.h5" 3)
# the crash-loop guard: 10 x --max-attempts starts, each ended by a job death
# (the whole session SIGKILLed while point 3 runs)
# wait_started STORE ID N: until point ID is running with N starts (not the
# stale "running" a killed run left)
wait_started() {
  for _ in $(seq 1 600); do
    [ -e "$1" ] && [ "$(field "$1" "$2" status 2>/dev/null)/$(field "$1" "$2" attempts 2>/dev/null)" = "running/$3" ] && return 0
    bg_running || return 1; sleep 0.05
  done; return 1
}
kills=0
for i in $(seq 1 12); do
  start_bg "$T/g$i.log" -n 2 "$DYNSWEEP" run "$T/long.yaml" -o "$T/guard.h5" --publish-every 0.1 --max-attempts 1
  if wait_started "$T/guard.h5" 3 "$i"; then kill_session "$SID" || true; kills=$((kills + 1)); fi
  wait_bg
  [ "$RC" -eq 0 ] && break
done
check "E: the crash-loop guard ends point 3 after 10 starts ($kills kills, last exit $RC)" \
  test "$RC" -eq 0 -a "$kills" -eq 10 -a "$(field "$T/guard.h5" 3 status)/$(field "$T/guard.h5" 3 attempts)" = failed/10
check "E: ... saying so" grep -q "crash-loop guard: 10 starts, each ended by a job death (--max-attempts 1 x 10)" \
  <(row "$T/guard.h5" 3)
check "E: ... and the 3 other points finished" test "$(nfinished "$T/guard.h5")" -eq 3

# ---- G. (a figure, not a check: it depends on timing) a bystander: when the
# OOM killer kills one rank, mpirun sends SIGTERM to the others a second
# before SIGKILL; a worker in a short step drains and hands its point back
# in time, so only the killed point's attempt counts
sed -e 's/^  width: .*/  width: [16, 6000]/' -e 's/^  steps: 200$/  steps: 3000000/' -e 's/^  every: 20$/  every: 100000/' \
  "$sweep" >"$T/by.yaml"
rc=$(code in_cg mpirun --oversubscribe -n 3 "$DYNSWEEP" run "$T/by.yaml" -o "$T/g.h5" --rank-memory 100000)
echo "G: bystander: run exit $rc; live counts (done running diverged failed pending) $(live "$T/g.h5")" \
     "(0 1 0 0 1: the bystander drained, its attempt not counted)"

# ---- F. the other sources of what a rank has
# (not under AddressSanitizer: its shadow memory needs terabytes of address space)
case "$(ldd "$(dirname "$DYNSWEEP")/libexec/dynsweep" 2>/dev/null || true)" in
  *libasan*) echo "skip: F: ulimit -v under an ASan build" ;;
  *) (ulimit -v 700000; "$DYNSWEEP" plan "$sweep" >"$T/planv" 2>&1) || true
     check "F: plan under ulimit -v 700000 (KB): the address space left is what a rank has" \
       grep -q "^memory: a rank has [0-9]* MB (ulimit -v, left [0-9]* MB)" "$T/planv" ;;
esac
SLURM_MEM_PER_CPU=300 "$DYNSWEEP" plan "$sweep" >"$T/plans" 2>&1 || true
check "F: SLURM_MEM_PER_CPU=300: point 12 cannot fit 300 MB" \
  grep -q "^  point 12: does not fit: estimated 559 MB, this rank has 300 MB (SLURM_MEM_PER_CPU 300 MB)" "$T/plans"
rc=$(SLURM_MEM_PER_NODE=1000 code mpirun --oversubscribe -n 3 "$DYNSWEEP" run "$sweep" -o "$T/f.h5")
check "F: SLURM_MEM_PER_NODE=1000 on -n 3: 500 MB for each of the 2 training ranks, point 12 fails unrun (exit $rc)" \
  grep -qF '"does not fit: estimated 559 MB, this rank has 500 MB (SLURM_MEM_PER_NODE 1000 MB / 2 ranks)"' <(row "$T/f.h5" 12)

# ---- H. a store whose /summary predates the attempts field (format 3 as
# first released; made here by dropping the field with h5py): the first
# publish replaces /summary by today's row type, so attempts persist
if [ "$HAVE_H5PY" = 1 ]; then
  start_bg "$T/h0.log" -n 2 "$DYNSWEEP" run "$T/long.yaml" -o "$T/h.h5" --publish-every 0.1
  wait_running "$T/h.h5" 3 && kill -USR1 "$SID" || true
  wait_bg
  "$PY" - "$T/h.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    s = f["summary"][...]
    names = [n for n in s.dtype.names if n != "attempts"]
    old = np.empty(s.shape, dtype=[(n, s.dtype[n]) for n in names])
    for n in names:
        old[n] = s[n]
    attrs = dict(f["summary"].attrs)
    del f["summary"]
    d = f.create_dataset("summary", data=old)
    for k, v in attrs.items():
        d.attrs[k] = v
PY
  check "H: the test store has no attempts field" bash -c "! h5dump -H '$T/h.h5' | grep -q attempts"
  start_bg "$T/h1.log" -n 2 "$DYNSWEEP" run "$T/long.yaml" -o "$T/h.h5" --publish-every 0.1
  wait_running "$T/h.h5" 3 && { kill_session "$SID" || true; }
  wait_bg
  check "H: after a publish the store has the field and point 3's attempt (killed run: exit $RC)" \
    test "$(field "$T/h.h5" 3 status)/$(field "$T/h.h5" 3 attempts)" = running/1
  rc=$(code mpirun --oversubscribe -n 2 "$DYNSWEEP" run "$T/long.yaml" -o "$T/h.h5" --isolate never --max-attempts 1)
  check "H: ... so --isolate never --max-attempts 1 fails it at the next resume (exit $rc)" \
    test "$rc" -eq 0 -a "$(field "$T/h.h5" 3 status)" = failed
fi

# ---- an older store (format 2, no attempts field) reads attempts 0
check "store_v2.h5 (no attempts field) reads attempts 0" \
  test "$("$DYNSWEEP" export "$DS_SRC/tests/data/store_v2.h5" | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "attempts") k = i; next } { print $k }' | sort -u)" = 0

# the fault campaign of this test, by kind
echo "attempts: fault campaign: $(( $(ooms) - oom_start )) OOM kills by the kernel (cgroup limit $((LIMIT / 1048576)) MB), 2 SIGKILLs of a worker, $((kills + (HAVE_H5PY == 1))) SIGKILLs of a whole job, $([ "$HAVE_H5PY" = 1 ] && echo 2 || echo 1) SIGUSR1 drains, $(ls "$T"/sl/job*.out | wc -l) chained Slurm jobs ($(grep -l 'stopped (exit 1[3-9][0-9])' "$T"/sl/job*.out | wc -l) killed)"
report
