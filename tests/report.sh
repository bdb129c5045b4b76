#!/usr/bin/env bash
# tools/dynsweep_store.py and tools/dynsweep-report on real stores: the module
# against h5py (also while a sweep is being written); every figure of the
# report has data, its CSV (as many rows as the figure's points) and PNG; the
# maps and loss curves are plotly divs; the page is self-contained; on a
# catapult sweep (seed 003, reduced) the catapult cells have their own colour,
# the counts are `dynsweep ls`'s, the loss y range stays below the diverged
# runs, lambda0/lr_eta_crit are `dynsweep export`'s; the pages render in
# headless Chromium to non-blank screenshots. Skips (exit 0) without the
# Python packages; skips only the rendering without chromium.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
REPORT=$DS_SRC/tools/dynsweep-report
TR="$PY $DS_SRC/tests/test_report_store.py"
if ! $PY -c "import h5py, numpy, yaml, matplotlib, plotly" 2>/dev/null; then
  echo "skip: /usr/bin/python3 lacks h5py, numpy, yaml, matplotlib or plotly (apt-get install python3-h5py python3-numpy python3-yaml python3-matplotlib python3-plotly)"
  exit 0
fi

drun 3 "$DS_SRC/tests/sweeps/small.yaml" -o "$T/s.h5" -q
check "module vs h5py (and a copy with Hessian/NTK series; lambda0 from hessian/top)" $TR check "$T/s.h5" "$T"

# reading while a sweep is being written
mpirun --oversubscribe -n 2 "$DYNSWEEP" run "$DS_SRC/sweeps/demo.yaml" -o "$T/live.h5" -q &
pid=$!
check "module reads the store while the sweep runs" $TR live "$T/live.h5" "$pid"
wait "$pid" || bad "demo sweep failed"

# seed 003 (sweeps/repro/003_catapult.yaml) on 2 widths x 12 learning rates, 120 steps
sed -e 's/steps: 600/steps: 120/' -e 's/width: \[16, 64, 256, 1024, 4096\]/width: [16, 256]/' \
    -e 's/num: 23/num: 12/' -e 's/ntk: {every: 100}/ntk: {every: 40}/' \
    "$DS_SRC/sweeps/repro/003_catapult.yaml" > "$T/cat.yaml"
grep -q "num: 12" "$T/cat.yaml" && grep -q "every: 40" "$T/cat.yaml" || bad "reduced 003 sweep not made"
drun 2 "$T/cat.yaml" -o "$T/cat.h5" -q

check "static report with Hessian/NTK series" "$REPORT" "$T/eig.h5" -o "$T/eig.html" --x depth --y model.type --color width --static
check "... hessian, ntk, the lr*lambda0 maps, loss, test loss, singular values have data" \
  $TR figures "$T/eig.html" "$T/eig.json" 9 hessian ntk map-outcome map-outcome-norm map-peak_ratio map-min_loss loss test-loss sv
check "... no plotly.js in a --static page" bash -c "! grep -q plotlyjs '$T/eig.html'"
check "... the chosen axes" $PY -c "import json,sys; m=json.load(open('$T/eig.json')); sys.exit(0 if (m['x'],m['y'],m['color'])==('depth','model.type','width') else 1)"
check "report of the demo store" "$REPORT" "$T/live.h5" -o "$T/demo.html"
check "... every figure has data" $TR figures "$T/demo.html" "$T/demo.json" 6 map-outcome loss sv
check "... notes the missing Hessian and the missing lambda0" \
  $PY -c "import json,sys; n=' '.join(s['note'] for s in json.load(open('$T/demo.json'))['skipped']); sys.exit(0 if \"no 'hessian/top' series in this store (not recorded)\" in n and 'no point recorded ntk/top or hessian/top at step 0' in n else 1)"
