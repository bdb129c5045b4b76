#!/usr/bin/env bash
# issue 25: the same sweeps give the same stores before and after a change of
# the code. tests/data/compat/ keeps the stores the release before the
# restructuring made (commit and kernels in tests/data/compat/MADE, commands in
# its commands.txt, remade by tests/compat_make.sh):
#   rows.h5 (row store), seg.h5 + seg.h5.seg/ (segmented, format 5), map.h5
#   (dense map), refine.h5 (refined map, made at 1 level and extended to 2),
#   rows_ext.h5 (rows.h5 continued with a grid value added), ckpt_drained.h5
#   (drained with a point's checkpoint blob) and ckpt.h5 (it resumed)
# This test runs the same commands with the binary under test and compares
# every store with its reference point by point, provenance aside
# (tests/compat_diff.py lists what it ignores and why); the binary under test
# also continues copies of the reference rows.h5 and ckpt_drained.h5 (stores
# an older dynsweep wrote; the latter resumes the old release's checkpoint
# blob) and must give the reference rows_ext.h5 and ckpt.h5; it verifies, lists and
# exports the references. Negative checks: a copy of a reference with one value
# changed (a series value, a summary field, a map pixel, a refined map's
# outcome) must be reported, naming the point or pixel; a copy with only
# provenance changed must not be.
# The summary columns, one definition: tests/compat_columns.py holds the
# writer's /summary type against ds_summary_row, docs/store.md, the Python
# package, `ls` and `export`, and must fail on a copy that misses a column.
# Values are bitwise only with the same kernels (docs/performance.md): on a
# host whose kernels differ from MADE's, the test builds MADE's commit from git
# (once, cached in the build tree) and makes the references here with it.
. "$(dirname "$0")/lib.sh"
[ "$HAVE_H5PY" = 1 ] || { echo "compat: needs /usr/bin/python3 with h5py and numpy: skipped"; exit 77; }
REF=$DS_SRC/tests/data/compat
DIFF=("$PY" "$DS_SRC/tests/compat_diff.py")

# ---- the references: stored, or made here by MADE's commit -------------------
here=$("$DS_SRC/tests/compat_kernels.sh" "$DYNSWEEP")
made=$(sed -n 's/^kernels: //p' "$REF/MADE")
if [ "$here" != "$made" ]; then
  commit=$(sed -n 's/^commit: //p' "$REF/MADE")
  echo "compat: this host's kernels ($here) are not those of the references ($made):"
  echo "compat: building $commit from git to make the references here"
  cache=${DS_BUILD:-$T}/compat-ref-$commit
  if [ ! -x "$cache/build/dynsweep" ]; then
    rm -rf "$cache" && mkdir -p "$cache/src"
    if ! git -C "$DS_SRC" archive "$commit" | tar -x -C "$cache/src" ||
       ! cmake -S "$cache/src" -B "$cache/build" -DCMAKE_BUILD_TYPE=Release >"$cache/cmake.log" 2>&1 ||
       ! cmake --build "$cache/build" --target dynsweep -j2 >>"$cache/cmake.log" 2>&1; then
      echo "compat: cannot build $commit (no git history here?): skipped"; exit 77
    fi
  fi
  "$DS_SRC/tests/compat_make.sh" "$cache/build/dynsweep" "$T/ref" --reference >"$T/ref.log" 2>&1
  REF=$T/ref
fi

# ---- the same sweeps with the binary under test ---------------------------------
"$DS_SRC/tests/compat_make.sh" "$DYNSWEEP" "$T/new" >"$T/make.log" 2>&1 ||
  { cat "$T/make.log" >&2; bad "the compat sweeps ran"; report; }
for s in rows seg map refine rows_ext; do
  check "$s.h5: point by point as the reference's, provenance aside" "${DIFF[@]}" "$REF/$s.h5" "$T/new/$s.h5"
done
n=$(find "$T/new/seg.h5.seg" -name '*.h5' | wc -l)
check "seg.h5 is a format-5 store of several segment and block files ($n)" \
  bash -c "[ \$(h5dump -a format_version '$T/new/seg.h5' | sed -n 's/.*(0): //p') = 5 ] && [ $n -ge 6 ]"

