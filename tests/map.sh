#!/usr/bin/env bash
# Trainability maps (issue 13, "Seeing a map"): python/dynsweep/maps.py against
# hand-computed values and shapes of known box-counting dimension, then
# `dynsweep map` on a real 16 x 16 lr x init_scale store: the image, the arrays
# beside it equal to the measure recomputed here from the stored loss series
# (read with h5py, not through dynsweep), the boundary, the dimension, bad input.
. "$(dirname "$0")/lib.sh"
if ! "$PY" -c "import h5py, numpy, yaml, matplotlib" 2>/dev/null; then
  echo "skip: /usr/bin/python3 lacks h5py, numpy, yaml or matplotlib (apt-get install python3-h5py python3-numpy python3-yaml python3-matplotlib)"
  exit 0
fi
export PYTHONPATH=$DS_SRC/python

check "maps.py: measure, boundary, rank scale, box counting of known shapes" "$PY" - <<'PYEOF'
import numpy as np
from dynsweep import maps
bad = []
def want(name, ok):
    print(("ok   " if ok else "FAIL ") + name)
    if not ok: bad.append(name)
# the convergence measure (maps.md): v_t = L_t / L_0, capped at 1e6
L = np.array([4.0, 2.0, 1.0, 0.5] + [0.25] * 20)
v = L / 4
want("converged: -sum v_t", maps.convergence_measure(L) == -v.sum())
D = np.array([1.0, 3.0, 1e7, np.inf, np.nan] + [2.0] * 20)
vd = np.minimum(np.where(np.isfinite(D), D, 1e6), 1e6)
want("diverged: +sum 1/v_t, non-finite and > 1e6 capped", maps.convergence_measure(D) == (1 / vd).sum())
want("tail mean exactly 1 is not converged", maps.convergence_measure(np.ones(30)) == 30.0)
# boundary: 2x2 blocks with both signs
m = np.array([[-1, -1, 1], [-1, -1, 1], [-1, -1, -1.0]])
want("boundary of a 3x3 sign pattern", (maps.boundary(m) == np.array([[0, 1], [0, 1]], bool)).all())
want("NaN pixels count only their finite neighbours",
     (maps.boundary(np.array([[np.nan, 1], [-1, np.nan]])) == np.array([[1]], bool)).all())