check "report of the catapult sweep" "$REPORT" "$T/cat.h5" -o "$T/cat.html"
check "... every figure has data" $TR figures "$T/cat.html" "$T/cat.json" 6 map-outcome map-outcome-norm map-peak_ratio map-steps_to_99 loss ntk
"$DYNSWEEP" ls "$T/cat.h5" > "$T/cat.ls"
"$DYNSWEEP" export "$T/cat.h5" --series ntk/top -o "$T/ntk.csv"
"$DYNSWEEP" export "$T/cat.h5" --series ntk/critical_lr -o "$T/crit.csv"
"$DYNSWEEP" export "$T/cat.h5" -o "$T/summary.csv"
check "... catapult colours, counts, loss y range, lambda0 (= export's)" \
  $TR catapult "$T/cat.html" "$T/cat.json" "$T/cat.h5" "$T/cat.ls" "$T/ntk.csv" "$T/crit.csv" "$T/summary.csv"
# the same with optimizer.lr_units: lambda0 (the grid's lr is eta*lambda0, issue 24): lr 0.02
# leaves width 16 unconverged, 2.2-3.8 catapult, >= 4.3 diverge
sed -e 's/optimizer: {type: gd}/optimizer: {type: gd, lr_units: lambda0}/' \
    -e 's/  lr: {start: 0.0003, stop: 0.0036, num: 12}/  lr: [0.02, 0.1, 0.5, 1, 1.5, 1.9, 2.2, 2.6, 3, 3.4, 3.8, 4.3, 5, 6]/' \
    "$T/cat.yaml" > "$T/lam.yaml"
grep -q "lr_units: lambda0" "$T/lam.yaml" && grep -q "lr: \[0.02" "$T/lam.yaml" || bad "lr_units lambda0 sweep not made"
drun 2 "$T/lam.yaml" -o "$T/lam.h5" -q
check "report of the catapult sweep with lr_units: lambda0" "$REPORT" "$T/lam.h5" -o "$T/lam.html"
"$DYNSWEEP" ls "$T/lam.h5" > "$T/lam.ls"
"$DYNSWEEP" export "$T/lam.h5" -o "$T/lam.csv"
check "... lr axis = eta*lambda0, NTK ratio lr/2 at step 0, unconverged counted and coloured" \
  $TR lambda0 "$T/lam.html" "$T/lam.json" "$T/lam.h5" "$T/lam.ls" "$T/lam.csv"
# model.type: [relu, tanh] x width x lr (issue 24, item 4): small multiples per model.type
cat > "$T/rt.yaml" <<'YEOF'
name: relu-tanh
seed: 5
model: {depth: 2, bias: false}
data: {kind: teacher, n_train: 64, n_test: 0, d_in: 8, d_out: 1}
loss: {type: mse, reduction: half_mean}
optimizer: {type: gd}
train: {steps: 150, diverge_above: 1.0e6}
record: {series: [loss], every: 5, per_decade: 5, spectra: {ntk: {every: 50}}}
grid:
  model.type: [relu, tanh]
  width: [16, 64]
  lr: [0.05, 0.2, 0.5, 1, 2, 4, 8]
YEOF
drun 2 "$T/rt.yaml" -o "$T/rt.h5" -q
check "report of a relu/tanh sweep" "$REPORT" "$T/rt.h5" -o "$T/rt.html"
"$DYNSWEEP" export "$T/rt.h5" -o "$T/rt.csv"
check "... maps one panel per model.type (no 'C 1/2'), cells = export's, curves never mix types" \
  $TR split "$T/rt.html" "$T/rt.json" "$T/rt.csv"