# ---- the binary under test continues and reads the references ----------------------
mkdir "$T/old"
"$DS_SRC/tests/compat_make.sh" "$DYNSWEEP" "$T/old" --continue "$REF" >"$T/ext.log" 2>&1 ||
  cat "$T/ext.log" >&2
check "the reference rows.h5 continued by this binary (2 points added) = the reference rows_ext.h5" \
  "${DIFF[@]}" "$REF/rows_ext.h5" "$T/old/rows_ext.h5"
check "the reference ckpt_drained.h5 holds a checkpoint blob (/checkpoints/000000)" \
  bash -c "h5ls '$REF/ckpt_drained.h5/checkpoints' | grep -q '^000000'"
check "the reference ckpt_drained.h5 resumed from its checkpoint by this binary = the reference ckpt.h5" \
  "${DIFF[@]}" "$REF/ckpt.h5" "$T/old/ckpt.h5"
for s in rows seg map refine rows_ext ckpt_drained ckpt; do
  check "verify: the reference $s.h5 is intact" "$DYNSWEEP" verify "$REF/$s.h5"
done
for s in rows seg rows_ext; do
  check "ls and export read the reference $s.h5" \
    bash -c "'$DYNSWEEP' ls '$REF/$s.h5' >/dev/null && '$DYNSWEEP' export '$REF/$s.h5' >/dev/null"
done
all_known() { "$DYNSWEEP" status "$1" | grep -Eq '; ([0-9]+) of \1 known'; }
for s in map refine; do
  check "status reads the reference $s.h5: every pixel known" all_known "$REF/$s.h5"
done

# ---- negative checks: a changed value is reported by point or pixel ----------------
# tamper REF NAME PYTHON EXPECT: a copy of REF changed by PYTHON (f: the h5py file,
# np: numpy) must differ from REF, and the report must match EXPECT
tamper() {
  local ref=$1 name=$2 code=$3 expect=$4 rc
  cp "$ref" "$T/$name.h5"
  HDF5_USE_FILE_LOCKING=FALSE "$PY" -c "import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], 'r+')
$code
f.close()" "$T/$name.h5"
  set +e; "${DIFF[@]}" "$ref" "$T/$name.h5" >"$T/$name.txt" 2>&1; rc=$?; set -e
  check "negative: $name is reported (exit $rc: $(grep -m1 -v ' differ (' "$T/$name.txt" | cut -c1-160))" \
    bash -c "[ $rc = 1 ] && grep -Eq '$expect' '$T/$name.txt'"
}
# one bit of one value of a series of point 5 (a catapult point)
tamper "$REF/rows.h5" series_bit "
idx = f['series/index'][...]
r = idx[idx['point'] == 5][0]
v = f['series/value']
x = v[int(r['value_start']):int(r['value_start']) + 1].view(np.uint64) ^ np.uint64(1)
v[int(r['value_start'])] = x.view(np.float64)[0]" \
  'point 5: series loss: 1 values differ, first at step 0 column 0'
