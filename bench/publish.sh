#!/usr/bin/env bash
# bench/publish.sh -- what one publish costs as the store grows (issue 14).
#
#   bench/publish.sh [--big] [--real] [--sizes "MB MB ..."] [--repeats N] [--dir DIR]
#
#   --big        also the 10 GB store (needs ~25 GB free on DIR's file system
#                and ~7 minutes on a 2-core VM; a benchmark, not for CI)
#   --sizes      store sizes in MB (default "100 1000", with --big "100 1000 10000")
#   --repeats N  measured publishes per store (default 5)
#   --formats F  store formats to measure (default "4 5": format 4, the one-file
#                store whose publish copies it -- main's publish, unchanged --
#                and format 5, DYNSWEEP_STORE_SEGMENTS=1: segment files + VDS)
#   --points "N ..."  instead of the sizes: format-5 stores of N points with
#                small trajectories (960 B a point, where the summary and index
#                are most of the top file), each measured twice in one run:
#                "top" = DYNSWEEP_STORE_BLOCKS=0 (the format-5 layout before the
#                row blocks: /summary and /series/index in the top file, copied
#                at every publish) and "blocks" (today's format 5: row blocks
#                in STORE.seg/); each measured publish finishes --per points
#   --per N      points finished by each measured publish of --points (300)
#   --dir DIR    where the stores are built (default a fresh /tmp/ds-publish.XXXX;
#                every store is removed as soon as it is measured)
#   --real       also the same with the real `mpirun -n 3 dynsweep run` (slower:
#                ~2.5 min per GB on 2 cores): a sweep of 5,000-step points
#                recording 6 series every step (1.72 MB a point) run to the
#                size, then the sweep with one more grid value run on the same
#                store (extend: one publish of the grid, one at the session's
#                start, one for the new point); its "store:" line and the peak
#                extra disk sampled every 2 ms during that second run
#
# For each size, bench/publish_bench.c (compiled here against the build's
# libds_store.a, the real store code) creates a store, fills it with points
# whose trajectories are 6 series recorded every step (1.8 MB a point) up to
# the size, then journals ONE more point and times ds_store_publish(s, 1), N
# times. A thread samples every ~1 ms the allocated bytes of STORE.tmp, STORE
# and STORE.journal: "peak extra" is the most the publish added to them. The
# table also gives what the default policy (publish when >= max(2 s,
# 100 x the last publish's cost) has passed; src/store/publish.c) makes of
# that cost: the interval between publishes (how stale readers' view gets)
# and the share of the run spent publishing.
#
# The machine is shared: the script prints `uptime` with the figures; compare
# the sizes of one run with each other, not absolute times across runs.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${DS_BUILD:-$ROOT/build}
SIZES="" BIG=0 REPEATS=5 DIR="" REAL=0 FORMATS="4 5" POINTS="" PER=300
while [ $# -gt 0 ]; do
  case $1 in
    --big) BIG=1 ;;
    --sizes) SIZES=$2; shift ;;
    --repeats) REPEATS=$2; shift ;;
    --dir) DIR=$2; shift ;;
    --real) REAL=1 ;;
    --formats) FORMATS=$2; shift ;;
    --points) POINTS=$2; shift ;;
    --per) PER=$2; shift ;;
    -h|--help) sed -n '2,/^set /p' "$0" | grep '^#'; exit 0 ;;
    *) echo "bench/publish.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$SIZES" ] || { SIZES="100 1000"; [ $BIG -eq 1 ] && SIZES="$SIZES 10000"; }
KEEP=1
if [ -z "$DIR" ]; then DIR=$(mktemp -d /tmp/ds-publish.XXXX); KEEP=0; fi
mkdir -p "$DIR"
cleanup() { rm -rf "$DIR"/s*.h5 "$DIR"/s*.h5.tmp "$DIR"/s*.h5.journal "$DIR"/s*.h5.seg "$DIR"/r*.h5*; [ $KEEP -eq 1 ] || rm -rf "$DIR"; }
trap cleanup EXIT

if [ ! -f "$BUILD/libds_store.a" ] || [ ! -f "$BUILD/libds_util.a" ]; then
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD" -j 2 --target ds_store ds_util >/dev/null
fi
BIN=$DIR/publish_bench
mpicc -O2 -Wall -I"$ROOT/include" $(pkg-config --cflags hdf5-openmpi) "$ROOT/bench/publish_bench.c" \
  "$BUILD/libds_store.a" "$BUILD/libds_util.a" $(pkg-config --libs hdf5-openmpi) -lz -lpthread -lm -o "$BIN"

