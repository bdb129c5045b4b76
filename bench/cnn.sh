#!/usr/bin/env bash
# bench/cnn.sh -- the GD step of CNNs (src/nn/cnn.c, conv.c) against DGEMM and
# against PyTorch float64 on one thread, in one run (issue 26).
#
#   bench/cnn.sh [--repeats R] [--reps K] [--build DIR] [--base BIN] [--csv FILE] [--case NAME]...
#
# Each repeat runs build/dynsweep-bench-cnn once (DGEMM at the start and the
# end, then every case: best of K timed steps, process CPU time) and then
# bench/cnn_torch_bench.py once (the same cases, steps and clock), so every
# ratio is taken within one repeat (pairwise); min / median / max over the R
# repeats are printed. % DGEMM is against the best DGEMM rate of the same
# dynsweep-bench-cnn process. --base BIN also runs another build's
# dynsweep-bench-cnn in each repeat (e.g. one built from the commit before a
# change: "before" figures in the same run). --csv FILE writes the medians
# in bench/results.csv's columns (bench/cnn_results.csv holds the committed
# run; bench/run.sh rewrites results.csv, so the CNN rows live apart).
# Defaults: R = 3, K = 2, all cases of bench/cnn_bench.c. Both sides:
# OPENBLAS_NUM_THREADS=1 and the same OPENBLAS_CORETYPE (the user's, else
# the one dynsweep picks for this CPU).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
R=3 K=2 BUILD=$ROOT/build BASE="" CSV="" CASES=()
while [ $# -gt 0 ]; do
  case $1 in
    --repeats) R=$2; shift 2 ;;
    --reps) K=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --base) BASE=$2; shift 2 ;;
    --csv) CSV=$2; shift 2 ;;
    --case) CASES+=(--case "$2"); shift 2 ;;
    *) sed -n '2,19p' "$0"; exit 2 ;;
  esac
done
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
  OPENBLAS_CORETYPE=$("$BUILD/dynsweep" version 2>/dev/null | sed -n 's/.*best for this CPU: \([A-Za-z0-9]*\).*/\1/p')
  [ -n "$OPENBLAS_CORETYPE" ] && export OPENBLAS_CORETYPE || unset OPENBLAS_CORETYPE
fi
echo "OpenBLAS kernel for both sides: ${OPENBLAS_CORETYPE:-OpenBLAS default}; load $(cut -d' ' -f1-3 /proc/loadavg)"
OUT=$(mktemp -d /tmp/dynsweep-cnn.XXXX)
trap 'rm -rf "$OUT"' EXIT
for ((r = 0; r < R; r++)); do
  "$BUILD/dynsweep-bench-cnn" --reps "$K" ${CASES[@]+"${CASES[@]}"} > "$OUT/c$r.txt"
  if [ -n "$BASE" ]; then "$BASE" --reps "$K" ${CASES[@]+"${CASES[@]}"} > "$OUT/b$r.txt"; fi
  /usr/bin/python3 "$ROOT/bench/cnn_torch_bench.py" --reps "$K" ${CASES[@]+"${CASES[@]}"} > "$OUT/t$r.txt"
done
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
head -1 "$OUT/t0.txt"
/usr/bin/python3 - "$OUT" "$R" "$CSV" "${OPENBLAS_CORETYPE:-default}" <<'PY'
import os, re, statistics, sys
out, R, csv, kern = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def side(path):
    txt = open(path).read()
    ref = max(float(x) for x in re.findall(r"n=\d+ ([\d.]+) GFLOP/s", txt))
    rows = {m.group(1): float(m.group(2)) for m in
            re.finditer(r"^(?:torch )?(cnn\S+)\s+step\s+[\d.]+ ms\s+([\d.]+) GFLOP/s", txt, re.M)}
    return ref, rows
reps = []
for r in range(R):
    c = side(f"{out}/c{r}.txt")
    t = side(f"{out}/t{r}.txt")
    b = side(f"{out}/b{r}.txt") if os.path.exists(f"{out}/b{r}.txt") else None
    reps.append((c, t, b))
names = list(reps[0][0][1])
def mmm(v):
    return "%6.2f %6.2f %6.2f" % (min(v), statistics.median(v), max(v))
has_b = reps[0][2] is not None
print(f"min / median / max over {R} repeats; DGEMM reference (best of n = 1024, 2048 in each "
      f"dynsweep process): {mmm([x[0][0] for x in reps])} GFLOP/s; torch.mm: "
      f"{mmm([x[1][0] for x in reps])}")
hdr = "%-24s %-21s %-21s %-21s %-21s" % ("case", "dynsweep GFLOP/s", "fraction of DGEMM",
                                        "torch GFLOP/s", "dynsweep / torch")
if has_b:
    hdr += " %-21s %-21s %-21s" % ("before GFLOP/s", "before frac DGEMM", "before / torch")
print(hdr)
rows = []
for n in names:
    g = [x[0][1][n] for x in reps]
    f = [x[0][1][n] / x[0][0] for x in reps]
    tg = [x[1][1][n] for x in reps]
    ra = [x[0][1][n] / x[1][1][n] for x in reps]
    line = "%-24s %-21s %-21s %-21s %-21s" % (n, mmm(g), mmm(f), mmm(tg), mmm(ra))
    med = statistics.median
    rows += [("cnn", "gflops", n, med(g), med(tg), med(ra), "", "", "GFLOP/s"),
             ("cnn", "frac_dgemm", n, med(f), "", "", ">=0.7 (5-layer C>=64)" if
              n.startswith("cnn5") and int(n.split("-")[1][1:]) >= 64 else "",
              ("yes" if med(f) >= 0.7 else "no") if n.startswith("cnn5") and
              int(n.split("-")[1][1:]) >= 64 else "", "fraction"),
             ("cnn", "ratio_torch", n, "", "", med(ra), ">=1", "yes" if med(ra) >= 1 else "no", "")]
    if has_b:
        bg = [x[2][1][n] for x in reps]
        bf = [x[2][1][n] / x[2][0] for x in reps]
        br = [x[2][1][n] / x[1][1][n] for x in reps]
        line += " %-21s %-21s %-21s" % (mmm(bg), mmm(bf), mmm(br))
        rows += [("cnn", "gflops_before", n, med(bg), med(tg), med(br), "", "", "GFLOP/s"),
                 ("cnn", "frac_dgemm_before", n, med(bf), "", "", "", "", "fraction")]
    print(line)
if csv:
    with open(csv, "w") as fh:
        fh.write("section,metric,case,dynsweep,torch,ratio,target,met,unit\n")
        fh.write(f"env,repeats,cnn.sh,{R},,,,,\n")
        fh.write(f"env,openblas_kernel,cnn.sh,{kern},,,,,\n")
        fh.write("env,dgemm_gflops,cnn.sh median,%.4g,%.4g,,,,GFLOP/s\n" % (
            statistics.median([x[0][0] for x in reps]), statistics.median([x[1][0] for x in reps])))
        for r in rows:
            fh.write(",".join(("%.4g" % v) if isinstance(v, float) else str(v) for v in r) + "\n")
PY
