#!/usr/bin/env bash
# bench/single.sh -- single-point training steps before / after issue 13's
# LIBXSMM products and blocks of samples, against PyTorch, in one run.
#
#   bench/single.sh [--out DIR] [--csv FILE]
#
# dynsweep-bench --compare DIR --single times every case of the grid (widths
# 16, 64, 256 x n = 256, 1024, 4096 x depth 2, 4 x linear / ReLU with biases;
# d_in = d_out = width) twice in one process, repetitions alternating: before
# (OpenBLAS for every product, no blocks: the old code, bit for bit) and after;
# process CPU time, the DGEMM reference measured at the start of the same
# process. bench/torch_ref.py steps then trains the same k steps from the same
# data and weights (float64, one thread, the same OpenBLAS kernel). The table:
# steps/s, % of DGEMM and the ratio to PyTorch before and after.
# ~3-4 min on a quiet 2-core machine. Uses build/ (DS_BUILD=... for another).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${DS_BUILD:-$ROOT/build}
OUT="" CSV=""
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$(realpath -m "$2"); shift ;;
    --csv) CSV=$(realpath -m "$2"); shift ;;
    -h|--help) sed -n '2,/^set /p' "$0" | grep '^#'; exit 0 ;;
    *) echo "bench/single.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/dynsweep-single.XXXX)
mkdir -p "$OUT"
[ -x "$BUILD/dynsweep-bench" ] || cmake --build "$BUILD" --target dynsweep-bench
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
cat /proc/loadavg > "$OUT/loadavg_start"
"$BUILD/dynsweep-bench" --compare "$OUT" --single
export OPENBLAS_CORETYPE=$(tail -n 1 "$OUT/env.csv" | cut -d, -f1)
BENCH_BUDGET=0.5 /usr/bin/python3 "$ROOT/bench/torch_ref.py" steps "$OUT"
cat /proc/loadavg > "$OUT/loadavg_end"
/usr/bin/python3 - "$OUT" "${CSV:-$OUT/single.csv}" <<'PY'
import csv, sys, os
d, out = sys.argv[1], sys.argv[2]
env = list(csv.DictReader(open(os.path.join(d, "env.csv"))))[0]
cases = {c["id"]: c for c in csv.DictReader(open(os.path.join(d, "cases.csv")))}
torch = {t["id"]: t for t in csv.DictReader(open(os.path.join(d, "torch.csv")))}
print("\nOpenBLAS kernel %s; DGEMM reference %.1f GFLOP/s (process CPU time); load %s -> %s" % (
    env["kernel"], float(env["dgemm_ref_gflops"]), open(os.path.join(d, "loadavg_start")).read().split()[0],
    open(os.path.join(d, "loadavg_end")).read().split()[0]))
print("steps/s from all repetitions' CPU time; %DG from the best repetition; ratio = dynsweep / PyTorch steps/s")
hdr = ("net", "depth", "width", "n", "before/s", "after/s", "speedup", "bef%DG", "aft%DG",
       "torch/s", "bef/T", "aft/T", "loss diff")
print("%-6s %5s %5s %5s %11s %11s %7s %7s %7s %10s %6s %6s %9s" % hdr)
rows = []
for i, c in cases.items():
    t = torch.get(i)
    b, a = float(c["b_steps_per_s"]), float(c["c_steps_per_s"])
    ts = float(t["t_steps_per_s"]) if t else float("nan")
    cl = float(c["c_loss_last"])
    diff = abs(float(t["t_loss_last"]) - cl) / abs(cl) if t else float("nan")
    r = (c["net"], int(c["depth"]), int(c["width"]), int(c["n"]), b, a, a / b,
         100 * float(c["b_frac_dgemm"]), 100 * float(c["c_frac_dgemm"]), ts, b / ts, a / ts, diff)
    rows.append(r)
    print("%-6s %5d %5d %5d %11.1f %11.1f %6.2fx %6.1f%% %6.1f%% %10.1f %5.2fx %5.2fx %9.1e" % r)
with open(out, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["net", "depth", "width", "n", "before_steps_per_s", "after_steps_per_s", "speedup",
                "before_pct_dgemm", "after_pct_dgemm", "torch_steps_per_s", "before_ratio",
                "after_ratio", "loss_rel_diff", "dgemm_ref_gflops", "kernel"])
    for r in rows:
        w.writerow(list(r) + [env["dgemm_ref_gflops"], env["kernel"]])
print("wrote %s" % out)
PY