# map stores (issue 24, item 4; was "0 figures, 0 points"): the 16 x 16 tanh map and a
# refined 33 x 33 one (9 x 9 coarse, 2 levels), 200 steps; the figures' pixels are
# `dynsweep map`'s arrays, the boundary dimension its --fractal-dimension
sed -e 's/steps: 1000/steps: 200/' "$DS_SRC/sweeps/examples/tanh_map.yaml" > "$T/tm.yaml"
sed -e 's/num: 16/num: 9/g' "$T/tm.yaml" > "$T/tr.yaml"
printf '  refine: {levels: 2}\n' >> "$T/tr.yaml"
grep -q "steps: 200" "$T/tm.yaml" && grep -q "num: 9" "$T/tr.yaml" || bad "map sweeps not made"
drun 2 "$T/tm.yaml" --set map=true -o "$T/tm.h5" -q
drun 2 "$T/tr.yaml" --set map=true -o "$T/tr.h5" -q
for n in tm tr; do
  ref=0; met=measure
  [ $n = tr ] && ref=1 && met=outcome  # inferred pixels have no measure: the outcome's boundary
  check "report of the map store $n" "$REPORT" "$T/$n.h5" -o "$T/$n.html"
  mkdir -p "$T/npz$n"
  for k in measure outcome computed; do "$DYNSWEEP" map "$T/$n.h5" -o "$T/npz$n/$k.png" --metric $k > /dev/null; done
  "$DYNSWEEP" map "$T/$n.h5" -o "$T/npz$n/dim.png" --metric $met --fractal-dimension > "$T/npz$n/dim.txt"
  check "... measure, outcome, computed/inferred, boundary dimension = dynsweep map's" \
    $TR mapstore "$T/$n.html" "$T/$n.json" "$T/npz$n" "$T/npz$n/dim.txt" $ref
done
check "... every figure of the refined map has data" $TR figures "$T/tr.html" "$T/tr.json" 4 map-measure map-outcome map-computed map-boundary
set +e
"$REPORT" "$T/s.h5" -o "$T/bad.html" --x nope 2>"$T/err"; rc=$?
"$REPORT" "$T/missing.h5" -o "$T/bad2.html" 2>>"$T/err"; rc2=$?
set -e
check "unknown --x: exit 2" test "$rc" -eq 2
check "missing store: exit 2" test "$rc2" -eq 2
check "... one line each, nothing written" bash -c "[ \$(wc -l < '$T/err') -eq 2 ] && [ ! -e '$T/bad.html' ] && [ ! -e '$T/bad2_files' ]"

# render in headless Chromium, without network (the page must not need it)
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
  echo "skip: chromium not installed (apt-get install chromium): the page was not rendered"
else
  for page in cat demo lam rt tr; do
    prof=$(mktemp -d)
    timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
      --disable-background-networking --disable-component-update --disable-sync \
      --host-resolver-rules="MAP * ~NOTFOUND" --virtual-time-budget=5000 \
      --user-data-dir="$prof" --screenshot="$T/$page.png" --window-size=1400,3000 \
      "file://$T/$page.html" >"$T/chrome.log" 2>&1 || true
    rm -rf "$prof"
    check "chromium rendered $page.html to a PNG" test -s "$T/$page.png"
    check "... which is 1400x3000, not blank, with the outcome colours the plotly maps draw" $PY - "$T/$page.png" "$T/$page.json" <<'PYEOF'
import json, sys
import matplotlib.image as mpimg
import numpy as np
im = (mpimg.imread(sys.argv[1])[..., :3] * 255).round()
meta = json.load(open(sys.argv[2]))
h, w = im.shape[:2]
nonwhite = float((im.min(axis=2) < 230).mean())
coloured = float((im.max(axis=2) - im.min(axis=2) > 50).mean())
px = {k: int((np.abs(im - np.array([int(c[i:i + 2], 16) for i in (1, 3, 5)])).max(axis=2) < 4).sum())
      for k, c in meta["outcome_colors"].items()}
# the most common outcome, and diverged where any point diverged, on screen in their colours
oc = meta["outcome_counts"]
big = [max(oc, key=oc.get)] + (["diverged"] if oc["diverged"] else [])
print("screenshot %dx%d: %.1f%% non-white, %.2f%% coloured pixels; %s; must show: %s"
      % (w, h, 100 * nonwhite, 100 * coloured, px, big))
sys.exit(0 if (w, h) == (1400, 3000) and nonwhite > 0.03 and coloured > 0.005 and
         min(px[k] for k in big) > 1000 else 1)
PYEOF
  done
  # DS_KEEP_SCREENSHOT=DIR/NAME.png keeps the catapult page's, DIR/NAME-lam.png the lambda0 page's
  if [ -n "${DS_KEEP_SCREENSHOT:-}" ]; then
    cp "$T/cat.png" "$DS_KEEP_SCREENSHOT"
    cp "$T/lam.png" "${DS_KEEP_SCREENSHOT%.png}-lam.png"
  fi
fi
report