r = maps.rank_rescale(np.array([-5.0, -1, 0, 2, 7, np.nan]))
want("rank scale keeps signs, orders by magnitude", r[0] < r[1] < 0 and r[2] == 0 and 0 < r[3] < r[4] < 1 and np.isnan(r[5]))
# box counting on shapes of known dimension
n = 512
line = np.zeros((n, n), bool); line[n // 3, :] = True
f = maps.box_counting(line); print("line", f.dimension, f.fit_sizes)
want("a straight line: dimension 1 (+-0.02)", abs(f.dimension - 1) < 0.02)
yy, xx = np.mgrid[:n, :n]
disk = np.where((xx - n / 2) ** 2 + (yy - n / 2) ** 2 < (n / 3) ** 2, -1.0, 1.0)
f = maps.box_counting(maps.boundary(disk)); print("circle", f.dimension)
want("a circle's boundary: dimension 1 (+-0.06)", abs(f.dimension - 1) < 0.06)
plane = np.ones((n, n), bool)
want("a full plane: dimension 2", abs(maps.box_counting(plane).dimension - 2) < 1e-9)
rng = np.random.default_rng(1)
noise = maps.boundary(rng.standard_normal((n, n)))
f = maps.box_counting(noise); print("noise", f.dimension)
want("random signs: boundary fills the plane, dimension 2 (+-0.02)", abs(f.dimension - 2) < 0.02)
# Sierpinski carpet, level 5 (243 px): log 8 / log 3 = 1.893 (fit over 3-adic-unaligned
# powers of two is rough; +-0.1)
c = np.ones((1, 1), bool)
for _ in range(5):
    c = np.block([[c, c, c], [c, np.zeros_like(c), c], [c, c, c]])
f = maps.box_counting(c, (1, 64)); print("carpet", f.dimension)
want("Sierpinski carpet: log 8/log 3 = 1.893 (+-0.1)", abs(f.dimension - np.log(8) / np.log(3)) < 0.1)
try:
    maps.box_counting(np.zeros((8, 8), bool)); want("empty mask refused", False)
except ValueError:
    want("empty mask refused", True)
raise SystemExit(1 if bad else 0)
PYEOF

cat > "$T/map.yaml" <<'YEOF'
name: map-test
seed: 11
model: {type: relu, depth: 2, width: 16, bias: false}
data: {kind: teacher, n_train: 64, n_test: 0, d_in: 8, d_out: 1}
loss: {type: mse, reduction: half_mean}
optimizer: {type: gd}
train: {steps: 120, diverge_above: 1.0e8}
record: {series: [loss], every: 1, per_decade: 0}
grid:
  lr: {start: 0.01, stop: 10, num: 16, spacing: log}
  init_scale: {start: 0.1, stop: 10, num: 16, spacing: log}
YEOF
drun 2 "$T/map.yaml" -o "$T/map.h5" -q
"$DYNSWEEP" map "$T/map.h5" -o "$T/map.png" --fractal-dimension > "$T/out" 2> "$T/err" || bad "dynsweep map failed: $(cat "$T/err")"
cat "$T/out"
check "the image is a PNG of real content (> 20 kB)" bash -c "head -c 8 '$T/map.png' | od -c | grep -q 'P   N   G' && [ \$(stat -c %s '$T/map.png') -gt 20000 ]"
check "the dimension line names the fit range" grep -qE '^box-counting dimension of the boundary: [0-9.]+ \(fit over boxes of [0-9]+\.\.[0-9]+ pixels' "$T/out"
check "the arrays beside it: measure = recomputed from the stored loss (h5py), axes, boundary" \
  "$PY" - "$T/map.h5" "$T/map.npz" "$T/out" <<'PYEOF'
import re, sys, h5py, numpy as np
store, npz, out = sys.argv[1:4]
z = np.load(npz)
with h5py.File(store, "r") as f:
    g = f["series"]
    names = [x.decode() if isinstance(x, bytes) else x for x in g["names"][...]]
    idx = g["index"][...]
    names_ax = [x.decode() if isinstance(x, bytes) else x for x in f["grid/axis_names"][...]]
    vals = f["grid/axis_values"][...]
    summ = f["summary"][...]
    loss = {}
    for r in idx:
        if r["point"] >= 0 and r["kind"] >= 0 and names[r["kind"]] == "loss":
            loss[int(r["point"])] = g["value"][r["value_start"]:r["value_start"] + r["n"] * r["ncols"]]
lr = np.unique(vals[:, names_ax.index("lr")]); s = np.unique(vals[:, names_ax.index("init_scale")])
ok = np.array_equal(z["x"], lr) and np.array_equal(z["y"], s) and z["values"].shape == (16, 16)
bad = 0
for i, pid in enumerate(summ["id"]):
    v = np.asarray(loss[int(pid)], float) / loss[int(pid)][0]
    v = np.minimum(np.where(np.isfinite(v), v, 1e6), 1e6)
    m = -v.sum() if v[-20:].mean() < 1 else (1 / v).sum()
    x = np.searchsorted(lr, vals[i, names_ax.index("lr")]); y = np.searchsorted(s, vals[i, names_ax.index("init_scale")])
    if z["values"][y, x] != m:
        bad += 1
sg = np.sign(z["values"])
b = np.array([[len({sg[j, i], sg[j, i + 1], sg[j + 1, i], sg[j + 1, i + 1]} - {0.0}) > 1 for i in range(15)] for j in range(15)])
nconv, ndiv = int((sg < 0).sum()), int((sg > 0).sum())
d = float(re.search(r"boundary: ([0-9.]+)", open(out).read()).group(1))
print("pixels: %d converged, %d diverged, %d measure mismatches, %d boundary pixels, dimension %.3f"
      % (nconv, ndiv, bad, int(b.sum()), d))
ok &= bad == 0 and np.array_equal(b, z["boundary"]) and nconv > 20 and ndiv > 20
ok &= 0.8 < d < 1.3 and abs(float(z["dimension"]) - d) < 5e-4  # a smooth edge: ~1
sys.exit(0 if ok else 1)
PYEOF
"$DYNSWEEP" map "$T/map.h5" -o "$T/out.png" --metric outcome --axes init_scale,lr > "$T/out2"
"$DYNSWEEP" export "$T/map.h5" -o "$T/map.csv"
# every pixel is the point's named outcome as `dynsweep export` prints it (issue 24: codes
# 5/6 of a row store are classes, not raw codes): 0 converged, 1 diverged, 2 catapult,
# 3 failed, 4 unconverged, 5 plateaus
check "--metric outcome --axes init_scale,lr (swapped): every pixel = export's outcome" "$PY" -c "
import csv, numpy as np; z = np.load('$T/out.npz'); v = z['values']
assert z['xname'] == 'init_scale' and v.shape == (16, 16)
cls = ['converged', 'diverged', 'catapult', 'failed', 'unconverged', 'plateaus']
rows = list(csv.DictReader(open('$T/map.csv')))
xs, ys = sorted({float(r['init_scale']) for r in rows}), sorted({float(r['lr']) for r in rows})
got = [cls[int(v[ys.index(float(r['lr'])), xs.index(float(r['init_scale']))])] for r in rows]
want = [r['outcome'] for r in rows]
print('pixels:', {k: got.count(k) for k in cls}, 'mismatches:', sum(a != b for a, b in zip(got, want)))
assert len(rows) == 256 and got == want
assert got.count('diverged') > 20 and got.count('converged') + got.count('unconverged') > 20"
"$DYNSWEEP" map "$T/map.h5" -o "$T/fl.png" --metric final_loss > /dev/null
check "--metric final_loss draws" test -s "$T/fl.png"
# bad input: exit 2 and one clear line
for args in "$T/none.h5 -o $T/x.png" "$T/map.h5 -o $T/x.png --axes lr,width" \
            "$T/map.h5 -o $T/x.png --metric final_loss --fractal-dimension" \
            "$T/map.h5 -o $T/x.png --fractal-dimension --fit 8,2"; do
  rc=$(code "$DYNSWEEP" map $args)
  check "map $args: exit 2 ($(head -1 "$T/err"))" bash -c "[ $rc -eq 2 ] && grep -q '^dynsweep-map: ' '$T/err'"
done
check "no image left behind by refused calls" test ! -e "$T/x.png"
rc=$(code "$DYNSWEEP" map "$T/map.h5" -o "$T/x.png" --axes lr,width)
check "--axes lr,width: says width is not a grid axis and lists the axes" grep -q "'width' is not a grid axis; axes: lr, init_scale" "$T/err"
drun 2 "$DS_SRC/tests/sweeps/small.yaml" -o "$T/s.h5" -q
rc=$(code "$DYNSWEEP" map "$T/s.h5" -o "$T/x.png")
check "a store with more than two varying axes: exit 2, says which" bash -c "[ $rc -eq 2 ] && grep -q 'several values' '$T/err'"
# a row store with a third varying axis (issue 24, item 4): refused without --where (which
# the message suggests), drawn per slice with --where model.type=relu / tanh; each slice's
# pixels are `dynsweep export --where`'s outcomes of that type only
sed -e 's/model: {type: relu, depth: 2, width: 16, bias: false}/model: {depth: 2, width: 16, bias: false}/' \
    -e 's/num: 16/num: 6/g' -e 's/^grid:/grid:\n  model.type: [relu, tanh]/' "$T/map.yaml" > "$T/three.yaml"
grep -q "model.type: \[relu, tanh\]" "$T/three.yaml" || bad "three-axis sweep not made"
drun 2 "$T/three.yaml" -o "$T/three.h5" -q
rc=$(code "$DYNSWEEP" map "$T/three.h5" -o "$T/x.png" --metric outcome)
check "three varying axes, no --where: exit 2, names model.type and --where" \
  bash -c "[ $rc -eq 2 ] && grep -q \"'model.type' has several values.*--where model.type=VALUE\" '$T/err'"
for ty in relu tanh; do
  "$DYNSWEEP" map "$T/three.h5" -o "$T/$ty.png" --metric outcome --where model.type=$ty > /dev/null 2> "$T/err" \
    || bad "map --where model.type=$ty failed: $(cat "$T/err")"
  "$DYNSWEEP" export "$T/three.h5" --where model.type=$ty -o "$T/$ty.csv"
  check "--where model.type=$ty: a 6 x 6 map, every pixel = export --where's outcome" "$PY" -c "
import csv, numpy as np; z = np.load('$T/$ty.npz'); v = z['values']
cls = ['converged', 'diverged', 'catapult', 'failed', 'unconverged', 'plateaus']
rows = list(csv.DictReader(open('$T/$ty.csv')))
xs, ys = sorted({float(r['lr']) for r in rows}), sorted({float(r['init_scale']) for r in rows})
got = [cls[int(v[ys.index(float(r['init_scale'])), xs.index(float(r['lr']))])] for r in rows]
print('$ty pixels:', {k: got.count(k) for k in cls})
assert str(z['xname']) == 'lr' and v.shape == (6, 6) and len(rows) == 36 and {r['model.type'] for r in rows} == {'$ty'}
assert got == [r['outcome'] for r in rows] and 0 < got.count('diverged') < 36"
done
check "... the two slices differ (relu and tanh are not averaged)" "$PY" -c "
import numpy as np; a = np.load('$T/relu.npz')['values']; b = np.load('$T/tanh.npz')['values']
print('pixels that differ:', int((a != b).sum())); assert (a != b).any()"
rc=$(code "$DYNSWEEP" map "$T/three.h5" -o "$T/x.png" --where model.type=sigmoid)
check "--where model.type=sigmoid: exit 2, lists the values" bash -c "[ $rc -eq 2 ] && grep -q 'its values: relu, tanh' '$T/err'"
rc=$(code "$DYNSWEEP" map "$T/three.h5" -o "$T/x.png" --axes lr,init_scale --where 'model.type=relu,lr=0.5')
check "--where lr=0.5 (not a grid value): exit 2, lists lr's values" bash -c "[ $rc -eq 2 ] && grep -q 'no point has lr = 0.5' '$T/err'"
report
