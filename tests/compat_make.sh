#!/usr/bin/env bash
# compat_make.sh DYNSWEEP OUTDIR -- the sweeps of the compatibility test
# (issue 25, tests/compat.sh): runs them with the binary DYNSWEEP and leaves
# the stores in OUTDIR:
#   rows.h5       a row store (format 4): tests/sweeps/compat_rows.yaml, 6 points,
#                 loss/test_loss/grad_norm/param_norm and every spectra diagnostic
#   seg.h5 + seg.h5.seg/   a segmented store (format 5): compat_seg.yaml, 8 points,
#                 DYNSWEEP_STORE_SEGMENTS=1, a publish every 0.01 s
#                 (DYNSWEEP_PUBLISH_FACTOR=0), merge cap 20000 bytes, blocks of 4 rows:
#                 several segment files and 2 files of each block kind
#   map.h5        a dense map store: compat_map.yaml, 12 x 10 tanh map
#   refine.h5     a refined map: compat_refine.yaml, 5 x 5 coarse, made at
#                 grid.refine.levels 1, then extended to the file's 2 levels
#                 (17 x 17 pixels; the run keeps refine.h5.levels1, removed here)
#   rows_ext.h5   rows.h5 continued with a grid value added (--set grid.lr=[..., 1.0]):
#                 the 8 old points kept, 2 new ones appended (ids 8, 9)
# and with --reference also
#   ckpt_drained.h5  compat_ckpt.yaml (2 points of 20000 steps, -n 2) drained by
#                 SIGUSR1 0.6 s after the store appeared (or sooner or later,
#                 until a drain catches point 0 running): one point holds a
#                 checkpoint blob (/checkpoints/000000), the other is pending
#   ckpt.h5       ckpt_drained.h5 resumed to completion
# compat_make.sh DYNSWEEP OUTDIR --continue REFDIR: only rows_ext.h5 and ckpt.h5,
# made from copies of REFDIR's rows.h5 and ckpt_drained.h5 (tests/compat.sh: the
# binary under test continues stores an older dynsweep wrote).
# The same script makes the reference stores (tests/data/compat/, with the
# binary of the release named in tests/data/compat/MADE) and the stores the
# test compares with them (the binary under test), so both run the very same
# commands, ranks and environment. The sweeps are copied to OUTDIR/sweeps and
# run by that relative path, so /sweep/yaml's `path` attribute is the same
# wherever the source tree lies.
#
# Remaking the references (the binary of the commit before issue 25's
# restructuring, e320947; any later one only if the stores are meant to change):
#   git worktree add /tmp/ref e320947 && cmake -S /tmp/ref -B /tmp/ref/build \
#     -DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/ref/build --target dynsweep
#   tests/compat_make.sh /tmp/ref/build/dynsweep tests/data/compat --reference
# --reference also writes tests/data/compat/MADE (commit, host kernels, commands).
set -euo pipefail
bin=$1 out=$2 ref=${3:-}
src=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$bin" ] || { echo "compat_make: $bin is not an executable" >&2; exit 2; }
mkdir -p "$out/sweeps"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
cp "$src"/tests/sweeps/compat_{rows,seg,map,refine}.yaml "$out/sweeps/"
cp "$src"/tests/sweeps/compat_ckpt.yaml "$out/sweeps/"
[ "$ref" = --continue ] && from=$(cd "$4" && pwd)
cd "$out"
rm -rf rows_ext.h5* ckpt.h5*
# the environment the suite runs in (tests/env.sh, tests/CMakeLists.txt) and
# no store knob but those named below
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
unset DYNSWEEP_STORE_SEGMENTS DYNSWEEP_PUBLISH_FACTOR DYNSWEEP_SEG_CAP DYNSWEEP_BLOCK_ROWS \
  DYNSWEEP_STORE_BLOCKS DYNSWEEP_TANH DYNSWEEP_TILE_GENERIC DYNSWEEP_TILE_ISA DYNSWEEP_TILE_GEMM \
  DYNSWEEP_TILE_TANH DYNSWEEP_NN_GEMM DYNSWEEP_NN_BLOCK DYNSWEEP_NN_E2E DYNSWEEP_SVD
