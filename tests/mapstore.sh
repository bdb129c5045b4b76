#!/usr/bin/env bash
# Map stores (issue 13; docs/store.md, "Map stores"), from outside: a map store
# made through the C API (test_mapstore --make) read with h5py as images of the
# right shape and coordinates, through `import dynsweep` (.map()), drawn by
# `dynsweep map` (non-blank PNG for each metric), `dynsweep status` and
# `dynsweep verify` on it, and the row subcommands refusing it clearly.
. "$(dirname "$0")/lib.sh"
MK=$DS_BUILD/tests/test_mapstore
[ -x "$MK" ] || { echo "FAIL: $MK not built" >&2; exit 1; }
if ! "$PY" -c "import h5py, numpy, yaml, matplotlib" 2>/dev/null; then
  echo "skip: /usr/bin/python3 lacks h5py, numpy, yaml or matplotlib (apt-get install python3-h5py python3-numpy python3-yaml python3-matplotlib)"
  exit 0
fi
export PYTHONPATH=$DS_SRC/python
S=$T/m.h5
check "a 96 x 80 map store made through the API" "$MK" --make "$S" 96 80
check "h5py: /map arrays are images of the grid's shape, with coordinates" "$PY" - "$S" <<'PYEOF'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
names = list(f["grid/axis_names"].asstr()[...])
o, st, me = f["map/outcome"], f["map/step"], f["map/measure"]
ok = names == ["lr_in", "lr_out"] and o.shape == (80, 96) and o.dtype == np.uint8
ok &= st.dtype == np.uint16 and me.dtype == np.float32 and f["map/peak_ratio"].shape == (80, 96)
ok &= o.compression == "gzip" and o.shuffle and o.fletcher32 and o.chunks is not None
x, y = f["map/axes/lr_out"][...], f["map/axes/lr_in"][...]
ok &= len(x) == 96 and len(y) == 80 and np.isclose(x[0], 1e-3) and np.isclose(x[-1], 10)
img = o[...]
ok &= set(np.unique(img)) <= {0, 1, 2} and "axis_values" not in f["grid"] and len(f["summary"]) == 0
ok &= bool((np.sign(me[...]) > 0).any() and (np.sign(me[...]) < 0).any())
ok &= list(f["map"].attrs["shape"]) == [80, 96]
print(names, o.shape, o.chunks, st.dtype, x[:2], ok)
sys.exit(0 if ok else 1)
PYEOF
check "dynsweep.open(p).map(): arrays with coordinates" "$PY" - "$S" <<'PYEOF'
import sys, numpy as np, dynsweep
st = dynsweep.open(sys.argv[1])
m = st.map()
ok = m["axes"] == ["lr_in", "lr_out"] and m["outcome"].shape == (80, 96) and m["computed"].all()
ok &= len(m["coords"]["lr_out"]) == 96 and m["step"].dtype == np.int32 and (m["step"] >= 0).all()
ok &= np.array_equal(np.sign(m["measure"]) > 0, m["outcome"] == 1) and not m["inferred"].any()
try:
    import xarray  # noqa: F401
    ds = st.to_xarray()
    ok &= ds["measure"].dims == ("lr_in", "lr_out") and ds.sizes["lr_out"] == 96
    ok &= bool((ds["outcome"].values == m["outcome"]).all())
except ImportError:
    print("no python3-xarray: to_xarray not checked")
print({k: getattr(v, "shape", v) for k, v in m.items() if k != "coords"}, ok)
sys.exit(0 if ok else 1)
PYEOF
for metric in outcome measure step final_ratio peak_ratio computed; do
  check "dynsweep map --metric $metric draws the map store" "$DYNSWEEP" map "$S" -o "$T/$metric.png" --metric "$metric"
done
check "dynsweep map --fractal-dimension on a map store" "$DYNSWEEP" map "$S" -o "$T/fd.png" --fractal-dimension
check "the PNGs are not blank, the arrays beside them are the store's" "$PY" - "$T" "$S" <<'PYEOF'
import sys, os, numpy as np, matplotlib.image as mi, h5py
d, s = sys.argv[1], sys.argv[2]
ok = True
for m in ("outcome", "measure", "step", "final_ratio", "peak_ratio", "computed"):
    img = mi.imread(os.path.join(d, m + ".png"))
    ok &= img.shape[0] > 100 and float(img[..., :3].std()) > 0.05
z = np.load(os.path.join(d, "outcome.npz"))
# x = the first axis (lr_in, 80 values), y = lr_out: values[j, i] at (x[i], y[j])
ok &= z["values"].shape == (96, 80) and np.array_equal(z["values"], h5py.File(s, "r")["map/outcome"][...].T)
ok &= np.allclose(z["x"], h5py.File(s, "r")["map/axes/lr_in"][...])
print("pngs non-blank, outcome.npz equal to /map/outcome:", ok)
sys.exit(0 if ok else 1)
PYEOF
B=$T/big.h5
check "a 640 x 600 map store" "$MK" --make "$B" 640 600
check "dynsweep map draws a big map store as one image" "$DYNSWEEP" map "$B" -o "$T/big.png" --metric outcome
check "the big PNG is not blank" "$PY" -c "import sys, matplotlib.image as mi; i = mi.imread(sys.argv[1]); sys.exit(0 if float(i[..., :3].std()) > 0.05 else 1)" "$T/big.png"
check "dynsweep verify: OK on a map store" "$DYNSWEEP" verify "$S"
grep -q "OK: map store of 7680 points" <("$DYNSWEEP" verify "$S") && ok "verify says map store" || bad "verify line"
"$DYNSWEEP" status "$S" > "$T/st" 2>&1 || true
grep -q "96 x 80\|80 x 96" "$T/st" && grep -q "7680 of 7680 known" "$T/st" && ok "status: pixels computed" || { cat "$T/st"; bad "status on a map store"; }
P=$T/p.h5
check "a half-computed map store" "$MK" --make "$P" 64 64 --partial
"$DYNSWEEP" status "$P" > "$T/st" 2>&1 || true
grep -q "2048 of 4096 known" "$T/st" && grep -q "2048 not computed" "$T/st" && ok "status: half computed" || { cat "$T/st"; bad "status partial"; }
for sub in "ls" "show 0" "export --format csv" "phase --x lr_in --y lr_out"; do
  rc=$(code "$DYNSWEEP" $sub "$S")
  [ "$sub" = "show 0" ] && rc=$(code "$DYNSWEEP" show "$S" 0)
  [ "$rc" = 2 ] && grep -q "is a map store (7680 points as arrays): use \`dynsweep map\` or h5py" "$T/err" \
    && ok "dynsweep $sub refuses a map store clearly" || { cat "$T/err"; bad "dynsweep $sub on a map store (exit $rc)"; }
done
report
