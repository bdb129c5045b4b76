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
check "B: run 2 killed again (exit ${rcs[2]}), one point left running (${lv[2]})" \
  test "${rcs[2]}" -gt 128 -a "$(echo ${lv[2]} | cut -d' ' -f2)" = 1
check "B: run 2 counted the attempt of the point that was running" grep -q "1 point(s) were running when the last run died" "$T/b2.err"
check "B: all 12 other points finished within two runs (${fin[2]})" test "${fin[2]}" -eq 12
check "B: run 2 ran point 12 last (12 points finished before it started)" \
  test "$(grep -c '\] point [0-9]* *done' "$T/b2.err")" -eq 12
att3=$(field "$T/b.h5" 12 status)/$(field "$T/b.h5" 12 attempts)
check "B: run 3 exits 0 (${rcs[3]}), point 12 failed after 2 attempts ($att3)" \
  test "${rcs[3]}" -eq 0 -a "$att3" = "failed/2"
check "B: the reason says so" grep -q "killed while running, 2 attempts; estimated 559 MB, this rank has 97.7 GB" \
  <(row "$T/b.h5" 12)
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
check "C: the chain ended by itself after 3 jobs (ended after job $ended)" test "$ended" -eq 3
check "C: jobs 1 and 2 were killed and left their follow-on" \
  test "$(grep -l 'stopped (exit 13[0-9]), resumable' "$T"/sl/job10[01].out | wc -l)" -eq 2
check "C: job 3 saw the sweep complete" grep -q 'sweep complete' "$T/sl/job102.out"
check "C: 12 points finished, point 12 failed after 2 attempts" \
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
start_bg "$T/e1.log" -n 2 "$DYNSWEEP" run "$T/long.yaml" -o "$T/e.h5" --publish-every 0.1
wait_running "$T/e.h5" 3 && kill -KILL "$(worker1)" || true
wait_bg
check "E: worker killed by SIGKILL while it ran point 3: the job ends (exit $RC)" test "$RC" -ne 0 -a "$RC" -ne 3
check "E: point 3 was running, 1 attempt (published before the kill)" test "$(field "$T/e.h5" 3 status)/$(field "$T/e.h5" 3 attempts)" = running/1
start_bg "$T/e2.log" -n 2 "$DYNSWEEP" run "$T/long.yaml" -o "$T/e.h5" --publish-every 0.1 -v
# the published store still says point 3 running (the killed run): wait for
# this run's three other points first
for _ in $(seq 1 600); do [ "$(grep -c '\] point [012] *done' "$T/e2.log")" -ge 3 ] && break; bg_running || break; sleep 0.05; done
wait_running "$T/e.h5" 3 && kill -USR1 "$SID" || true
wait_bg
check "E: resumed, the 3 others first, then point 3; SIGUSR1 drains (exit $RC)" \
  test "$RC" -eq 3 -a "$(grep -c '\] point [012] *done' "$T/e2.log")" -eq 3
check "E: the drained attempt is not counted (point 3 $(field "$T/e.h5" 3 status)/$(field "$T/e.h5" 3 attempts))" \
  test "$(field "$T/e.h5" 3 status)/$(field "$T/e.h5" 3 attempts)" = pending/1
rc=$(code mpirun --oversubscribe -n 2 "$DYNSWEEP" run "$T/long.yaml" -o "$T/e.h5" --max-attempts 1)
check "E: --max-attempts 1: point 3 fails at once (exit $rc)" \
  test "$rc" -eq 0 -a "$(field "$T/e.h5" 3 status)" = failed
check "E: ... reason" grep -q "killed while running, 1 attempts; estimated" <(row "$T/e.h5" 3)

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
  rc=$(code mpirun --oversubscribe -n 2 "$DYNSWEEP" run "$T/long.yaml" -o "$T/h.h5" --max-attempts 1)
  check "H: ... so --max-attempts 1 fails it at the next resume (exit $rc)" \
    test "$rc" -eq 0 -a "$(field "$T/h.h5" 3 status)" = failed
fi

# ---- an older store (format 2, no attempts field) reads attempts 0
check "store_v2.h5 (no attempts field) reads attempts 0" \
  test "$("$DYNSWEEP" export "$DS_SRC/tests/data/store_v2.h5" | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "attempts") k = i; next } { print $k }' | sort -u)" = 0

# the fault campaign of this test, by kind
echo "attempts: fault campaign: $(( $(ooms) - oom_start )) OOM kills by the kernel (cgroup limit $((LIMIT / 1048576)) MB), 1 SIGKILL of a worker, $([ "$HAVE_H5PY" = 1 ] && echo 1 || echo 0) SIGKILL of a whole job, $([ "$HAVE_H5PY" = 1 ] && echo 2 || echo 1) SIGUSR1 drains, $(ls "$T"/sl/job*.out | wc -l) chained Slurm jobs ($(grep -l 'stopped (exit 1[3-9][0-9])' "$T"/sl/job*.out | wc -l) killed)"
report