R() { echo "+ $*" >>commands.txt; "$@"; }
: >commands.txt
extend() { # extend ROWS: rows_ext.h5, a copy of ROWS with a grid value added
  R cp "$1" rows_ext.h5
  R mpirun --oversubscribe -n 2 "$bin" run sweeps/compat_rows.yaml -o rows_ext.h5 -q \
    --set 'grid.lr=[0.5, 2.0, 8.0, 40.0, 1.0]'
}
resume() { # resume DRAINED: ckpt.h5, a copy of DRAINED run to completion
  R cp "$1" ckpt.h5
  R mpirun --oversubscribe -n 2 "$bin" run sweeps/compat_ckpt.yaml -o ckpt.h5 -q
}
if [ "$ref" = --continue ]; then
  extend "$from/rows.h5"
  resume "$from/ckpt_drained.h5"
  exit 0
fi
rm -rf rows.h5* seg.h5* map.h5* refine.h5*
R mpirun --oversubscribe -n 2 "$bin" run sweeps/compat_rows.yaml -o rows.h5 -q
R env DYNSWEEP_STORE_SEGMENTS=1 DYNSWEEP_PUBLISH_FACTOR=0 DYNSWEEP_SEG_CAP=20000 DYNSWEEP_BLOCK_ROWS=4 \
  mpirun --oversubscribe -n 2 "$bin" run sweeps/compat_seg.yaml -o seg.h5 -q --publish-every 0.01
R mpirun --oversubscribe -n 3 "$bin" run sweeps/compat_map.yaml -o map.h5 -q
R mpirun --oversubscribe -n 3 "$bin" run sweeps/compat_refine.yaml -o refine.h5 -q --set 'grid.refine={levels: 1}'
R mpirun --oversubscribe -n 3 "$bin" run sweeps/compat_refine.yaml -o refine.h5 -q
rm -f refine.h5.levels1
extend rows.h5
if [ "$ref" = --reference ]; then
  rm -rf ckpt_drained.h5*
  echo "+ mpirun --oversubscribe -n 2 $bin run sweeps/compat_ckpt.yaml -o ckpt_drained.h5 -q --checkpoint-every 0 &" \
    "(SIGUSR1 to mpirun 0.6 s after ckpt_drained.h5 appeared)" >>commands.txt
  # the drain must catch point 0 running: too early (a loaded host: the
  # worker has not started it) or too late (a fast host: it has finished and
  # point 1 holds the checkpoint) and the store is made again, SIGUSR1 sooner
  # or later after the store appeared
  for wait_s in 0.6 0.3 1.2 0.15 2.4 0.05; do
    rm -rf ckpt_drained.h5*
    mpirun --oversubscribe -n 2 "$bin" run sweeps/compat_ckpt.yaml -o ckpt_drained.h5 -q --checkpoint-every 0 &
    pid=$!
    for _ in $(seq 1 200); do [ -e ckpt_drained.h5 ] && break; sleep 0.05; done
    sleep "$wait_s"
    kill -USR1 "$pid" 2>/dev/null || true
    set +e; wait "$pid"; rc=$?; set -e
    [ "$rc" = 3 ] && h5ls ckpt_drained.h5/checkpoints 2>/dev/null | grep -q '^000000' && break
    echo "compat_make: SIGUSR1 $wait_s s after the store appeared: exit $rc, no checkpoint of point 0" >&2
  done
  [ "$rc" = 3 ] && h5ls ckpt_drained.h5/checkpoints 2>/dev/null | grep -q '^000000' ||
    { echo "compat_make: no drain left a checkpoint of point 0 in ckpt_drained.h5" >&2; exit 1; }
  resume ckpt_drained.h5
fi
nseg=$(find seg.h5.seg -name '*.h5' | wc -l)
echo "compat_make: $out: rows.h5 seg.h5 ($nseg files in seg.h5.seg) map.h5 refine.h5 rows_ext.h5 $(ls ckpt*.h5 2>/dev/null | tr '\n' ' ')"
if [ "$ref" = --reference ]; then
  {
    echo "made by: tests/compat_make.sh (this directory's commands.txt: the exact commands)"
    echo "commit: ${COMPAT_COMMIT:-$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)}"
    echo "(the commit of the binary's sources: COMPAT_COMMIT, else this tree's HEAD)"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    "$bin" version | sed -n 's/^\(dynsweep\|OpenBLAS kernel:\|tanh:\)/&/p'
    echo "kernels: $("$src/tests/compat_kernels.sh" "$bin")"
  } >MADE
  rm -rf sweeps
fi
