#!/usr/bin/env bash
# bench/map_rank0.sh -- rank 0 of a map sweep alone (issue 13: "Rank 0 must
# sustain at least 10^5 points per second in tiles"). Workers run with the
# benchmark knob DYNSWEEP_BENCH_NOWORK=1: no training, a record made from the
# pixel's index, so what is timed is rank 0 handing out tiles, receiving the
# records, journaling them and keeping its outcome bytes (and the final
# publish, timed apart by the store's own figures). Prints pixels/s of the
# serving loop for each tile size, with the store's bytes per pixel.
#
#   bench/map_rank0.sh [BUILD_DIR]      env: SIDE (1024: SIDE x SIDE pixels)
#                                            RANKS (3) TILES ("64 256 1024 4096")
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
SIDE=${SIDE:-1024} RANKS=${RANKS:-3} TILES=${TILES:-64 256 1024 4096}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "map ${SIDE} x ${SIDE} ($((SIDE * SIDE)) pixels), $RANKS ranks (1 scheduler), load $(cut -d' ' -f1 /proc/loadavg)"
printf '%8s %14s %12s %12s %10s\n' tile "serving px/s" "rank0 CPU s" "run wall s" "bytes/px"
for tile in $TILES; do
  rm -f "$T/m.h5"*
  t0=$(date +%s.%N)
  DYNSWEEP_BENCH_NOWORK=1 mpirun --oversubscribe -n "$RANKS" -x DYNSWEEP_BENCH_NOWORK \
    "$build/dynsweep" run "$here/../sweeps/examples/tanh_map.yaml" -o "$T/m.h5" \
    --set "map.tile=$tile" \
    --set "grid.optimizer.lr_in={start: 1, stop: 100000, num: $SIDE, spacing: log}" \
    --set "grid.optimizer.lr_out={start: 1, stop: 10000, num: $SIDE, spacing: log}" > "$T/log" 2>&1
  t1=$(date +%s.%N)
  line=$(grep 'finished:' "$T/log")
  rate=$(sed -n 's/.*(\([0-9.e+]*\) px\/s; rank 0 CPU \([0-9.]*\) s).*/\1/p' <<<"$line")
  cpu=$(sed -n 's/.*rank 0 CPU \([0-9.]*\) s.*/\1/p' <<<"$line")
  size=$(stat -c %s "$T/m.h5")
  printf '%8s %14s %12s %12.2f %10.2f\n' "$tile" "$rate" "$cpu" "$(echo "$t1 - $t0" | bc)" \
    "$(echo "$size / ($SIDE * $SIDE)" | bc -l)"
done
