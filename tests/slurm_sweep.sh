#!/usr/bin/env bash
# slurm_sweep.sh -- a sweep across Slurm time limits on a real (throw-away)
# Slurm cluster: tools/slurm-cluster.sh starts munged, slurmctld and slurmd
# (Debian's slurm-wlm and munge) on loopback ports with their own slurm.conf,
# key and state in a temporary directory; `dynsweep submit` submits a sweep of
# ~75 CPU-seconds with --time=1 (Slurm's smallest limit) and the drain signal
# 25 s before it, so the sweep needs several jobs (drain, follow-on job,
# resume). Checks: the sweep completes within 7 minutes; more than one job
# ran and at least one drained; every point finished exactly once over all
# jobs (the per-point log lines of --verbose); the trajectories are bitwise
# those of an uninterrupted mpirun run (tests/store_diff.py; it runs meanwhile, on
# the other core) and the summaries agree. Then a small sweep through the
# mpirun template slurm/dynsweep-mpirun.sbatch. The cluster is torn down on
# any exit. Without the packages (and no root to install them) it prints
# "skip: <reason>" and passes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm_lib.sh"
slurm_need slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge
command -v h5diff >/dev/null || skip "h5diff (hdf5-tools) is not installed"

# ---- the cluster (2 CPUs); the reference run is stopped with it
refpid=
slurm_cleanup_hook() { [ -n "$refpid" ] && kill "$refpid" 2>/dev/null && wait "$refpid" 2>/dev/null; }
cpus=2
slurm_start "$cpus"
check "srun --mpi=list offers pmix" bash -c "srun --mpi=list 2>&1 | grep -qw pmix"

# ---- the sweep: 8 points of ~9 CPU-seconds each (one worker: rank 0 schedules)
slurm_sweep_yaml "$T/sweep.yaml" slurmtest 11 "loss, test_loss, grad_norm, param_norm, layer_fro" "0.002, 0.005, 0.01, 0.02"
t0=$(date +%s)
rc=0
"$DYNSWEEP" submit "$T/sweep.yaml" -o "$T/store.h5" --ntasks "$cpus" --time 1 --signal-time 25 \
  --run-option=--verbose --run-option=--checkpoint-every --run-option=5 >"$T/submit.txt" 2>&1 || rc=$?
cat "$T/submit.txt"
check "dynsweep submit exits 0 (rc $rc)" test "$rc" -eq 0
job=$(sed -n 's/^submitted job \([0-9]*\).*/\1/p' "$T/submit.txt")
check "submit printed a job id ($job)" test -n "$job"
# the uninterrupted reference run, meanwhile (its worker takes the other core)
mpirun --oversubscribe -n "$cpus" "$DYNSWEEP" run "$T/sweep.yaml" -o "$T/ref.h5" --quiet >"$T/ref.log" 2>&1 &
refpid=$!

# ---- wait (bounded) until no job of the chain is left
slurm_wait_chain ds-slurmtest "${DS_SLURM_WAIT:-420}" "$t0"
cat "$T"/store.h5.slurm-*.out >"$T/all.log" 2>/dev/null || true
grep -h '^dynsweep-job:' "$T/all.log" || true
njobs=$(grep -h '^dynsweep-job: .* follow-on job' "$T/all.log" | awk '{print $4}' | sort -u | wc -l)
check "more than one job ran ($njobs)" test "$njobs" -ge 2
check "a job drained and a follow-on resumed" grep -qE 'drained( in [0-9.]+ s)?, resumable; follow-on job [0-9]+ resumes' "$T/all.log"
check "the last job saw the sweep complete" grep -q 'sweep complete' "$T/all.log"
state=$(store_attr "$T/store.h5" run_state)
check "store run_state is complete ($state)" test "$state" = complete
"$DYNSWEEP" ls "$T/store.h5" >"$T/ls_store.txt" 2>"$T/ls_store.err" || true
check "store: 8 points, none pending" grep -q '^8 points: .* 0 pending' "$T/ls_store.txt"
# every point finished exactly once over all jobs
grep -hoE '\] point [0-9]+ (done|diverged|failed) ' "$T/all.log" | awk '{print $3}' | sort -n | uniq -c >"$T/once.txt" || true
nfin=$(wc -l <"$T/once.txt"); nmax=$(awk 'BEGIN{m=0} {if ($1 > m) m = $1} END{print m}' "$T/once.txt")
check "each of the 8 points finished once (points $nfin, most finishes of one point $nmax)" \
  test "$nfin" -eq 8 -a "$nmax" -eq 1
check "a point resumed from a checkpoint" grep -qE 'resuming .* \([1-9][0-9]* from a checkpoint\)' "$T/all.log"

# ---- the uninterrupted reference run, compared bitwise
rc=0; wait "$refpid" || rc=$?; refpid=
check "reference run (mpirun -n $cpus, no Slurm) exits 0 (rc $rc)" test "$rc" -eq 0
check "trajectories bitwise equal to an uninterrupted run (store_diff.py)" \
  same_points "$T/ref.h5" "$T/store.h5"
# ls rows without the last two columns (wall seconds, rank)
"$DYNSWEEP" ls "$T/ref.h5" | awk '{ $(NF-1)=""; $NF=""; print }' >"$T/ls_a.txt"
awk '{ $(NF-1)=""; $NF=""; print }' "$T/ls_store.txt" >"$T/ls_b.txt"
check "summaries agree (status, steps, losses; not wall time, rank)" cmp -s "$T/ls_a.txt" "$T/ls_b.txt"

# ---- the mpirun template on a small sweep (one job; as root mpirun needs its flag)
cp "$DS_SRC/tests/sweeps/small.yaml" "$T/small.yaml"
rc=0
( cd "$T" && sbatch --parsable --ntasks "$cpus" --time 2 -J ds-template -o "$T/template.out" \
    --export="ALL,DS_SWEEP=small.yaml,DS_STORE=small.h5,DS_BIN=$DYNSWEEP,OMPI_ALLOW_RUN_AS_ROOT=1,OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1" \
    "$DS_SRC/slurm/dynsweep-mpirun.sbatch" ) >"$T/tjob" 2>&1 || rc=$?
check "sbatch slurm/dynsweep-mpirun.sbatch (rc $rc)" test "$rc" -eq 0
for _ in $(seq 90); do [ -z "$(squeue -h -n ds-template 2>/dev/null)" ] && break; sleep 1; done
check "template job: sweep complete" grep -q "sweep complete" "$T/template.out"
check "template job: found its own script for the follow-on" grep -qE "follow-on job [0-9]+" "$T/template.out"
check "template job: mpirun launched 2 ranks" grep -q 'dynsweep run with 2 ranks (mpirun)' "$T/template.out"
check "template job: store has every point" bash -c "'$DYNSWEEP' ls '$T/small.h5' | grep -qE '^[0-9]+ points: .* 0 pending'"
report
