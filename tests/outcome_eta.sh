#!/usr/bin/env bash
# Issue 24 items 1 and 2 (tests/outcome_eta.cmake).
. "$(dirname "$0")/lib.sh"
[ "$HAVE_H5PY" = 1 ] || { echo "skip: /usr/bin/python3 lacks h5py/numpy"; exit 0; }
D=$DYNSWEEP
export PYTHONPATH=$DS_SRC/python

# 1. lr in units of 1/lambda0: a point at lr 3 has lr_lambda0 3 (not 3 x lambda0)
cat > "$T/lam.yaml" <<'YEOF'
name: lam-units
seed: 3
model: {type: linear, bias: false, depth: 2, param: ntk, init: ntk}
data: {kind: two_gaussians, n_train: 64, n_test: 0}
loss: {type: mse, reduction: half_sum}
optimizer: {type: gd, lr_units: lambda0}
train: {steps: 300}
record:
  series: [loss]
  spectra: {catapult_factor: 1.001, ntk: {every: 1000}}
grid:
  width: [16, 64]
  lr: [0.5, 1.5, 3, 5]
YEOF
drun 2 "$T/lam.yaml" -o "$T/lam.h5" -q
"$D" export "$T/lam.h5" -o "$T/lam.csv"
check "lr_units lambda0: export's lr_lambda0 = lr, lr_eta_crit = lr/2 (half_sum), eta = stored series = lr/lambda0" \
  "$PY" - "$T/lam.h5" "$T/lam.csv" <<'PYEOF'
import csv, sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
rows = list(csv.DictReader(open(sys.argv[2])))
ok = len(rows) == 8
for r in rows:
    lr, lam, eta = float(r["lr"]), float(r["lambda0"]), float(r["eta"])
    ok &= abs(float(r["lr_lambda0"]) - lr) <= 1e-12 * lr
    ok &= abs(float(r["lr_eta_crit"]) - lr / 2) <= 1e-12 * lr
    ok &= abs(eta * lam - lr) <= 1e-12 * lr
    ok &= "eta" in f["points"][r["id"]] if "points" in f else True
    if not ok:
        print("point", r["id"], r); break
sys.exit(0 if ok else 1)
PYEOF
"$D" ls "$T/lam.h5" --where 'lr=3' --add lr_lambda0,lr_eta_crit > "$T/ls"
check "ls: the points at lr 3 show lr_lambda0 3 and lr_eta_crit 1.5" \
  awk 'NR>1 && $1 ~ /^[0-9]+$/ && $7 == "done" { n++; if ($5 != 3 || $6 != 1.5) bad=1 } END { exit !(n == 2 && !bad) }' "$T/ls"
"$D" phase "$T/lam.h5" --x lr_lambda0 --y width > "$T/ph"
check "phase --x lr_lambda0: columns at 0.5 1.5 3 5 (c c C D)" \
  bash -c "grep -q '^width \\\\ lr_lambda0 *0.5 *1.5 *3 *5' '$T/ph' && grep -Eq '^16 +c +c +C +D' '$T/ph'"
check "python: summary() has eta, lr_lambda0 = lr" "$PY" - "$T/lam.h5" <<'PYEOF'
import sys, numpy as np, dynsweep
d = dynsweep.open(sys.argv[1]).summary()
ok = np.allclose(d.lr_lambda0, d.lr, rtol=1e-12) and np.allclose(d.eta * d.lambda0, d.lr, rtol=1e-12)
ok &= np.allclose(d.lr_eta_crit, d.lr / 2, rtol=1e-12)
sys.exit(0 if ok else 1)
PYEOF

# 2. converged means converged: the demo's point 15 (ReLU, depth 4, lr 0.005) ends at
# loss 0.097 against a floor of 0.0002: unconverged; point 7 (linear, at the floor): converged
drun 2 "$DS_SRC/sweeps/demo.yaml" -o "$T/demo.h5" -q
"$D" ls "$T/demo.h5" > "$T/dls"
check "demo point 15 is unconverged, point 7 converged" \
  awk '$1 == 15 { a = ($9 == "unconverged") } $1 == 7 { b = ($9 == "converged") } END { exit !(a && b) }' "$T/dls"
check "ls counts unconverged points" grep -Eq '^outcomes:.* [1-9][0-9]* unconverged' "$T/dls"
n=$("$D" ls "$T/demo.h5" --where outcome=unconverged | awk '$1 ~ /^[0-9]+$/ && $9 == "unconverged"' | wc -l)
check "--where outcome=unconverged selects them ($n)" test "$n" -gt 0
"$D" phase "$T/demo.h5" --x lr --y depth --where 'model.type=relu,width=16' > "$T/dph"
check "phase: letter u" grep -Eq '^4 +u' "$T/dph"
"$D" export "$T/demo.h5" -o "$T/demo.csv"
check "export: outcome of point 15 is unconverged" \
  bash -c "awk -F, 'NR==1 { for (i=1;i<=NF;i++) if (\$i==\"outcome\") c=i } \$1==15 { print \$c }' '$T/demo.csv' | grep -qx unconverged"
# 3. a store of the previous version (outcome 0 = "did not diverge") reads the same
cp "$T/demo.h5" "$T/old.h5"
"$PY" - "$T/old.h5" <<'PYEOF'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    s = f["summary"][...]
    s["outcome"] = np.where(np.isin(s["outcome"], (5, 6)), 0, s["outcome"])
    f["summary"][...] = s
PYEOF
"$D" ls "$T/old.h5" | awk '{print $1, $9}' > "$T/old.ls"
awk '{print $1, $9}' "$T/dls" > "$T/new.ls"
check "an old store's code 0 is re-classified by the same rule (ls)" cmp -s "$T/old.ls" "$T/new.ls"
# show names the outcome of one point: the same re-classification (cmd_show, outcome.h)
for st in demo old; do
  n=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/' "$T/dls" | wc -l)
  for i in $(seq 0 $((n - 1))); do
    echo "$i $("$D" show "$T/$st.h5" "$i" | head -1 | sed -E 's/.*; outcome ([a-z]+) .*/\1/')"
  done > "$T/$st.show"
done
awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ {print $1, $9}' "$T/dls" > "$T/new.ls2"
check "show: an old store's code 0 named as ls names it, point by point ($(wc -l < "$T/old.show") points, $(grep -c unconverged "$T/old.show") unconverged)" \
  bash -c "cmp -s '$T/old.show' '$T/new.ls2' && cmp -s '$T/demo.show' '$T/new.ls2' && grep -q unconverged '$T/old.show'"
check "... and in Python" "$PY" - "$T/old.h5" "$T/demo.h5" <<'PYEOF'
import sys, dynsweep
a, b = (dynsweep.open(p).summary() for p in sys.argv[1:3])
sys.exit(0 if list(a.outcome) == list(b.outcome) and (a.outcome == "unconverged").any() else 1)
PYEOF
report
