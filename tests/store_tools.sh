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

# ---- h5ls: layout -----------------------------------------------------------
h5ls -r "$tmp/x.h5" >"$tmp/ls.txt" 2>&1 || bad "h5ls -r failed"
for obj in "/sweep/yaml" "/grid/axis_values" "/grid/axis_names" "/grid/axis_paths" "/summary" \
           "/points/000000/loss/step" "/points/000000/loss/value" \
           "/points/000003/sv/W1/value" "/points/000004/layer/norms/deep/value" \
           "/points/000004/empty/series/value"; do
  check "h5ls lists $obj" grep -q "^$obj " "$tmp/ls.txt"
done
check "pending point 5 has no group" bash -c "! grep -q '^/points/000005' '$tmp/ls.txt'"
check "summary has 6 rows" grep -Eq '^/summary +Dataset \{6\}$' "$tmp/ls.txt"
check "sv/W1 value is 10x3 for point 3" grep -Eq '^/points/000003/sv/W1/value +Dataset \{10, 3\}$' "$tmp/ls.txt"

# ---- h5dump: values and attributes ------------------------------------------
h5dump -d /summary "$tmp/x.h5" >"$tmp/summary.txt" 2>&1 || bad "h5dump /summary failed"
check "summary dataspace 6 rows" grep -q 'DATASPACE  SIMPLE { ( 6 ) / ( 6 ) }' "$tmp/summary.txt"
check "diverged reason in summary" grep -q '"loss exceeded 1e6 at step 40"' "$tmp/summary.txt"
check "status_names attribute" grep -q '"0=pending,1=done,2=diverged,3=failed,4=running"' "$tmp/summary.txt"
h5dump -a /format -a /sweep_hash -a /nranks "$tmp/x.h5" >"$tmp/attrs.txt" 2>&1 || bad "h5dump attrs failed"
check "format attribute" grep -q '"dynsweep-store"' "$tmp/attrs.txt"
check "sweep_hash attribute" grep -q '"0123456789abcdef"' "$tmp/attrs.txt"
check "nranks attribute" grep -Eq '^ +\(0\): 4$' "$tmp/attrs.txt"
h5dump -m %.17g -d /points/000003/loss/value "$tmp/x.h5" >"$tmp/loss.txt" 2>&1 || bad "h5dump loss failed"
# point 3, series 0 (loss), record 1: 3000 + 1/64 = 3000.015625
check "known loss value" grep -q '3000.015625' "$tmp/loss.txt"
check "unit attribute" grep -q '"nat"' "$tmp/loss.txt"

# ---- h5py: series round trip --------------------------------------------------
py=/usr/bin/python3
if [ -x "$py" ] && "$py" -c 'import h5py, numpy' 2>/dev/null; then
  if "$py" - "$tmp/x.h5" <<'PYEOF'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
names = ["loss", "grad_norm", "sv/W1", "sv/W2", "layer/norms/deep"]
ncols = [1, 1, 3, 3, 2]
assert f.attrs["format"] == "dynsweep-store", f.attrs["format"]
assert f.attrs["format_version"] == 2
assert f.attrs["sweep_hash"] == "0123456789abcdef"
assert f["sweep/yaml"].asstr()[()].startswith("name: test-sweep\n")
s = f["summary"]
assert s.shape == (6,) and list(s.dtype.names)[:3] == ["id", "combo", "replica"]
assert list(s["status"]) == [1, 4, 1, 2, 1, 0], list(s["status"])
assert s["reason"][3].decode() == "loss exceeded 1e6 at step 40"
assert list(f["grid/axis_names"].asstr()[...]) == ["lr", "optimizer.batch_size"]
assert f["grid/axis_values"].shape == (6, 2)
for p, nrec in ((0, 7), (3, 10)):
    g = f["points/%06d" % p]
    assert list(g.attrs["series_names"]) == names, list(g.attrs["series_names"])
    for k, (name, nc) in enumerate(zip(names, ncols)):
        step = g[name + "/step"][...]
        val = g[name + "/value"][...]
        r = np.arange(nrec)
        assert np.array_equal(step, r * 10), (p, name)
        want = (p * 1000 + k * 100 + np.arange(nc)[None, :]) + r[:, None] / 64.0
        if nc == 1:
            want = want[:, 0]
        assert val.dtype == np.float64 and val.shape == want.shape, (p, name, val.shape)
        assert np.array_equal(val, want), (p, name)
        assert g[name + "/value"].attrs["ncols"] == nc
print("h5py: series values equal what was written")
PYEOF
  then ok; else bad "h5py round trip"; fi
else
  echo "store_tools: SKIP h5py check (/usr/bin/python3 with h5py not available)"
fi

echo "store_tools: $pass passed, $fails failed"
[ "$fails" -eq 0 ]
