#!/bin/bash
# store_tools.sh -- checks a store written by test_store with the HDF5
# command-line tools (h5ls, h5dump) and, if importable, /usr/bin/python3 +
# h5py: layout, summary row count and values, attributes, series round trip.
set -u
: "${DS_BUILD:?DS_BUILD must point at the build directory}"
tmp=$(mktemp -d /tmp/ds_store_tools_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
pass=0
ok() { pass=$((pass + 1)); }
bad() { fails=$((fails + 1)); echo "store_tools: FAIL: $*" >&2; }
check() { # check DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@"; then ok; else bad "$what"; fi
}

"$DS_BUILD/tests/test_store" "$tmp/x.h5" >"$tmp/test.out" 2>&1 || { cat "$tmp/test.out"; bad "test_store failed"; }
check "store file written" test -s "$tmp/x.h5"

# ---- h5ls: layout (format 3: the series of all points in /series tables) ------
h5ls -r "$tmp/x.h5" >"$tmp/ls.txt" 2>&1 || bad "h5ls -r failed"
for obj in "/sweep/yaml" "/grid/axis_values" "/grid/axis_names" "/grid/axis_paths" "/summary" \
           "/series/names" "/series/units" "/series/definitions" "/series/index" \
           "/series/step" "/series/value"; do
  check "h5ls lists $obj" grep -q "^$obj " "$tmp/ls.txt"
done
check "no /points group in a format-3 store" bash -c "! grep -q '^/points' '$tmp/ls.txt'"
check "summary has 6 rows" grep -Eq '^/summary +Dataset \{6\}$' "$tmp/ls.txt"
check "series tables are extendible" grep -Eq '^/series/value +Dataset \{[0-9]+/Inf\}$' "$tmp/ls.txt"

# ---- h5dump: values and attributes ------------------------------------------
h5dump -d /summary "$tmp/x.h5" >"$tmp/summary.txt" 2>&1 || bad "h5dump /summary failed"
check "summary dataspace 6 rows" grep -q 'DATASPACE  SIMPLE { ( 6 ) / ( 6 ) }' "$tmp/summary.txt"
check "diverged reason in summary" grep -q '"loss exceeded 1e6 at step 40"' "$tmp/summary.txt"
check "status_names attribute" grep -q '"0=pending,1=done,2=diverged,3=failed,4=running"' "$tmp/summary.txt"
h5dump -a /format -a /sweep_hash -a /nranks "$tmp/x.h5" >"$tmp/attrs.txt" 2>&1 || bad "h5dump attrs failed"
check "format attribute" grep -q '"dynsweep-store"' "$tmp/attrs.txt"
check "sweep_hash attribute" grep -q '"0123456789abcdef"' "$tmp/attrs.txt"
check "nranks attribute" grep -Eq '^ +\(0\): 4$' "$tmp/attrs.txt"
h5dump -m %.17g -d /series/value "$tmp/x.h5" >"$tmp/values.txt" 2>&1 || bad "h5dump /series/value failed"
# point 3, series 0 (loss), record 1: 3000 + 1/64 = 3000.015625
check "known loss value" grep -q '3000.015625' "$tmp/values.txt"
h5dump -d /series/units "$tmp/x.h5" >"$tmp/units.txt" 2>&1 || bad "h5dump /series/units failed"
check "unit of loss" grep -q '"nat"' "$tmp/units.txt"
h5dump -d /series/index "$tmp/x.h5" >"$tmp/index.txt" 2>&1 || bad "h5dump /series/index failed"
check "index columns" bash -c "grep -q '\"point\"' '$tmp/index.txt' && grep -q '\"value_start\"' '$tmp/index.txt'"

# ---- h5py: series round trip through the documented layout --------------------
py=/usr/bin/python3
if [ -x "$py" ] && "$py" -c 'import h5py, numpy' 2>/dev/null; then
  if "$py" - "$tmp/x.h5" "$DS_SRC/tools" <<'PYEOF'
import sys, h5py, numpy as np
sys.path.insert(0, sys.argv[2])
from dynsweep_store import Store
f = h5py.File(sys.argv[1], "r")
names = ["loss", "grad_norm", "sv/W1", "sv/W2", "layer/norms/deep"]
ncols = [1, 1, 3, 3, 2]
assert f.attrs["format"] == "dynsweep-store", f.attrs["format"]
assert f.attrs["format_version"] == 4
assert f.attrs["sweep_hash"] == "0123456789abcdef"
assert f["sweep/yaml"].asstr()[()].startswith("name: test-sweep\n")
s = f["summary"]
assert s.shape == (6,) and list(s.dtype.names)[:3] == ["id", "combo", "replica"]
assert list(s["status"]) == [1, 4, 1, 2, 1, 0], list(s["status"])
assert s["reason"][3].decode() == "loss exceeded 1e6 at step 40"
assert list(f["grid/axis_names"].asstr()[...]) == ["lr", "optimizer.batch_size"]
assert f["grid/axis_values"].shape == (6, 2)
ix = f["series/index"][...]
kn = list(f["series/names"].asstr()[...])
assert list(ix.dtype.names) == ["point", "kind", "ncols", "n", "step_start", "value_start"]
assert 5 not in ix["point"], "pending point 5 has no series"
step_all, val_all = f["series/step"], f["series/value"]
for p, nrec in ((0, 7), (3, 10)):
    rows = ix[ix["point"] == p]
    assert [kn[k] for k in rows["kind"]] == names, [kn[k] for k in rows["kind"]]
    for k, (name, nc, r) in enumerate(zip(names, ncols, rows)):
        assert r["ncols"] == nc and r["n"] == nrec, (p, name, r)
        step = step_all[r["step_start"]:r["step_start"] + r["n"]]
        val = val_all[r["value_start"]:r["value_start"] + r["n"] * nc].reshape(nrec, nc)
        rr = np.arange(nrec)
        assert np.array_equal(step, rr * 10), (p, name)
        want = (p * 1000 + k * 100 + np.arange(nc)[None, :]) + rr[:, None] / 64.0
        assert val.dtype == np.float64 and np.array_equal(val, want), (p, name)
    # the Python module returns the same
    got = Store(sys.argv[1]).point_series(p)
    assert list(got)[:5] == names and got["sv/W1"][1].shape == (nrec, 3), list(got)
print("h5py: series values equal what was written")
PYEOF
  then ok; else bad "h5py round trip"; fi
else
  echo "store_tools: SKIP h5py check (/usr/bin/python3 with h5py not available)"
fi

# ---- a format-2 store (tests/data/store_v2.h5, made by the dynsweep before the
# /series layout): read by dynsweep and the Python module, refused for writing
old=$DS_SRC/tests/data/store_v2.h5
"$DS_BUILD/dynsweep" ls "$old" >"$tmp/v2ls.txt" 2>&1
check "format 2: dynsweep ls reads it" grep -q '^2 points: 2 done' "$tmp/v2ls.txt"
"$DS_BUILD/dynsweep" show "$old" 1 >"$tmp/v2show.txt" 2>&1
check "format 2: dynsweep show reads point 1's loss" grep -q '^1 2.0968618824738678$' "$tmp/v2show.txt"
if [ -x "$py" ] && "$py" -c 'import h5py' 2>/dev/null; then
  check "format 2: the Python module reads loss and layer_fro" "$py" -c "
import sys; sys.path.insert(0, '$DS_SRC/tools')
from dynsweep_store import Store
p = Store('$old').point_series(1)
assert list(p) == ['loss', 'layer_fro'] and p['loss'][0].tolist() == [0, 1, 2, 3, 4, 5], p"
  cp "$old" "$tmp/v2.h5"
  "$py" -c "
import h5py
with h5py.File('$tmp/v2.h5', 'r+') as f:
    s = f['summary'][...]; s['status'][1] = 0; f['summary'][...] = s"
  before=$(md5sum < "$tmp/v2.h5")
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -n 1 \
    "$DS_BUILD/dynsweep" run "$DS_SRC/tests/data/store_v2.yaml" -o "$tmp/v2.h5" >"$tmp/v2run.txt" 2>&1
  rc=$?
  check "format 2, unfinished: run refuses to add to it (exit $rc, want 2)" test "$rc" -eq 2
  check "... with a clear message" grep -q 'v2.h5: store format_version 2 was written by an older dynsweep' "$tmp/v2run.txt"
  check "... and leaves it untouched, no journal" bash -c "[ \"\$(md5sum < '$tmp/v2.h5')\" = '$before' ] && [ ! -e '$tmp/v2.h5.journal' ]"
fi

echo "store_tools: $pass passed, $fails failed"
[ "$fails" -eq 0 ]
