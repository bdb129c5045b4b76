#!/usr/bin/env bash
# slurm_multinode.sh -- a sweep on a Slurm cluster of two nodes on this one
# machine (tools/slurm-cluster.sh --nodes 2: node1, node2, 4 CPUs declared
# each on 2 cores), issue 14:
# 1. srun --mpi=pmix reaches both nodes (TmpFS per node).
# 2. The same sweep (8 points; ranks_per_point [1, 2]) through both templates
#    at once, `dynsweep submit --nodes 2 --ntasks-per-node 2 --launcher
#    srun|mpirun --time 1`: job 1 is drained by hand after its first
#    finished point (both nodes busy), later jobs by their timer; each chain goes on. Checks per chain: ranks on both nodes (the store's rank_nodes),
#    the team of 2 on one node and the rows of both nodes' ranks, a drain
#    without a killed task and with points of both nodes checkpointed, the
#    chain completes, every point finished once, the trajectories bitwise
#    those of an uninterrupted `mpirun -n 4 dynsweep run` on the host.
# 3. Node loss: the same sweep with --min-nodes 1 --ntasks-per-node 4; once a
#    point has finished, node2's slurmd, slurmstepd and tasks are killed (-9).
#    The job ends (NODE_FAIL), the follow-on resumes on node1 alone, the
#    points finished before are kept (not run again), the store equals the
#    reference.
# Skips (passes) without the Slurm packages or root.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm_lib.sh"
slurm_need slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge
command -v h5dump >/dev/null || skip "h5dump (hdf5-tools) is not installed"
unset SLURMD_NODENAME OMPI_MCA_btl
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

