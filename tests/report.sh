#!/usr/bin/env bash
# tools/dynsweep_store.py and tools/dynsweep-report on real stores: the module
# against h5py (also while a sweep is being written), every figure of the
# report has data, the page is self-contained, and it renders in headless
# Chromium to a non-blank screenshot. Skips (exit 0) without matplotlib;
# skips only the rendering without chromium.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
REPORT=$DS_SRC/tools/dynsweep-report
if ! $PY -c "import h5py, numpy, yaml, matplotlib" 2>/dev/null; then
  echo "skip: /usr/bin/python3 lacks h5py, numpy, yaml or matplotlib (apt-get install python3-h5py python3-numpy python3-yaml python3-matplotlib)"
  exit 0
fi

drun 3 "$DS_SRC/tests/sweeps/small.yaml" -o "$T/s.h5" -q
check "module vs h5py (and a copy with Hessian/NTK series)" $PY "$DS_SRC/tests/test_report_store.py" check "$T/s.h5" "$T"

# reading while a sweep is being written
mpirun --oversubscribe -n 2 "$DYNSWEEP" run "$DS_SRC/sweeps/demo.yaml" -o "$T/live.h5" -q &
pid=$!
check "module reads the store while the sweep runs" $PY "$DS_SRC/tests/test_report_store.py" live "$T/live.h5" "$pid"
wait "$pid" || bad "demo sweep failed"

figcheck() { # HTML JSON MIN_FIGURES [required figure ids...]
  $PY - "$@" <<'EOF'
import json, re, sys
html, side, nmin, need = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
page = open(html, encoding="utf-8").read()
meta = json.load(open(side))
figs = {f["id"]: f["points"] for f in meta["figures"]}
tags = re.findall(r"<figure id='fig-([^']+)' data-points='(\d+)'>", page)
imgs = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
print("figures:", figs, "skipped:", [s["note"] for s in meta["skipped"]])
ok = len(figs) >= nmin and all(v > 0 for v in figs.values())
ok &= dict((k, int(v)) for k, v in tags) == figs and len(imgs) == len(figs)
ok &= all(len(i) > 1000 for i in imgs)
ok &= all(n in figs for n in need)
ok &= not re.search(r"(src|href)=['\"]?(https?:|file:|//)", page)  # self-contained
ok &= "Sweep file" in page and "sweep_hash" in page and "Provenance" in page
sys.exit(0 if ok else 1)
EOF
}
check "report of small.yaml" "$REPORT" "$T/s.h5" -o "$T/r.html"
check "... every figure has data (phase, loss, test loss, singular values)" \
  figcheck "$T/r.html" "$T/r.json" 5 phase-outcome phase-final_loss loss test-loss sv
check "... notes the missing Hessian/NTK series" grep -q "hessian_top.*not recorded" "$T/r.html"
check "report with Hessian/NTK series" "$REPORT" "$T/eig.h5" -o "$T/eig.html" --x depth --y model.type --color width
check "... hessian and ntk figures have data" figcheck "$T/eig.html" "$T/eig.json" 7 hessian ntk phase-outcome
check "... the chosen axes" $PY -c "import json,sys; m=json.load(open('$T/eig.json')); sys.exit(0 if (m['x'],m['y'])==('depth','model.type') else 1)"
check "report of the demo store" "$REPORT" "$T/live.h5" -o "$T/demo.html"
check "... every figure has data" figcheck "$T/demo.html" "$T/demo.json" 5
set +e
"$REPORT" "$T/s.h5" -o "$T/bad.html" --x nope 2>"$T/err"; rc=$?
"$REPORT" "$T/missing.h5" -o "$T/bad.html" 2>>"$T/err"; rc2=$?
set -e
check "unknown --x: exit 2" test "$rc" -eq 2
check "missing store: exit 2" test "$rc2" -eq 2

# render in headless Chromium
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
  echo "skip: chromium not installed (apt-get install chromium): the page was not rendered"
else
  for page in eig demo; do
    prof=$(mktemp -d)
    timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
      --disable-background-networking --disable-component-update --disable-sync \
      --user-data-dir="$prof" --screenshot="$T/$page.png" --window-size=1200,3000 \
      "file://$T/$page.html" >"$T/chrome.log" 2>&1 || true
    rm -rf "$prof"
    check "chromium rendered $page.html to a PNG" test -s "$T/$page.png"
    check "... which is 1200x3000 and not blank" $PY - "$T/$page.png" <<'EOF'
import sys
import matplotlib.image as mpimg
import numpy as np
im = mpimg.imread(sys.argv[1])[..., :3]
h, w = im.shape[:2]
nonwhite = float((im.min(axis=2) < 0.9).mean())
coloured = float((im.max(axis=2) - im.min(axis=2) > 0.2).mean())  # plot colours, not just text
print("screenshot %dx%d: %.1f%% non-white, %.2f%% coloured pixels" % (w, h, 100 * nonwhite, 100 * coloured))
sys.exit(0 if (w, h) == (1200, 3000) and nonwhite > 0.03 and coloured > 0.005 else 1)
EOF
  done
  [ -n "${DS_KEEP_SCREENSHOT:-}" ] && cp "$T/eig.png" "$DS_KEEP_SCREENSHOT"
fi
report
