#!/usr/bin/env bash
# sched_stats.sh -- rank 0's scheduler record (src/sched/dispatch.c): with
# DYNSWEEP_SCHED_STATS set, a run appends one JSON line whose counts match the
# run and whose figures are sane (no timing is asserted); --verbose prints the
# "scheduler:" line; unset, no file appears.
. "$(dirname "$0")/lib.sh"
small=$DS_SRC/tests/sweeps/small.yaml
mpi="mpirun --oversubscribe"
unset DYNSWEEP_SCHED_STATS
$mpi -n 3 "$DYNSWEEP" run "$small" -o "$T/a.h5" -q
check "unset: no record" test ! -e "$T/stats.json"
DYNSWEEP_SCHED_STATS=$T/stats.json $mpi -x DYNSWEEP_SCHED_STATS -n 3 "$DYNSWEEP" run "$small" \
  -o "$T/b.h5" --verbose 2>"$T/b.err"
check "--verbose: the scheduler line" grep -qE 'scheduler: [0-9]+ assignments.*median .*p99 .*VmHWM [0-9]+ kB' "$T/b.err"
check "the record: one JSON line, 32 results, 34 assignments (32 points + 2 stops), sane figures" \
  /usr/bin/python3 - "$T/stats.json" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
r = json.loads(lines[0])
assert r["workers"] == 2 and r["points"] == 32 and r["results"] == 32, r
assert r["assignments"] == 34, r
assert 0 < r["service_median_us"] <= r["service_p99_us"] <= 1.2 * r["service_max_us"] + 1, r
assert sum(n for _, n in r["service_hist_us"]) == r["assignments"], r
assert r["traj_bytes"] > 0 and r["vm_hwm_kb"] > 1000 and r["span_s"] > 0, r
PY
report
