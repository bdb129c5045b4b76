#!/usr/bin/env bash
# slurm_fractal.sh -- issue 13: the trainability-fractal driver
# (tools/repro_fractal.py --submit) runs each map of a zoom sequence as a job
# chain on a real (throw-away) Slurm cluster (tools/slurm-cluster.sh, one node
# of 2 CPUs) and waits for it before it chooses the next window. Checks: the
# dense map and the window ran as Slurm jobs (their logs), the maps and the
# table are those of the same driver under mpirun (outcome arrays equal pixel
# for pixel, the same windows, trained shares and dimensions: tiles are fixed
# by the sweep, not by the ranks); run again, the driver submits nothing (the
# stores are complete); a chain cancelled mid-map (scancel, a real signal to
# the job) makes the driver exit non-zero naming the store, its state and
# the job logs, and the next run of the same command finishes that map.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm_lib.sh"
slurm_need slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge
[ "$HAVE_H5PY" = 1 ] || skip "python3-h5py / python3-numpy are not installed"

drvpid=
slurm_cleanup_hook() { [ -n "$drvpid" ] && kill "$drvpid" 2>/dev/null && wait "$drvpid" 2>/dev/null; }
slurm_start 2

small=(--dense 17 --coarse 5 --levels 2 --windows 1 --steps 100 --dynsweep "$DYNSWEEP")
t0=$(date +%s)
rc=0
"$PY" "$DS_SRC/tools/repro_fractal.py" "$T/sl" "${small[@]}" --submit "--ntasks 2 --time 5" --poll 1 \
  >"$T/sl.txt" 2>&1 || rc=$?
cat "$T/sl.txt"
check "the driver under Slurm exits 0 (rc $rc, $(( $(date +%s) - t0 )) s)" test "$rc" = 0
for m in dense zoom1; do
  n=$(ls "$T/sl/$m.h5".slurm-*.out 2>/dev/null | wc -l)
  check "$m ran as a Slurm job ($n job log(s))" test "$n" -ge 1
  check "$m: its job saw the sweep complete" grep -q 'sweep complete' "$T/sl/$m.h5".slurm-*.out
  check "$m: store complete" test "$("$DYNSWEEP" status "$T/sl/$m.h5" --state)" = complete
done
check "the queue is empty afterwards" test -z "$(squeue -h -o %i)"

# the same driver under mpirun: the same maps, pixel for pixel
"$PY" "$DS_SRC/tools/repro_fractal.py" "$T/mp" "${small[@]}" --ranks 3 >"$T/mp.txt" 2>&1
check "the table is the same under Slurm and mpirun" diff "$T/sl/fractal.txt" "$T/mp/fractal.txt"
for m in dense zoom1; do
  same=$(PYTHONPATH="$DS_SRC/python" "$PY" -c "
import dynsweep, numpy as np
a = dynsweep.open('$T/sl/$m.h5').map(); b = dynsweep.open('$T/mp/$m.h5').map()
ok = all(np.array_equal(a['coords'][k], b['coords'][k]) for k in a['coords'])
ok = ok and np.array_equal(a['outcome'], b['outcome']) and np.array_equal(a['computed'], b['computed'])
print(int(ok), a['outcome'].size, int(a['computed'].sum()))")
  check "$m: outcomes and trained pixels equal under Slurm and mpirun (ok, pixels, trained: $same)" \
    test "${same%% *}" = 1
done

# again: complete stores are not submitted again
before=$(ls "$T"/sl/*.slurm-*.out | wc -l)
rc=0
"$PY" "$DS_SRC/tools/repro_fractal.py" "$T/sl" "${small[@]}" --submit "--ntasks 2 --time 5" --poll 1 \
  >"$T/sl2.txt" 2>&1 || rc=$?
after=$(ls "$T"/sl/*.slurm-*.out | wc -l)
check "run again: exit 0, no job submitted ($before -> $after job logs, rc $rc)" \
  test "$rc" = 0 -a "$before" = "$after"
check "run again: the same table" diff "$T/sl/fractal.txt" "$T/mp/fractal.txt"

# a chain cancelled mid-map: the driver says which store, its state and the logs
big=(--dense 65 --coarse 5 --levels 2 --windows 1 --steps 300 --dynsweep "$DYNSWEEP")
"$PY" "$DS_SRC/tools/repro_fractal.py" "$T/cx" "${big[@]}" --submit "--ntasks 2 --time 5" --poll 1 \
  >"$T/cx.txt" 2>&1 &
drvpid=$!
for _ in $(seq 120); do  # until the map's run has published points
  [ "$("$DYNSWEEP" status "$T/cx/dense.h5" --state 2>/dev/null)" = running ] &&
    "$DYNSWEEP" status "$T/cx/dense.h5" 2>/dev/null | grep -qE 'map: .* [1-9][0-9]* of 4225 known' && break
  sleep 1
done
scancel --name ds-fractal-dense
rc=0
wait "$drvpid" || rc=$?
drvpid=
cat "$T/cx.txt"
check "cancelled chain: the driver exits non-zero (rc $rc)" test "$rc" -ne 0
check "... naming the store, the chain and its state" \
  grep -qE "$T/cx/dense.h5: the job chain ds-fractal-dense ended with the store (drained|dead)" "$T/cx.txt"
check "... and the job log" grep -qE "job logs: $T/cx/dense.h5.slurm-[0-9]+.out" "$T/cx.txt"
check "... no window was started on the incomplete map" test ! -e "$T/cx/zoom1.h5"
st=$("$DYNSWEEP" status "$T/cx/dense.h5" --state)
check "the store is resumable ($st)" test "$st" = drained -o "$st" = dead
rc=0
"$PY" "$DS_SRC/tools/repro_fractal.py" "$T/cx" "${big[@]}" --windows 0 --submit "--ntasks 2 --time 5" \
  --poll 1 >"$T/cx2.txt" 2>&1 || rc=$?
check "the same command again finishes the map (rc $rc, $("$DYNSWEEP" status "$T/cx/dense.h5" --state))" \
  test "$rc" = 0 -a "$("$DYNSWEEP" status "$T/cx/dense.h5" --state)" = complete
report
