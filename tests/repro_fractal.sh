#!/usr/bin/env bash
# issue 13: the trainability-fractal reproduction in reduced form
# (tools/repro_fractal.py, sweeps/repro/fractal_tanh.yaml, docs/repro/fractal.md):
# a dense 33 x 33 map of lr_in x lr_out (100 steps), then two adaptive zoom
# windows (9 x 9 coarse, 2 levels = 33 x 33), each a tenth of the last around
# a boundary pixel. Checks: the table has the three maps; each window is a
# tenth of the one before along both axes and lies inside it; every map has a
# boundary whose box-counting dimension is in [1, 2]; the refined window
# agrees with a dense run of the same window on >= 99.5% of pixels; the
# figures are drawn (non-blank PNGs). The run centres windows by the rule
# `--centre nearest` (the window where 99.82% was measured); the default rule
# (densest: the extent holding the most boundary) is checked on the dense map:
# its window holds at least as much boundary as nearest's, and more here.
. "$(dirname "$0")/lib.sh"
"$PY" "$DS_SRC/tools/repro_fractal.py" "$T/fr" --dense 33 --coarse 9 --levels 2 --windows 2 \
  --steps 100 --ranks 3 --dynsweep "$DYNSWEEP" --centre nearest > "$T/out.txt"
cat "$T/fr/fractal.txt"
check "three maps in the table" test "$(grep -c '^dense \|^zoom1 \|^zoom2 ' "$T/fr/fractal.txt")" = 3
"$PY" - "$T/fr/fractal.txt" > "$T/win.txt" <<'PY' || true
import sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
ok = True
for prev, cur in zip(rows, rows[1:]):
    (a0, a1), (b0, b1) = [map(float, prev[i].split("..")) for i in (1, 2)]
    (c0, c1), (d0, d1) = [map(float, cur[i].split("..")) for i in (1, 2)]
    tenth = abs((c1 - c0) / (a1 - a0) - 0.1) < 1e-3 and abs((d1 - d0) / (b1 - b0) - 0.1) < 1e-3
    inside = a0 <= c0 and c1 <= a1 and b0 <= d0 and d1 <= b1
    dim = float(cur[5])
    print(cur[0], "tenth", tenth, "inside", inside, "dimension", dim)
    ok &= tenth and inside and 1.0 <= dim <= 2.0
print("ALL", ok)
PY
cat "$T/win.txt"
check "each window a tenth of the last, inside it, dimension in [1, 2]" grep -q "^ALL True" "$T/win.txt"
dense_dim=$(awk '$1 == "dense" {print $6}' "$T/fr/fractal.txt")
check "the dense map has a boundary (dimension $dense_dim in [1, 2])" \
  awk -v d="$dense_dim" 'BEGIN { exit !(d >= 1 && d <= 2) }'
# the first window again, dense, over the very values the refined map has
read -r lo_in hi_in lo_out hi_out < <(PYTHONPATH="$DS_SRC/python" "$PY" -c "
import dynsweep
c = dynsweep.open('$T/fr/zoom1.h5').map()['coords']
a, b = c['optimizer.lr_in'], c['optimizer.lr_out']
print('%.17g %.17g %.17g %.17g' % (a[0], a[-1], b[0], b[-1]))")
drun 3 "$DS_SRC/sweeps/repro/fractal_tanh.yaml" -o "$T/w1.h5" --quiet --set train.steps=100 \
  --set "grid.optimizer.lr_in={start: $lo_in, stop: $hi_in, num: 33, spacing: log}" \
  --set "grid.optimizer.lr_out={start: $lo_out, stop: $hi_out, num: 33, spacing: log}"
agree=$(PYTHONPATH="$DS_SRC/python" "$PY" -c "
import dynsweep
a = dynsweep.open('$T/fr/zoom1.h5').map(); b = dynsweep.open('$T/w1.h5').map()
import numpy as np
assert all(np.array_equal(a['coords'][k], b['coords'][k]) for k in a['coords']), 'coordinates differ'
print('%.4f' % (a['outcome'] == b['outcome']).mean())")
check "zoom1 (refined) agrees with the same window dense on >= 99.5% of pixels ($agree)" \
  awk -v a="$agree" 'BEGIN { exit !(a >= 0.995) }'
cmpc=$(PYTHONPATH="$DS_SRC/python" "$PY" - "$DS_SRC/tools/repro_fractal.py" "$T/fr/dense.h5" <<'PY'
import importlib.util, sys
import numpy as np
from dynsweep import maps
spec = importlib.util.spec_from_file_location("rf", sys.argv[1])
rf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rf)
_, sign, _, _, _ = rf.analyse(sys.argv[2])
b = maps.boundary(sign)
n = sign.shape[0]
def held(rule):  # boundary blocks inside the next window (a tenth of the map) at rule's centre
    ci, co = rf.centre(sign, 0, n - 1, 0, n - 1, rule)  # in block coordinates
    w = (n - 1) / 10
    i0, i1 = int(np.floor(ci - w / 2)), int(np.ceil(ci + w / 2))
    j0, j1 = int(np.floor(co - w / 2)), int(np.ceil(co + w / 2))
    return int(b[max(i0, 0):i1, max(j0, 0):j1].sum())
print(held("densest"), held("nearest"))
PY
)
read -r dn nn <<<"$cmpc"
check "the densest rule's next window holds more boundary than nearest's ($dn vs $nn blocks)" test "$dn" -gt "$nn"
for f in dense zoom1 zoom2; do
  check "$f.png drawn and not blank" "$PY" -c "
import matplotlib.image as im, numpy as np
a = im.imread('$T/fr/$f.png'); assert a.shape[0] > 200 and np.std(a[..., :3]) > 0.05"
done
report
