#!/bin/bash
# sched_scale.sh -- rank 0 at scale (issue 14; docs/performance.md, "Rank 0 at
# scale"). Runs build/dynsweep-sched-bench (the real program; bench/sched_wrap.c
# says what its benchmark-only env vars change on the workers' side) and
# prints one line of figures per run: rank 0's scheduler record
# (DYNSWEEP_SCHED_STATS, src/sched/dispatch.c), the virtual workers' waits
# (bench/sched_lat.py) and the load average when the run ended.
#
#   bench/sched_scale.sh real RANKS SWEEP POINTS [DURATIONS SCALE]
#       RANKS real MPI ranks (oversubscribed); with DURATIONS each point
#       trains for real, then sleeps to its recorded duration x SCALE
#   bench/sched_scale.sh virt RANKS K SWEEP POINTS DURATIONS SCALE
#       RANKS-1 worker ranks each playing K virtual workers
#   bench/sched_scale.sh all        the runs of docs/performance.md
#   bench/sched_scale.sh sim        its projection to 10^4 workers (bench/sched_sim.py)
#
# SWEEP is a file of bench/sweeps/ (its grid.lr num is set to POINTS).
# Env: BUILD (build dir, default build), OUT (work dir, default /tmp/sched_scale),
# RUN_ARGS (more `dynsweep run` options, e.g. "--publish-every 1e6"), PREFETCH
# (virt: DS_BENCH_PREFETCH, the sub-scheduler prototype of bench/sched_wrap.c).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$here/../build}
OUT=${OUT:-/tmp/sched_scale}
bin=$BUILD/dynsweep-sched-bench
mkdir -p "$OUT"
MPI=(mpirun --allow-run-as-root --oversubscribe)

sweep_with() { # SWEEP POINTS -> path of a copy with POINTS points
  local y="$OUT/$(basename "$1" .yaml)_$2.yaml"
  sed -E "s/^(  lr: \{start: [^,]+, stop: [^,]+, )num: [0-9]+/\1num: $2/" "$here/sweeps/$1" >"$y"
  grep -q "num: $2," "$y" || { echo "sched_scale.sh: cannot set the points of $1" >&2; exit 2; }
  echo "$y"
}

run() { # label ranks K sweep points durations scale
  local label=$1 ranks=$2 k=$3 y; y=$(sweep_with "$4" "$5")
  local tag="$OUT/$label" envs=(-x DYNSWEEP_SCHED_STATS="$OUT/$label.json")
  rm -f "$OUT/$label".* "$OUT/$label.h5"*
  [ -n "$6" ] && envs+=(-x DS_BENCH_DURATIONS="$6" -x DS_BENCH_DURATION_SCALE="$7")
  [ "$k" -gt 0 ] &&
    envs+=(-x DS_BENCH_VWORKERS="$k" -x DS_BENCH_OUT="$tag.vw" -x DS_BENCH_PREFETCH="${PREFETCH:-0}")
  local t0=$SECONDS
  "${MPI[@]}" "${envs[@]}" -n "$ranks" "$bin" run "$y" -o "$tag.h5" ${RUN_ARGS:-} >"$tag.log" 2>&1 ||
    { echo "$label: run failed (exit $?), see $tag.log" >&2; tail -5 "$tag.log" >&2; return 1; }
  echo "== $label: ranks $ranks vworkers/rank $k sweep $4 points $5 durations ${6:+$(basename "$6") x $7}" \
       "wall $((SECONDS - t0)) s; load $(cut -d' ' -f1-3 /proc/loadavg)"
  grep -h "store:" "$tag.log" || true
  cat "$OUT/$label.json"
  [ "$k" -gt 0 ] && /usr/bin/python3 "$here/sched_lat.py" "$tag.vw"
  rm -f "$tag.h5" "$tag.h5".* "$tag.vw".*.lat
}

dur=$here/sweeps/demo_wall_s.txt # 24 points of sweeps/demo.yaml, mean 0.625 s
case "${1:-}" in
  real) run "real_$2_$(basename "$3" .yaml)_$4${5:+_dur}" "$2" 0 "$3" "$4" "${5:-}" "${6:-1}" ;;
  virt) run "virt_$2x$3${PREFETCH:+p$PREFETCH}_$(basename "$4" .yaml)_$5" "$2" "$3" "$4" "$5" "$6" "$7" ;;
  all) # the runs of docs/performance.md, "Rank 0 at scale", one at a time
    for n in 32 64 128 256; do run "real_${n}_empty" $n 0 empty_points.yaml 20000 "" 1; done
    for n in 32 128 256; do run "real_${n}_1s" $n 0 empty_points.yaml $((n * 12)) "$dur" 1.6; done
    for p in 10000 100000; do run "real_3_empty_$p" 3 0 empty_points.yaml $p "" 1; done
    run real_3_long 3 0 long_series.yaml 200 "" 1
    run virt_long 3 8 long_series.yaml 200 "$dur" 0.016
    for k in 500 1500 5000; do run "virt_2x${k}_1s" 3 $k empty_points.yaml $((k * 40)) "$dur" 1.6; done
    PREFETCH=3000 run virt_2x1500_1s_sub 3 1500 empty_points.yaml 60000 "$dur" 1.6
    PREFETCH=10000 run virt_2x5000_1s_sub 3 5000 empty_points.yaml 200000 "$dur" 1.6
    RUN_ARGS="--publish-every 1e6" run virt_2x5000_1s_nopub 3 5000 empty_points.yaml 200000 "$dur" 1.6
    ;;
  sim) # the projection of docs/performance.md (bench/sched_sim.py; ~2 min)
    S=(/usr/bin/python3 "$here/sched_sim.py" --service "$here/sched_service_10k.json"
       --durations "$dur" --scale 1.6 --workers 10000)
    "${S[@]}" --points 300000
    "${S[@]}" --points 300000 --no-commit-stall | tail -1
    "${S[@]}" --points 300000 --service-mult 3 | tail -1
    "${S[@]}" --points 2000000 --publish-s 0.5 | tail -1
    "${S[@]}" --points 4000000 --publish-s 2 | tail -1
    "${S[@]}" --points 300000 --subsched 100 --prefetch 512 --publish-s 2 | tail -1
    ;;
  *) sed -n '2,/^set -e/p' "$0" | sed '$d'; exit 2 ;;
esac
