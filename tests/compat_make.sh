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
# compat_make.sh DYNSWEEP OUTDIR --extend-from ROWS: only rows_ext.h5, made from a
# copy of ROWS (tests/compat.sh: the binary under test continues the reference's
# rows.h5, a store an older dynsweep wrote).
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
[ "$ref" = --extend-from ] && from=$(cd "$(dirname "$4")" && pwd)/$(basename "$4")
cd "$out"
rm -rf rows_ext.h5*
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
if [ "$ref" = --extend-from ]; then
  extend "$from"
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
nseg=$(find seg.h5.seg -name '*.h5' | wc -l)
echo "compat_make: $out: rows.h5 seg.h5 ($nseg files in seg.h5.seg) map.h5 refine.h5 rows_ext.h5"
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