echo "== bench/publish.sh: $(date -u +%FT%TZ), $(uname -n), $(nproc) cores"
echo "   file system of $DIR: $(findmnt -n -o FSTYPE -T "$DIR"), $(df -h --output=avail "$DIR" | tail -1 | tr -d ' ') free"
echo "   uptime before: $(uptime)"
RES=$DIR/results.tsv
: > "$RES"
if [ -n "$POINTS" ]; then
  for n in $POINTS; do
    for lay in top blocks; do
      rm -rf "$DIR/p.h5" "$DIR/p.h5.seg" "$DIR/p.h5.journal"
      echo "   -- $n points, format 5 $lay (uptime: $(uptime | sed 's/.*load/load/'))"
      blk=""; [ $lay = top ] && blk=0
      t0=$(date +%s)
      DYNSWEEP_STORE_SEGMENTS=1 DYNSWEEP_STORE_BLOCKS=$blk "$BIN" --points "$n" "$DIR/p.h5" "$REPEATS" "$PER" |
        sed "s/^M/M\t$lay\t$n/" | tee -a "$RES" | sed 's/^/      /'
      echo "      (build + measure: $(( $(date +%s) - t0 )) s)"
      rm -rf "$DIR/p.h5" "$DIR/p.h5.tmp" "$DIR/p.h5.journal" "$DIR/p.h5.seg"
    done
  done
  echo "   uptime after: $(uptime)"
  /usr/bin/python3 - "$RES" <<'EOF'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.startswith("M\t")]
by = {}
for r in rows:
    by.setdefault((int(r[2]), r[1]), []).append([float(x) for x in r[3:]])
print()
print("points | layout | publishes | publish s median (min-max) | copy / apply / fsync+rename s (median) | "
      "peak extra MB median (min-max) | top file MB | files in STORE.seg/")
for (n, lay) in sorted(by, key=lambda k: (k[0], k[1] != "top")):
    v = by[(n, lay)]
    ts = [x[1] for x in v]
    pk = [x[5] / 1e6 for x in v]
    cp, ap, sy = (statistics.median(x[i] for x in v) for i in (2, 3, 4))
    print("%7d | %6s | %9d | %.3f (%.3f-%.3f) | %.3f / %.3f / %.3f | %.1f (%.1f-%.1f) | %.2f | %s"
          % (n, lay, len(v), statistics.median(ts), min(ts), max(ts), cp, ap, sy, statistics.median(pk),
             min(pk), max(pk), statistics.median(x[11] for x in v) / 1e6,
             "-".join(sorted({"%d" % x[10] for x in v}))))
EOF
  exit 0
fi
for mb in $SIZES; do
  need=$(( mb * 26 / 10 + 500 )) # store + fill journal + the publish's copy, MB
  avail=$(( $(df --output=avail -k "$DIR" | tail -1) / 1024 ))
  if [ "$avail" -lt "$need" ]; then
    echo "   skipping $mb MB: needs ~$need MB free on $DIR, $avail MB there"; continue
  fi
  for fmt in $FORMATS; do
    rm -rf "$DIR/s$mb.h5" "$DIR/s$mb.h5.seg"
    echo "   -- $mb MB store, format $fmt (uptime: $(uptime | sed 's/.*load/load/'))"
    seg=""; [ "$fmt" = 5 ] && seg=1
    DYNSWEEP_STORE_SEGMENTS=$seg "$BIN" "$DIR/s$mb.h5" "$mb" "$REPEATS" | tee -a "$RES" | sed 's/^/      /'
    rm -rf "$DIR/s$mb.h5" "$DIR/s$mb.h5.tmp" "$DIR/s$mb.h5.journal" "$DIR/s$mb.h5.seg"
  done
done
echo "   uptime after: $(uptime)"
/usr/bin/python3 - "$RES" <<'EOF'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]) if l.startswith("M\t")]
by = {}
for r in rows:
    size = float(r[1])
    key = (int(r[10]), round(size / 1e8) / 10)  # format, GB (one decimal): a store's repeats
    by.setdefault(key, []).append([float(x) for x in r[1:]])
print()
print("format | store GB | publishes | publish s (min-max) | copy / apply / fsync+rename s (median) | MB/s | "
      "peak extra bytes (% of store) | fs free drop | interval s | share of run | segment files")
