#!/usr/bin/env bash
# bench/teams.sh -- a whole point on a team of 2 ranks versus 1 rank
# (issue 4, "Teams"): one wide deep net (WIDTH x WIDTH hidden layer), layer
# singular values recorded every few steps (LAPACK dgesdd on a team of 1,
# ScaLAPACK pdgesvd on the 1 x 2 grid of a team of 2) and the Hessian top-k
# (Lanczos). Runs each team size REPS times, interleaved, and prints the wall
# time of the point (the summary's wall_s, as the worker measured it) and of
# the whole run. Training is replicated on every team member unless
# train.distributed is on (TRAIN_DIST=on; needs the distributed trainer).
#
#   bench/teams.sh [BUILD_DIR]     env: WIDTH (1024) STEPS (20) REPS (2) TRAIN_DIST ("")
#                                       EVERY (5: layer_sv records) HESS (10: Hessian every)
# MODE=train records only the loss (the replicated part alone); MODE=spectra
# sets STEPS=5 EVERY=1 HESS=1 (the diagnostics dominate).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
ds=$build/dynsweep
WIDTH=${WIDTH:-1024} STEPS=${STEPS:-20} REPS=${REPS:-2} TRAIN_DIST=${TRAIN_DIST:-}
EVERY=${EVERY:-5} HESS=${HESS:-10} MODE=${MODE:-full}
if [ "$MODE" = spectra ]; then STEPS=5 EVERY=1 HESS=1; fi
SERIES="[loss, layer_sv]" SPECTRA="hessian: {every: $HESS}"
if [ "$MODE" = train ]; then SERIES="[loss]" EVERY=$STEPS SPECTRA="catapult_factor: 2"; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mk() { # mk TEAM
  cat > "$T/t$1.yaml" <<YAML
name: teams_bench
seed: 3
model: {type: relu, width: $WIDTH, depth: 3, bias: true}
data: {kind: teacher, n_train: 256, n_test: 64, d_in: 64, d_out: 4, rank: 4, noise: 0.01}
loss: {type: mse, reduction: half_mean}
optimizer: {type: gd, lr: 0.01}
train: {steps: $STEPS, ranks_per_point: $1$( [ -n "$TRAIN_DIST" ] && echo ", distributed: $TRAIN_DIST")}
record:
  series: $SERIES
  every: $EVERY
  per_decade: 0
  top_k: 8
  spectra:
    $SPECTRA
    top_k: 4
    lanczos_iters: 20
YAML
}
mk 1
mk 2
echo "point ($MODE): relu, depth 3, width $WIDTH (W2 is ${WIDTH}x${WIDTH}), n_train 256, $STEPS GD steps;"
echo "series $SERIES every $EVERY steps; spectra: $SPECTRA (Lanczos 20)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-5s %12s %12s\n' team rep point_wall_s run_wall_s
declare -A sum
for r in $(seq 1 "$REPS"); do
  for t in 1 2; do
    rm -f "$T/o$t.h5"
    t0=$(date +%s.%N)
    mpirun --oversubscribe -n $((t + 1)) "$ds" run "$T/t$t.yaml" -o "$T/o$t.h5" -q
    t1=$(date +%s.%N)
    pw=$(/usr/bin/python3 -c "import h5py,sys; f=h5py.File(sys.argv[1],'r'); s=f['summary'][...]; assert s['status'][0]==1 and s['team_size'][0]==$t, s; print('%.2f' % s['wall_s'][0])" "$T/o$t.h5")
    rw=$(echo "$t1 - $t0" | bc)
    printf '%-6s %-5s %12s %12.2f\n' "$t" "$r" "$pw" "$rw"
    sum[$t]=$(echo "${sum[$t]:-0} + $pw" | bc)
  done
done
echo "mean point wall: team of 1 $(echo "scale=2; ${sum[1]} / $REPS" | bc) s, team of 2 $(echo "scale=2; ${sum[2]} / $REPS" | bc) s, ratio 1/2 = $(echo "scale=2; ${sum[1]} / ${sum[2]}" | bc)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
