#!/usr/bin/env bash
# issue 13: seed 003's catapult map (sweeps/repro/003_catapult_map.yaml) in
# reduced form: the two-layer linear net over eta*lambda_0 x width
# (optimizer.lr_units: lambda0; widths 16 and 256), lr from 0.5 to 6 in 12
# values refined 6 levels (a step of 0.0078). Checks: the boundaries
# converged|catapult and catapult|diverged of width 256 lie within 0.5% of 2
# and 4, width 16 within 2%; the order is
# converged < catapult < diverged along lr; no pixel is left unknown and at
# most 15% are trained.
. "$(dirname "$0")/lib.sh"
sweep=$DS_SRC/sweeps/repro/003_catapult_map.yaml
R=(--set 'grid.width=[16, 256]' --set 'grid.lr={start: 0.5, stop: 6, num: 12}' --set grid.refine.levels=6)
edges() { # edges STORE: per width "WIDTH lo_edge hi_edge trained_share holes order_ok"
  PYTHONPATH="$DS_SRC/python" "$PY" - "$1" <<'PY'
import sys, numpy as np, dynsweep
m = dynsweep.open(sys.argv[1]).map()
o, x, w = m["outcome"], m["coords"]["lr"], m["coords"]["width"]
share = m["computed"].mean()
for i, wd in enumerate(w):
    r = o[i]
    a = np.nonzero((r[:-1] == 0) & (r[1:] == 2))[0]   # converged -> catapult
    b = np.nonzero((r[:-1] == 2) & (r[1:] == 1))[0]   # catapult -> diverged
    lo = (x[a[0]] + x[a[0] + 1]) / 2 if len(a) else float("nan")
    hi = (x[b[0]] + x[b[0] + 1]) / 2 if len(b) else float("nan")
    order = bool(np.all(np.diff(np.where(r == 2, 1, np.where(r == 1, 2, 0))) >= 0))
    print(int(wd), "%.5f %.5f %.4f %d %d" % (lo, hi, share, (r < 0).sum(), order))
PY
}
# (the NQM of a two-layer linear net is the net itself; the ReLU net's NQM,
# whose lower edge is not at 2, is measured in docs/repro/003_catapult.md)
for v in linear; do
  drun 3 "$sweep" -o "$T/$v.h5" --quiet "${R[@]}"
  edges "$T/$v.h5" > "$T/$v.txt"
  cat "$T/$v.txt"
  while read -r wd lo hi share holes order; do
    tol=$([ "$wd" = 256 ] && echo 0.005 || echo 0.02)
    check "$v width $wd: converged|catapult at $lo, within $tol of 2" \
      awk -v e="$lo" -v t="$tol" 'BEGIN { exit !(e > 0 && (e - 2 < 0 ? 2 - e : e - 2) <= 2 * t) }'
    check "$v width $wd: catapult|diverged at $hi, within $tol of 4" \
      awk -v e="$hi" -v t="$tol" 'BEGIN { exit !(e > 0 && (e - 4 < 0 ? 4 - e : e - 4) <= 4 * t) }'
    check "$v width $wd: converged < catapult < diverged along lr, no unknown pixel" \
      test "$order $holes" = "1 0"
  done < "$T/$v.txt"
  share=$(awk 'NR == 1 {print $4}' "$T/$v.txt")
  check "$v: trained $share of the pixels (<= 15%)" awk -v s="$share" 'BEGIN { exit !(s <= 0.15) }'
done
# the image's lr axis says what its values are (eta * lambda_0), also when
# lr_units comes from --set (the store keeps it under overrides:)
"$DYNSWEEP" map "$T/linear.h5" -o "$T/map.png" --metric outcome >/dev/null
lab() { "$PY" -c "import numpy as np, sys; z = np.load(sys.argv[1]); print(z['xlabel'], '|', z['ylabel'])" "$1"; }
l=$(lab "$T/map.npz")
check "dynsweep map labels the lr axis 'lr = eta * lambda_0' ($l)" grep -q "lr = eta \* lambda_0" <<<"$l"
sed 's/lr_units: lambda0/lr_units: absolute/' "$sweep" > "$T/abs.yaml"
drun 2 "$T/abs.yaml" -o "$T/set.h5" --quiet --set 'grid.width=[16]' --set 'grid.lr={start: 0.5, stop: 6, num: 5}' \
  --set optimizer.lr_units=lambda0
"$DYNSWEEP" map "$T/set.h5" -o "$T/set.png" --metric outcome >/dev/null
l=$(lab "$T/set.npz")
check "... also when lr_units: lambda0 came from --set ($l)" grep -q "lr = eta \* lambda_0" <<<"$l"
drun 2 "$T/abs.yaml" -o "$T/abs.h5" --quiet --set 'grid.width=[16]' --set 'grid.lr={start: 0.01, stop: 0.1, num: 5}'
"$DYNSWEEP" map "$T/abs.h5" -o "$T/abs.png" --metric outcome >/dev/null
l=$(lab "$T/abs.npz")
check "... and plain 'lr' for absolute learning rates ($l)" test "${l%% |*}" = lr -o "${l##*| }" = lr
report