for key in sorted(by):
    v = by[key]
    size = statistics.median(x[0] for x in v)
    ts = [x[1] for x in v]
    med = statistics.median(ts)
    cp, ap, sy = (statistics.median(x[i] for x in v) for i in (2, 3, 4))
    peak = max(x[5] for x in v)
    drop = max(x[6] for x in v)
    peakp = max(100 * x[5] / x[0] for x in v)  # each publish against its own store
    dropp = max(100 * x[6] / x[0] for x in v)
    interval = max(2.0, 100 * med)
    share = med / (interval + med)
    print("%6d | %8.2f | %9d | %6.3f (%.3f-%.3f) | %.3f / %.3f / %.3f | %5.0f | %.0f (%.1f%%) | %.0f (%.0f%%) | %7.1f | %.2f%% | %s"
          % (key[0], size / 1e9, len(v), med, min(ts), max(ts), cp, ap, sy, size / med / 1e6, peak,
             peakp, drop, dropp, interval, 100 * share, "-".join(sorted({"%d" % x[10] for x in v}))))
EOF

[ $REAL -eq 1 ] || exit 0
# ---- the same with real runs -------------------------------------------------------
DS=$BUILD/dynsweep
[ -x "$DS" ] || cmake --build "$BUILD" -j 2 --target dynsweep >/dev/null
MPIFLAGS="--oversubscribe"
[ "$(id -u)" -eq 0 ] && MPIFLAGS="$MPIFLAGS --allow-run-as-root"
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
mksweep() { # N FILE: a sweep of N points, 1.72 MB of series each
  /usr/bin/python3 - "$1" > "$2" <<'EOF'
import sys
n = int(sys.argv[1])
lrs = ", ".join("%.6g" % (0.0005 + 0.0005 * i / 100000) for i in range(n))
print("""name: publish-real
seed: 3
model: {type: linear, width: 8, depth: 4, bias: false, init: gaussian, init_scale: 1.0}
data: {kind: teacher, d_in: 8, d_out: 2, rank: 2, n_train: 16, n_test: 16, noise: 0.01}
loss: {type: mse, reduction: half_mean}
optimizer: {type: gd, lr: 0.001}
train: {steps: 5000, tol: 0, diverge_above: 1.0e6}
record:
  series: [loss, test_loss, grad_norm, param_norm, layer_fro, layer_sv]
  every: 1
  top_k: 8
grid:
  lr: [%s]
""" % lrs)
EOF
}
SAMPLER='
import os, sys, time
d, base, stop = sys.argv[1], None, sys.argv[2]
peak = 0
def tot():
    t = 0
    for n in os.listdir(d):
        if n.startswith("r.h5"):
            try: t += os.stat(os.path.join(d, n)).st_blocks * 512
            except FileNotFoundError: pass
    return t
base = tot()
while not os.path.exists(stop):
    peak = max(peak, tot() - base)
    time.sleep(0.002)
print("peak extra bytes %d (store before: %d)" % (peak, base))
'
echo
echo "== real runs: mpirun -n 3 dynsweep run, then the sweep with one grid value more"
for mb in $SIZES; do
  [ "$mb" -le 2000 ] || [ $BIG -eq 1 ] || continue
  n=$(( mb * 1000 / 1724 ))
  mksweep "$n" "$DIR/a.yaml"; mksweep $(( n + 1 )) "$DIR/b.yaml"
  rm -f "$DIR"/r.h5*
  echo "   -- $n points (~$mb MB), uptime: $(uptime | sed 's/.*load/load/')"
  mpirun $MPIFLAGS -n 3 "$DS" run "$DIR/a.yaml" -o "$DIR/r.h5" 2>&1 | grep -E 'finished|store:' | sed 's/^/      /'
  sync
  rm -f "$DIR/stop"
  /usr/bin/python3 -c "$SAMPLER" "$DIR" "$DIR/stop" > "$DIR/peak.txt" &
  SP=$!
  sleep 0.5
  mpirun $MPIFLAGS -n 3 "$DS" run "$DIR/b.yaml" -o "$DIR/r.h5" 2>&1 | grep -E 'finished|store:' | sed 's/^/      /'
  touch "$DIR/stop"; wait $SP
  sed 's/^/      /' "$DIR/peak.txt"
  rm -f "$DIR"/r.h5* "$DIR/stop"
done
echo "   uptime after: $(uptime)"
