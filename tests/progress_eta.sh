#!/usr/bin/env bash
# progress_eta.sh -- issue 24, item 6: the ETA comes from the plan's cost model
# (the probed seconds of every point, the points that run at once), corrected
# by the points that finish, so it is there from the first second and not
# 4-7x pessimistic early (the old one was the points finished per second,
# nothing before the first point and wildly long after it). Checked against
# the model itself, not the clock: the run's first published ETA, counted
# from the session's start, equals `plan`'s core-seconds over the 2 workers
# (+-35%: the start-up and the first publish), `status` shows it before any
# point has finished, the end-of-run line counts outcomes, and the store's
# own timing line is printed only with -v.
. "$(dirname "$0")/lib.sh"
unset DYNSWEEP_PROGRESS
sweep=$DS_SRC/sweeps/demo.yaml
core=$("$DYNSWEEP" plan "$sweep" --set train.steps=8000 | awk '/core-seconds/ { for (i = 1; i <= NF; i++) if ($i ~ /^\(/) { gsub(/\(/, "", $i); print $i } }')
check "plan gives the work in core-seconds ($core)" test -n "$core"
start_bg "$T/run.log" -n 3 "$DYNSWEEP" run "$sweep" --set train.steps=8000 -o "$T/e.h5" --publish-every 0.2
seen="" eta_first=""
for _ in $(seq 1 400); do
  bg_running || break
  if [ -e "$T/e.h5" ] && "$DYNSWEEP" status "$T/e.h5" >"$T/st" 2>/dev/null; then
    if grep -q '^speed:   no point finished yet this session; ETA ' "$T/st"; then seen=$(grep '^speed' "$T/st"); break; fi
    grep -q '^speed:   [0-9]' "$T/st" && break
  fi
  sleep 0.05
done
if [ "$HAVE_H5PY" = 1 ] && [ -e "$T/e.h5" ]; then
  eta_first=$("$PY" -c '
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    a = f.attrs
    e, s = float(a.get("eta_unix", 0)), float(a["session_start_unix"])
    print("%.3f" % (e - s) if e > 0 else "")' "$T/e.h5" 2>/dev/null || true)
fi
wait_bg
check "status shows an ETA before any point finished (${seen:-none seen})" test -n "$seen"
if [ "$HAVE_H5PY" = 1 ]; then
  check "the first ETA, from the session start, is plan's core-seconds / 2 workers: $eta_first s vs $core / 2 (+-35%)" \
    "$PY" -c "import sys; e, c = float('${eta_first:-nan}'), float('$core') / 2; sys.exit(0 if 0.65 * c <= e <= 1.35 * c else 1)"
fi
check "the run exits 0 (rc $RC)" test "$RC" -eq 0
check "the end-of-run line counts the outcomes" grep -qE 'finished 24 points in [0-9.]+ s: [0-9]+ converged, [0-9]+ unconverged, [0-9]+ catapult, [0-9]+ plateaus, [0-9]+ diverged, [0-9]+ failed of 24' "$T/run.log"
check "no store-timing line without -v" bash -c "! grep -q 'dynsweep: store: .* publishes' '$T/run.log'"
rc=$(code mpirun --oversubscribe -n 2 "$DYNSWEEP" run "$DS_SRC/tests/sweeps/small.yaml" -o "$T/v.h5" -v)
check "... with -v it is there (rc $rc)" grep -q 'dynsweep: store: .* publishes' "$T/err"
# a map gets an ETA too (pixels left at this session's pixels per second; a
# refined map's levels to come at the last growth): status shows it while it runs
start_bg "$T/map.log" -n 3 "$DYNSWEEP" run "$DS_SRC/sweeps/examples/tanh_map.yaml" --set 'map={tile: 16}' \
  --set train.steps=30000 -o "$T/m.h5" --publish-every 0.2
mseen=""
for _ in $(seq 1 600); do
  bg_running || break
  if [ -e "$T/m.h5" ] && "$DYNSWEEP" status "$T/m.h5" 2>/dev/null | grep -q '^speed: .*; ETA [0-9]'; then mseen=1; break; fi
  sleep 0.05
done
kill -USR1 "$SID" 2>/dev/null || true
wait_bg
check "a map run: status shows an ETA while it runs (then drained: exit $RC)" test -n "$mseen" -a "$RC" -eq 3
report
