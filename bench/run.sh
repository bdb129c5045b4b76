#!/usr/bin/env bash
# bench/run.sh -- dynsweep against a PyTorch float64 reference, in one run (issue 7).
#
#   bench/run.sh [--quick] [--csv FILE] [--out DIR] [--no-torch] [--store-only]
#
#   --quick     12 step cases, 180 small points, the demo without the PyTorch
#               side, 1000 empty points (~1 min on a quiet 2-core machine; the
#               full run ~4 min)
#   --csv FILE  where the figures go as CSV (default bench/results.csv)
#   --out DIR   keep the work files (stores, case CSVs, perf data) in DIR
#               (default: a fresh /tmp/dynsweep-bench.XXXX, removed at the end)
#   --no-torch  dynsweep side only
#   --store-only  only the scheduler and store figures: dynsweep -n 3 on the
#               empty points, small_points and the demo (no steps, no PyTorch,
#               no memory run; ~1 min)
#
# What it measures (docs/performance.md explains each figure):
#   1. training steps: dynsweep-bench --compare draws data and initial weights,
#      trains k GD steps and writes both to files; bench/torch_ref.py trains the
#      same k steps from the same start; steps/s of both, the ratio, the losses
#      after k steps (relative difference), GFLOP/s as a fraction of the DGEMM
#      rate measured in the same run;
#   2. whole sweeps: `mpirun -n 3 dynsweep run` on sweeps/demo.yaml and
#      bench/sweeps/small_points.yaml against `torch_ref.py sweep` (2 processes);
#   3. scheduler: bench/sweeps/empty_points.yaml (points that do no work) and
#      rank 0's CPU share while the workers train;
#   4. store: bytes on disk against the payload, and the wall time rank 0 spends
#      in the store (ds_store_* calls timed with perf uprobes on a private copy
#      of the binary when perf works; dynsweep's own "store:" log line; rank
#      0's CPU share as an upper bound when neither is there);
#   5. memory: peak resident set (VmHWM) of each worker on
#      bench/sweeps/mem_point.yaml against weights + data + workspace.
#
# Both sides run one thread (OPENBLAS_NUM_THREADS=1, OMP_NUM_THREADS=1,
# torch.set_num_threads(1)) on the same OpenBLAS kernel: the one dynsweep picks
# (ds_blas_ensure_fast_kernel) is exported as OPENBLAS_CORETYPE for everything
# after the first step. It installs nothing except, when python3-torch is
# missing and it runs as root, `apt-get install -y python3-torch`.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${DS_BUILD:-$ROOT/build-bench}
PY=/usr/bin/python3
QUICK=0 CSV=$ROOT/bench/results.csv OUT="" TORCH=1 NOTORCH_WHY="python3-torch is not installed" STORE_ONLY=0
while [ $# -gt 0 ]; do
  case $1 in
    --quick) QUICK=1 ;;
    --csv) CSV=$(realpath -m "$2"); shift ;;
    --out) OUT=$(realpath -m "$2"); shift ;;
    --no-torch) TORCH=0 NOTORCH_WHY="skipped (--no-torch)" ;;
    --store-only) STORE_ONLY=1 TORCH=0 NOTORCH_WHY="skipped (--store-only)" ;;
    -h|--help) sed -n '2,/^set /p' "$0" | grep '^#'; exit 0 ;;
    *) echo "bench/run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
KEEP=1
if [ -z "$OUT" ]; then OUT=$(mktemp -d /tmp/dynsweep-bench.XXXX); KEEP=0; fi
mkdir -p "$OUT"
say() { printf '\n== %s\n' "$*"; }

export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
MPIFLAGS="--oversubscribe"
[ "$(id -u)" -eq 0 ] && MPIFLAGS="$MPIFLAGS --allow-run-as-root"

# ---- build (nothing is installed) --------------------------------------------
if [ ! -x "$BUILD/dynsweep" ] || [ ! -x "$BUILD/dynsweep-bench" ] || [ -n "${BENCH_REBUILD:-}" ]; then
  say "building dynsweep and dynsweep-bench in $BUILD"
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD" -j "$(nproc)" --target dynsweep dynsweep-bench 2>&1 | grep -E 'error|warning' || true
fi
[ -x "$BUILD/dynsweep" ] && [ -x "$BUILD/dynsweep-bench" ] || { echo "bench/run.sh: build failed" >&2; exit 1; }
# a private copy: perf uprobes attach to this inode only, and a rebuild of
# $BUILD by someone else during the run changes nothing here
mkdir -p "$OUT/bin"
cp "$BUILD/dynsweep" "$BUILD/dynsweep-bench" "$OUT/bin/"
DS=$OUT/bin/dynsweep

# ---- the PyTorch reference -----------------------------------------------------
if [ $TORCH -eq 1 ] && ! $PY -c 'import torch' 2>/dev/null; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    say "python3-torch is missing: installing it (apt-get install -y python3-torch)"
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq python3-torch >/dev/null \
      || echo "bench/run.sh: apt-get install python3-torch failed" >&2
  fi
  if ! $PY -c 'import torch' 2>/dev/null; then
    echo "bench/run.sh: *** the PyTorch reference is MISSING (python3-torch is not installed;" >&2
    echo "bench/run.sh: *** as root: apt-get install python3-torch). Only the dynsweep side is measured." >&2
    TORCH=0
  fi
fi
[ $TORCH -eq 1 ] && echo available > "$OUT/torch_available" || echo "$NOTORCH_WHY" > "$OUT/torch_available"
cat /proc/loadavg > "$OUT/loadavg_start"

