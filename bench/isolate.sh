#!/usr/bin/env bash
# bench/isolate.sh -- what issue 23's isolation costs on sweeps with no bad
# point, in one run (farm-bench, the two commands alternating, ratio pair by
# pair; quote the median).
#
#   bench/isolate.sh [--runs N] [--old DIR]
#
# For each sweep: `mpirun -n 3 dynsweep run SWEEP -o FRESH --isolate always`
# (every point in a child process of its worker: what a run after a job
# death does) against `--isolate never` (in-process, what every ordinary run
# does). The sweeps: the demo (24 points of ~1-100 ms: the worst case, a fork
# and a pipe per point), the demo at 8000 steps, and tests/sweeps/teams.yaml
# (layer spectra, Hessian and NTK through ScaLAPACK in the child). With
# --old DIR (a build of the commit before issue 23, DIR/dynsweep), also the
# ordinary run (--isolate auto, no death before) against that binary: the
# cost of the change where nothing died, expected none.
# Uses build/ (DS_BUILD=... for another). ~3-5 min on a quiet 2-core machine.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${DS_BUILD:-$ROOT/build}
RUNS=7 OLD=""
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift ;;
    --old) OLD=$(realpath "$2"); shift ;;
    -h|--help) sed -n '2,/^set /p' "$0" | grep '^#'; exit 0 ;;
    *) echo "bench/isolate.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
command -v farm-bench >/dev/null || { echo "bench/isolate.sh: needs farm-bench (the tool library)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
unset DYNSWEEP_TEST_CRASH
W=$(mktemp -d /tmp/dynsweep-isolate.XXXX)
trap 'rm -rf "$W"' EXIT
D=$BUILD/dynsweep
run() { # BIN TAG SWEEP ARGS...: a fresh store each time
  local bin=$1 tag=$2 sweep=$3; shift 3
  echo "sh -c 'rm -rf $W/$tag.h5*; exec mpirun --oversubscribe -n 3 $bin run $sweep -o $W/$tag.h5 -q $*'"
}
bench() { # LABEL A B
  echo "== $1"
  eval "farm-bench -n $RUNS --timeout 900 --vs \"$3\" -- $2" 2>&1 | grep -E '^(A |B |A\/B )(wall|cpu)' || true
}
demo=$ROOT/sweeps/demo.yaml teams=$ROOT/tests/sweeps/teams.yaml
for spec in "demo|$demo|" "demo 8000 steps|$demo|--set train.steps=8000" "teams.yaml (spectra)|$teams|"; do
  IFS='|' read -r label sweep extra <<<"$spec"
  bench "$label: --isolate always (A) vs never (B)" \
    "$(run "$D" a "$sweep" --isolate always $extra)" "$(run "$D" b "$sweep" --isolate never $extra)"
done
if [ -n "$OLD" ]; then
  for spec in "demo|$demo|" "demo 8000 steps|$demo|--set train.steps=8000"; do
    IFS='|' read -r label sweep extra <<<"$spec"
    bench "$label: this build, an ordinary run (A) vs the build before issue 23 (B)" \
      "$(run "$D" a "$sweep" $extra)" "$(run "$OLD/dynsweep" b "$sweep" $extra)"
  done
fi