tamper "$REF/rows.h5" summary_field "
s = f['summary'][...]
s['final_test_loss'][3] = np.nextafter(s['final_test_loss'][3], 1.0)
f['summary'][...] = s" '/summary point 3 \(row 3\): final_test_loss ref'
tamper "$REF/map.h5" map_pixel "
m = f['map/measure'][...]
m[3, 7] = np.nextafter(m[3, 7], np.float32(10))
f['map/measure'][...] = m" '/map/measure pixel \(3, 7\)'
tamper "$REF/refine.h5" refine_outcome "
o = f['map/outcome'][...]
i, j = np.argwhere(o < 64)[5]
o[i, j] ^= 1
f['map/outcome'][...] = o" '/map/outcome pixel \([0-9]+, [0-9]+\).*|map\(\): outcome differs'
tamper "$REF/rows.h5" series_kind "
f['series/units'][0] = 'furlongs'" '/series/units'
tamper "$REF/map.h5" map_attr "
f['map'].attrs['steps'] = 61" '/map: attribute steps'
# format 5: one value changed in a segment file (what the virtual /series/value reads)
mkdir "$T/segt" && cp -r "$REF/seg.h5" "$REF/seg.h5.seg" "$T/segt/"
(cd "$T/segt" && HDF5_USE_FILE_LOCKING=FALSE "$PY" -c "import h5py, numpy as np
f = h5py.File('seg.h5', 'r')
# the segment file that maps (all of it) onto /series/value from element 0 on
name = [m.file_name for m in f['series/value'].virtual_sources()
        if m.vspace.get_select_bounds()[0] == (0,)][0]
f.close()
with h5py.File(name, 'r+') as g:
    g['value'][0] = -g['value'][0]")
set +e; "${DIFF[@]}" "$REF/seg.h5" "$T/segt/seg.h5" >"$T/segt.txt" 2>&1; rc=$?; set -e
check "negative: a value changed in a segment file of seg.h5 is reported (exit $rc: $(head -1 "$T/segt.txt" | cut -c1-160))" \
  bash -c "[ $rc = 1 ] && grep -Eq 'point [0-9]+: series loss: 1 values differ, first at step 0 column 0' '$T/segt.txt'"
# provenance only: must still compare equal
cp "$REF/rows.h5" "$T/prov.h5"
HDF5_USE_FILE_LOCKING=FALSE "$PY" -c "import sys, h5py
f = h5py.File(sys.argv[1], 'r+')
for k in ('hosts', 'start_time', 'end_time', 'dynsweep_version', 'store_uuid', 'updated'):
    f.attrs[k] = 'elsewhere'
s = f['summary'][...]; s['wall_s'] *= 2; f['summary'][...] = s
f.close()" "$T/prov.h5"
check "a copy with only provenance changed (hosts, times, version, uuid, wall_s) compares equal" \
  "${DIFF[@]}" "$REF/rows.h5" "$T/prov.h5"

# ---- summary columns, one definition ------------------------------------------------
COLS=("$PY" "$DS_SRC/tests/compat_columns.py")
check "summary columns: writer = ds_summary_row = docs/store.md = python = ls = export" \
  "${COLS[@]}" "$DS_SRC" "$DYNSWEEP" "$T/new/rows.h5"
# a copy of the sources that misses a column in the docs and the Python package
mkdir -p "$T/src"
cp -r "$DS_SRC/include" "$DS_SRC/docs" "$DS_SRC/python" "$T/src/"
sed -i '/^| `attempts` | int32 |/d' "$T/src/docs/store.md"
sed -i 's/X(attempts, i)//' "$T/src/include/dynsweep/store.h"
sed -i 's/, ("attempts", np.int32, 0))/)/' "$T/src/python/dynsweep/frames.py"
set +e; "${COLS[@]}" "$T/src" "$DYNSWEEP" "$T/new/rows.h5" >"$T/cols.txt" 2>&1; rc=$?; set -e
check "negative: a column missing in DS_SUMMARY_COLUMNS, docs/store.md and frames._DEFAULTS is named (exit $rc)" \
  bash -c "[ $rc = 1 ] && grep -q 'docs/store.md /summary table: misses attempts' '$T/cols.txt' &&
           grep -q 'python SUMMARY_FIELDS + outcome + frames._DEFAULTS: misses attempts' '$T/cols.txt' &&
           grep -q 'C ds_summary_row (DS_SUMMARY_COLUMNS): misses attempts' '$T/cols.txt'"
# a binary whose export drops a column
cat >"$T/fakebin" <<EOF
#!/usr/bin/env bash
if [ "\$1" = export ] && [ "\$#" = 2 ]; then
  "$DYNSWEEP" "\$@" | awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if (\$i == "team_size") c = i }
    { s = ""; for (i = 1; i <= NF; i++) if (i != c) s = s (s == "" ? "" : OFS) \$i; print s }'
else exec "$DYNSWEEP" "\$@"; fi
EOF
chmod +x "$T/fakebin"
set +e; "${COLS[@]}" "$DS_SRC" "$T/fakebin" "$T/new/rows.h5" >"$T/cols2.txt" 2>&1; rc=$?; set -e
check "negative: an export header without team_size is named (exit $rc)" \
  bash -c "[ $rc = 1 ] && grep -q 'dynsweep export header (src/analysis/export.c): misses team_size' '$T/cols2.txt'"
report
