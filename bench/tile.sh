#!/usr/bin/env bash
# bench/tile.sh -- map tiles (src/nn/tile.c) against DGEMM and against the
# batched PyTorch peer (bench/torch_ref.py tile), in one run (issue 13).
#
#   bench/tile.sh [--points P] [--steps T] [--torch-steps S] [--repeats R] [--build DIR]
#
# Defaults: P = 256 points per tile, T = 1000 steps (the study's), S = 200
# steps on the PyTorch side (per point-step figures: torch's time is linear in
# the steps), R = 5. Each repeat runs dynsweep-bench-tile once (DGEMM 1024 and
# 2048 then the linear, relu and tanh tiles) and then torch_ref.py tile once
# (the same three tiles), so each ratio is taken within one repeat (pairwise)
# and the min / median / max over repeats are printed. Both sides: one
# thread, process CPU time. Needs build/dynsweep-bench-tile and /usr/bin/python3
# with python3-torch.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
P=256 T=1000 S=200 R=5 BUILD=$ROOT/build
while [ $# -gt 0 ]; do
  case $1 in
    --points) P=$2; shift 2 ;;
    --steps) T=$2; shift 2 ;;
    --torch-steps) S=$2; shift 2 ;;
    --repeats) R=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    *) sed -n '2,15p' "$0"; exit 2 ;;
  esac
done
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# One OpenBLAS kernel for the DGEMM reference and for torch: the user's
# OPENBLAS_CORETYPE if set, else the one dynsweep picks for this CPU.
if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
  OPENBLAS_CORETYPE=$("$BUILD/dynsweep" version 2>/dev/null | sed -n 's/.*best for this CPU: \([A-Za-z0-9]*\).*/\1/p')
  [ -n "$OPENBLAS_CORETYPE" ] && export OPENBLAS_CORETYPE || unset OPENBLAS_CORETYPE
fi
echo "OpenBLAS kernel for both sides: ${OPENBLAS_CORETYPE:-OpenBLAS default}"
OUT=$(mktemp -d /tmp/dynsweep-tile.XXXX)
trap 'rm -rf "$OUT"' EXIT
for ((r = 0; r < R; r++)); do
  "$BUILD/dynsweep-bench-tile" "$P" "$T" 1 > "$OUT/c$r.txt"
  /usr/bin/python3 "$ROOT/bench/torch_ref.py" tile --points "$P" --steps "$S" --repeats 1 > "$OUT/t$r.txt"
done
head -2 "$OUT/c0.txt"
head -1 "$OUT/t0.txt"
/usr/bin/python3 - "$OUT" "$R" <<'PY'
import re, statistics, sys
out, R = sys.argv[1], int(sys.argv[2])
rows = {}
for r in range(R):
    c = open(f"{out}/c{r}.txt").read()
    t = open(f"{out}/t{r}.txt").read()
    for act in ("linear", "relu", "tanh"):
        m = re.search(rf"^{act}\s+P (\d+) steps (\d+): ([\d.]+) trainings/s \(min time\).*?; ([\d.]+) us/point-step; "
                      rf"([\d.]+) GFLOP/s = ([\d.]+)% DGEMM", c, re.M)
        n = re.search(rf"^torch-tile {act}\s.*?, ([\d.]+) us/point-step", t, re.M)
        us, tus = float(m.group(4)), float(n.group(1))
        rows.setdefault(act, []).append((1e6 / us / int(m.group(2)), float(m.group(5)),
                                         float(m.group(6)), 1e6 / tus / int(m.group(2)), tus / us))
def mmm(v):
    return "%8.1f %8.1f %8.1f" % (min(v), statistics.median(v), max(v))
print("min / median / max over %d repeats (trainings of the C side's step count; torch's "
      "per point-step time scaled to it)" % R)
print("%-7s %-26s %-26s %-26s %-26s" % ("act", "trainings/s/core", "% of DGEMM",
                                        "torch batched trainings/s", "ratio to torch (pairwise)"))
for act, v in rows.items():
    print("%-7s %-26s %-26s %-26s %-26s" % (act, mmm([x[0] for x in v]), mmm([x[2] for x in v]),
                                            mmm([x[3] for x in v]), mmm([x[4] for x in v])))
PY