# ---- 1. training steps -----------------------------------------------------------
if [ $STORE_ONLY -eq 0 ]; then
say "1. training steps: dynsweep (C)"
mkdir -p "$OUT/steps"
BQ=""; [ $QUICK -eq 1 ] && BQ="--quick"
"$OUT/bin/dynsweep-bench" --compare "$OUT/steps" $BQ
KERNEL=$(tail -n 1 "$OUT/steps/env.csv" | cut -d, -f1)
export OPENBLAS_CORETYPE=$KERNEL   # every process from here on: the same kernel
echo "OpenBLAS kernel for both sides: $KERNEL"
if [ $TORCH -eq 1 ]; then
  say "1. training steps: PyTorch"
  $PY "$ROOT/bench/torch_ref.py" info "$OUT/torch_info.json"
  BENCH_BUDGET=$([ $QUICK -eq 1 ] && echo 0.1 || echo 0.3) $PY "$ROOT/bench/torch_ref.py" steps "$OUT/steps"
fi
rm -f "$OUT"/steps/case_*.bin
fi

# ---- perf uprobes on the store calls of rank 0 (store write time) -------------
# entry and return of every ds_store_* call the scheduler makes; report.py
# adds up the outermost call durations per thread.
STORE_FNS="ds_store_create ds_store_write_point ds_store_write_row ds_store_write_ckpt ds_store_sync ds_store_publish ds_store_finish ds_store_close"
PROBES=0
cleanup() {
  if [ $PROBES -eq 1 ]; then perf probe -q -d 'dsbench:*' >/dev/null 2>&1 || true; fi
  if [ $KEEP -eq 0 ]; then rm -rf "$OUT"; fi
}
trap cleanup EXIT
trap 'exit 143' INT TERM
if command -v perf >/dev/null && [ "$(id -u)" -eq 0 ] && [ -z "${BENCH_NO_PERF:-}" ]; then
  perf probe -q -d 'dsbench:*' >/dev/null 2>&1 || true
  for fn in $STORE_FNS; do
    nm "$DS" 2>/dev/null | grep " T $fn\$" >/dev/null || continue  # not -q: pipefail
    perf probe -q -x "$DS" -a "dsbench:e_$fn=$fn" -a "dsbench:r_$fn=$fn%return" >/dev/null 2>&1 && PROBES=1
  done
fi
[ $PROBES -eq 1 ] || echo "(perf uprobes unavailable: the store write time comes from dynsweep's own 'store:' log line, or rank 0's CPU share as an upper bound)"

# run_ds NAME SWEEP: mpirun -n 3 dynsweep run, under procwatch (and perf)
run_ds() {
  local name=$1 sweep=$2 st=$OUT/$1.h5
  rm -f "$st"
  local cmd=(mpirun $MPIFLAGS -n 3 "$DS" run "$sweep" -o "$st" -v) # -v: the store-timing line report.py reads
  if [ $PROBES -eq 1 ]; then
    cmd=(perf record -q -o "$OUT/$name.perf" -e 'dsbench:*' -a -- "${cmd[@]}")
  fi
  $PY "$ROOT/bench/procwatch.py" "$OUT/$name.proc.json" -- "${cmd[@]}" 2> "$OUT/$name.log" \
    || { tail -5 "$OUT/$name.log" >&2; echo "bench/run.sh: dynsweep run $name failed" >&2; exit 1; }
  grep 'finished' "$OUT/$name.log" | sed 's/^/  /' || true
  if [ $PROBES -eq 1 ]; then perf script -i "$OUT/$name.perf" -F tid,time,event > "$OUT/$name.probes" 2>/dev/null || true; fi
}

# ---- 2. whole sweeps ----------------------------------------------------------
SMALL=$ROOT/bench/sweeps/small_points.yaml
if [ $QUICK -eq 1 ]; then  # 180 of the 360 points
  sed 's/replicas: 2/replicas: 1/' "$SMALL" > "$OUT/small_points.yaml"
  SMALL=$OUT/small_points.yaml
fi
SWEEPS="small_points:$SMALL demo:$ROOT/sweeps/demo.yaml"
for s in $SWEEPS; do
  name=${s%%:*} file=${s#*:}
  say "2. whole sweep $name: dynsweep, mpirun -n 3"
  run_ds "$name" "$file"
  if [ $TORCH -eq 1 ] && { [ $QUICK -eq 0 ] || [ "$name" = small_points ]; }; then
    say "2. whole sweep $name: PyTorch, 2 processes"
    t0=$(date +%s.%N)
    $PY "$ROOT/bench/torch_ref.py" sweep "$file" "$OUT/$name.torch.h5" --procs 2
    $PY -c "print($(date +%s.%N) - $t0)" > "$OUT/$name.torch.wall"
  fi
done

# ---- 3. scheduler: points that do no work --------------------------------------
say "3. scheduler: empty points"
EMPTY=$ROOT/bench/sweeps/empty_points.yaml
if [ $QUICK -eq 1 ]; then
  sed 's/num: 4000/num: 1000/' "$EMPTY" > "$OUT/empty_points.yaml"
  EMPTY=$OUT/empty_points.yaml
fi
run_ds empty "$EMPTY"

# ---- 5. memory -------------------------------------------------------------------
if [ $STORE_ONLY -eq 0 ]; then
  say "5. memory: a width-1024 point"
  run_ds mem "$ROOT/bench/sweeps/mem_point.yaml"
fi

# ---- the table and the CSV --------------------------------------------------------
say "results"
$PY "$ROOT/bench/report.py" "$OUT" --csv "$CSV" --root "$ROOT" $([ $QUICK -eq 1 ] && echo --quick)
[ $KEEP -eq 1 ] && echo "work files kept in $OUT"
exit 0