refpid=
# held: follow-on jobs held by part 2; ms_queued JOB: JOB is pending,
# running or completing
declare -A held=()
ms_queued() { local q; q=$(squeue -h -o %i 2>/dev/null || true); grep -qx "$1" <<<"$q"; }
slurm_cleanup_hook() {
  [ -n "$refpid" ] && kill "$refpid" 2>/dev/null && wait "$refpid" 2>/dev/null
  [ ${#held[@]} -eq 0 ] || scontrol release "${held[@]}" 2>/dev/null || true
}
slurm_start 4 2
check "cluster: 2 nodes idle" test "$(sinfo -h -N -o '%N %T' | sort | tr '\n' ' ')" = "node1 idle node2 idle "
check "cluster env: Open MPI over TCP (shared-memory segments of two nodes on one host collide)" \
  test "${OMPI_MCA_btl:-}" = self,tcp
nodes=$(srun -N 2 -n 2 --mpi=pmix printenv SLURMD_NODENAME 2>"$T/pmix.err" | sort | tr '\n' ' ')
check "srun --mpi=pmix runs on both nodes ($nodes; TmpFS per node)" test "$nodes" = "node1 node2 "

# ---- the sweep: 8 points of ~1.5 CPU-seconds (twice that on a team of 2 over TCP)
slurm_sweep_yaml "$T/sweep.yaml" mntest 5 "loss, test_loss, grad_norm, layer_fro" "0.002, 0.01" 1500 \
  "  ranks_per_point: [1, 2]"
# ms_submit NAME STORE TIME ARGS...: dynsweep submit (job name NAME, time
# limit TIME minutes), the drain floor edited to 30 s: a job of one minute
# drains halfway through it
ms_submit() {
  local name=$1 store=$2 time=$3 rc=0; shift 3
  "$DYNSWEEP" submit "$T/sweep.yaml" -o "$store" -J "$name" --time "$time" --signal-time 30 \
    --run-option=--verbose --run-option=--checkpoint-every --run-option=3 "$@" --dry-run >"$store.submit" 2>&1 || rc=$?
  check "$name: dynsweep submit --dry-run $* (rc $rc)" test "$rc" -eq 0
  sed -i 's/^DS_MARGIN_FLOOR=.*/DS_MARGIN_FLOOR=30/' "$store.sbatch"
  job=$(sbatch --parsable "$store.sbatch" 2>&1) || true
  check "$name: sbatch ($job)" test "$job" -gt 0
}
# ms_rows STORE: "id team_size rank status steps" per summary row (none if
# the store is not there yet)
ms_rows() { "$DYNSWEEP" export "$1" --format csv 2>/dev/null | "$PY" -c '
import csv, sys
for r in csv.DictReader(sys.stdin):
    print(r["id"], r["team_size"], r["rank"], r["status"], r["steps"])' || true; }
t0=$(date +%s)
declare -A job1
for l in srun mpirun; do
  ms_submit "ds-mn-$l" "$T/$l.h5" 1 --nodes 2 --ntasks-per-node 2 --launcher "$l"
  job1[$l]=$job
done
# the uninterrupted reference on the host (one node: no SLURMD_NODENAME)
env -u SLURM_CONF -u OMPI_MCA_btl mpirun --oversubscribe -n 4 "$DYNSWEEP" run "$T/sweep.yaml" -o "$T/ref.h5" --quiet >"$T/ref.log" 2>&1 &
refpid=$!
# job 1 of each chain is drained by hand (`scancel --batch --signal=USR1`) once
# it has finished its first point, so that both teams (both nodes) are in a point
# whatever the machine's load; later jobs drain by their timer when the rest
# of the sweep outlasts them. A snapshot of each store when job 1 has drained
# (the points it handed back). The follow-on is held from the drain until the
# snapshot is taken: it starts as soon as job 1 ends and marks the points it
# hands out running again (~6-8 s after job 1's 'drained' line here), and a
# snapshot taken that late (CI of 7c0e8b3: the mpirun chain, polled after the
# srun one) saw only one of the two handed-back points pending. The follow-on
# is the one job 1 logged ('segment 1: follow-on job N').
for _ in $(seq 150); do
  for l in srun mpirun; do
    [ -e "$T/$l.drained.txt" ] && continue
    nd=$(grep -hcE '\] point [0-9]+ done ' "$T/$l.h5.slurm-${job1[$l]}.out" 2>/dev/null || true)
    # (after 1 point, not 2: a CI run with OPENBLAS_CORETYPE=Haswell on a
    # SkylakeX host failed 'stopped points on both nodes (ranks 2 )' for
    # mpirun, the follow-on held; the likely cause, not reproduced: rank 1's
    # team of 1 (4 points, faster than the team of 2 over TCP) had no point
    # left in flight when the drain arrived after 2 were done)
    if [ ! -e "$T/$l.usr1" ] && [ "${nd:-0}" -ge 1 ]; then
      nx=$(sed -n 's/.* segment 1: follow-on job \([0-9][0-9]*\)$/\1/p' "$T/$l.h5.slurm-${job1[$l]}.out")
      [ -n "$nx" ] && scontrol hold "$nx" && held[$l]=$nx
      echo "slurm_multinode: $l: job ${job1[$l]} drained by hand after $nd points; follow-on: ${held[$l]:-none logged or held}${held[$l]:+ held}"
      scancel --batch --signal=USR1 "${job1[$l]}" && touch "$T/$l.usr1"
    fi
    if grep -qs 'drained.*follow-on job [0-9]* resumes' "$T"/$l.h5.slurm-*.out &&
       ! ms_queued "${job1[$l]}"; then
      ms_rows "$T/$l.h5" >"$T/$l.drained.txt"
      [ -n "${held[$l]:-}" ] && scontrol release "${held[$l]}" && unset "held[$l]"
    fi
  done
  [ -e "$T/srun.drained.txt" ] && [ -e "$T/mpirun.drained.txt" ] && break
  [ -z "$(squeue -h -o %i)" ] && break
  sleep 1
done
[ ${#held[@]} -eq 0 ] || { echo "slurm_multinode: no snapshot, released ${held[*]}"; scontrol release "${held[@]}"; held=(); }
slurm_wait_chain ds-mn-srun "${DS_SLURM_WAIT:-400}" "$t0"
slurm_wait_chain ds-mn-mpirun "${DS_SLURM_WAIT:-400}" "$t0"
rc=0; wait "$refpid" || rc=$?; refpid=
check "reference run (mpirun -n 4 on the host) exits 0 (rc $rc)" test "$rc" -eq 0

# ms_check_chain NAME STORE: the checks of part 2 for one chain
ms_check_chain() {
  local n=$1 st=$2 log=$T/$1.log rn
  cat "$st".slurm-*.out >"$log" 2>/dev/null || true
  grep -h '^dynsweep-job:' "$log" || true
  rn=$(store_attr "$st" rank_nodes)
  check "$n: rank_nodes node1,node1,node2,node2 ($rn)" test "$rn" = node1,node1,node2,node2
  check "$n: store complete" test "$(store_attr "$st" run_state)" = complete
  ms_rows "$st" >"$st.rows"
  # teams of 2: leader 2 and rank 3, both node2 (never ranks 1-2 across nodes); teams of 1: rank 1, node1
  check "$n: team-of-2 rows on rank 2 (node2), team-of-1 rows on rank 1 (node1)" \
    test "$(awk '{print $2 ":" $3}' "$st.rows" | sort -u | tr '\n' ' ')" = "1:1 2:2 "
  check "$n: 8 points done" test "$(awk '$4 == "done"' "$st.rows" | wc -l)" -eq 8
  check "$n: more than one job, a drain handed over" grep -qE 'drained( in [0-9.]+ s)?, resumable; follow-on job [0-9]+ resumes' "$log"
  check "$n: no task killed or failed on any node" bash -c "! grep -E 'srun: error|exited on signal|MPI_ABORT|Segmentation' '$log'"
  # a point handed back by the drain is pending with the rank that ran it
  check "$n: job 1's drain stopped points on both nodes (ranks $(awk '$4 == "pending" && $3 > 0 {print $3}' "$T/$n.drained.txt" | sort -u | tr '\n' ' '))" \
    test "$(awk '$4 == "pending" && $3 > 0 {print $3}' "$T/$n.drained.txt" | sort -u | tr '\n' ' ')" = "1 2 "
  check "$n: a point resumed from a checkpoint" grep -qE 'resuming .* \([1-9][0-9]* from a checkpoint\)' "$log"
  grep -hoE '\] point [0-9]+ (done|diverged|failed) ' "$log" | awk '{print $3}' | sort -n | uniq -c >"$T/$n.once"
  check "$n: each of the 8 points finished once ($(wc -l <"$T/$n.once") points)" \
    test "$(wc -l <"$T/$n.once")" -eq 8 -a "$(awk '$1 > 1' "$T/$n.once" | wc -l)" -eq 0
  check "$n: trajectories bitwise those of the uninterrupted run" same_points "$T/ref.h5" "$st"
}
ms_check_chain srun "$T/srun.h5"
ms_check_chain mpirun "$T/mpirun.h5"
echo "slurm_multinode: both chains done after $(( $(date +%s) - t0 )) s"

# ---- 3. node loss: node2 killed while the job runs; the follow-on uses node1
t1=$(date +%s)
ms_submit ds-mn-loss "$T/loss.h5" 2 --nodes 2 --min-nodes 1 --ntasks-per-node 4 --launcher srun
check "loss: script asks for 1-2 nodes" grep -qx -- '#SBATCH --nodes=1-2' "$T/loss.h5.sbatch"
# kill node2 as soon as job 1 has finished a point (its --verbose log line)
done_re='\] point [0-9]+ (done|diverged|failed) '
for _ in $(seq 300); do
  grep -qsE "$done_re" "$T"/loss.h5.slurm-*.out && break
  sleep 0.5
done
running=$(squeue -h -n ds-mn-loss -t RUNNING -o '%i %N')
check "loss: the job runs on both nodes ($running)" test "${running#* }" = "node[1-2]"
d2=$(cat "$C/slurmd.node2.pid")
bash "$CLUSTER" kill-node "$C" node2
cat "$T"/loss.h5.slurm-*.out >"$T/loss.before"
before=$(grep -hoE "$done_re" "$T/loss.before" | awk '{print $3}' | sort -n | tr '\n' ' ')
check "loss: points finished before the kill ($before)" test -n "$before"
gone() { ! kill -0 "$1" 2>/dev/null || grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat"; } # or a zombie
for _ in $(seq 50); do gone "$d2" && break; sleep 0.1; done
check "loss: node2's slurmd ($d2) is gone" gone "$d2"
slurm_wait_chain ds-mn-loss "${DS_SLURM_WAIT:-300}" "$t1"
cat "$T"/loss.h5.slurm-*.out >"$T/loss.log" 2>/dev/null || true
grep -h '^dynsweep-job:' "$T/loss.log" || true
st2=$(sinfo -h -n node2 -o %T)
check "loss: Slurm has node2 down ($st2)" test "${st2%\*}" = down
check "loss: job 1 ended by the node failure" grep -q 'CANCELLED AT .* DUE TO NODE FAILURE' "$T/loss.log"
check "loss: a follow-on ran on node1 alone: 4 ranks" grep -q 'dynsweep run with 4 ranks (srun)' "$T/loss.log"
check "loss: ... and resumed the store" grep -qE 'resuming .*: [1-9][0-9]* of 8 points finished' "$T/loss.log"
check "loss: store complete" test "$(store_attr "$T/loss.h5" run_state)" = complete
rn=$(store_attr "$T/loss.h5" rank_nodes)
check "loss: rank_nodes of the last job: node1 only ($rn)" test "$rn" = node1,node1,node1,node1
ms_rows "$T/loss.h5" >"$T/loss.rows"
check "loss: 8 points done" test "$(awk '$4 == "done"' "$T/loss.rows" | wc -l)" -eq 8
grep -hoE "$done_re" "$T/loss.log" | awk '{print $3}' | sort -n | uniq -c >"$T/loss.once"
check "loss: every point finished once over all jobs (those finished before the kill not again)" \
  test "$(wc -l <"$T/loss.once")" -eq 8 -a "$(awk '$1 > 1' "$T/loss.once" | wc -l)" -eq 0
check "loss: trajectories bitwise those of the uninterrupted run" same_points "$T/ref.h5" "$T/loss.h5"
echo "slurm_multinode: node loss part took $(( $(date +%s) - t1 )) s"
report
