#!/usr/bin/env bash
# bench/cnn_team.sh -- a CNN point on teams of ranks (issue 26, "Big CNNs run
# on teams"): the full-batch GD step (samples split over the members,
# gradient reduced and broadcast) and the NTK K = J J^T (rows of J per
# member, MPI_Alltoallv to parameter slices, summed DSYRKs) of seed 003's
# 5-layer CNN, on teams of 1, 2 and 4 ranks, in one run.
#
#   bench/cnn_team.sh [--repeats R] [--reps K] [--build DIR] [--teams "1 2 4"] [--case "C HW N"]...
#
# Each repeat runs build/dynsweep-bench-cnn-team (bench/cnn_team_bench.c:
# wall seconds of the slowest member, best of K after a warm-up) under
# `mpirun -n S` for every team size S in turn, so each speedup (team 1's
# seconds / team S's) is taken within one repeat; min / median / max over
# the R repeats are printed, and the ratio of the busiest member's CPU
# seconds of its own work (team 1's / team S's: how far the work divides).
# One OpenBLAS thread per rank; more ranks than
# cores are oversubscribed (--oversubscribe), and the load average at the
# start and the end is printed: on a shared machine the figures are only
# as good as the cores were free. Defaults: R = 3, K = 2, cases
# "32 16 64" and "64 16 128" (C channels, H = W, n samples), teams 1 2 4.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
R=3 K=2 BUILD=$ROOT/build TEAMS="1 2 4" CASES=()
while [ $# -gt 0 ]; do
  case $1 in
    --repeats) R=$2; shift 2 ;;
    --reps) K=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --teams) TEAMS=$2; shift 2 ;;
    --case) CASES+=("$2"); shift 2 ;;
    *) sed -n '2,19p' "$0"; exit 2 ;;
  esac
done
[ ${#CASES[@]} -gt 0 ] || CASES=("32 16 64" "64 16 128")
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "cores: $(getconf _NPROCESSORS_ONLN); load at the start $(cut -d' ' -f1-3 /proc/loadavg)"
OUT=$(mktemp -d /tmp/dynsweep-cnn-team.XXXX)
trap 'rm -rf "$OUT"' EXIT
for ((r = 0; r < R; r++)); do
  for c in "${!CASES[@]}"; do
    read -r C HW N <<<"${CASES[$c]}"
    for S in $TEAMS; do
      mpirun --oversubscribe -n "$S" "$BUILD/dynsweep-bench-cnn-team" --C "$C" --hw "$HW" --n "$N" \
        --reps "$K" >"$OUT/r$r-c$c-s$S.txt"
    done
  done
done
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$OUT" "$R" "${#CASES[@]}" "$TEAMS" <<'PY'
import re, statistics, sys
out, R, nc, teams = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [int(x) for x in sys.argv[4].split()]
def mmm(v):
    return "%7.4f %7.4f %7.4f" % (min(v), statistics.median(v), max(v))
print(f"wall seconds, min / median / max over {R} repeats; speedup = team 1 / team S in the same repeat")
print("%-34s %-5s %-23s %-23s %-23s %-23s %-23s %-23s" % ("case", "team", "step s", "step speedup", "ntk s",
      "ntk speedup", "step cpu/member ratio", "ntk cpu/member ratio"))
for c in range(nc):
    rows = {}
    for s in teams:
        rows[s] = []
        for r in range(R):
            t = open(f"{out}/r{r}-c{c}-s{s}.txt").read()
            m = re.search(r"team \d+: step ([\d.]+) s ntk ([\d.]+) s cpu/member step ([\d.]+) s "
                          r"ntk ([\d.]+) s \((.*?);", t)
            rows[s].append((float(m.group(1)), float(m.group(2)), m.group(5), float(m.group(3)),
                            float(m.group(4))))
    sums = {s: re.search(r"loss (\S+), trace K (\S+)\)", open(f"{out}/r0-c{c}-s{s}.txt").read()).groups()
            for s in teams}
    for s in teams:
        st = [x[0] for x in rows[s]]
        nt = [x[1] for x in rows[s]]
        sp = [rows[teams[0]][r][0] / rows[s][r][0] for r in range(R)]
        sn = [rows[teams[0]][r][1] / rows[s][r][1] for r in range(R)]
        cs = [rows[teams[0]][r][3] / rows[s][r][3] for r in range(R)]
        cn = [rows[teams[0]][r][4] / rows[s][r][4] for r in range(R)]
        print("%-34s %-5d %-23s %-23s %-23s %-23s %-23s %-23s" % (rows[s][0][2], s, mmm(st), mmm(sp), mmm(nt),
              mmm(sn), mmm(cs), mmm(cn)))
    print("  loss / trace K per team (the same computation): " +
          "; ".join(f"{s}: {sums[s][0]} / {sums[s][1]}" for s in teams))
PY
