#!/usr/bin/env bash
# map_measure.sh -- issue 24, item 3: a map pixel carries the study's measure
# (docs/maps.md, "The measure at the cap"): every pixel is trained for all T
# steps, so a loss that climbs above 10^6 L_0 and comes back is scored as the
# study scores it; non-finite values count as the cap; map.early_stop is the
# older, faster rule, and flips only pixels that went above the cap and came
# back. The map: the study's tanh net (sweeps/repro/fractal_tanh.yaml) at
# width 8, n = 72, 500 steps, 24 x 20 learning rates (~1 s a run).
. "$(dirname "$0")/lib.sh"
[ "$HAVE_H5PY" = 1 ] || { echo "map_measure: needs /usr/bin/python3 with h5py (skipped)"; exit 77; }
S=$DS_SRC/sweeps/repro/fractal_tanh.yaml
small=(--set model.width=8 --set data.d_in=8 --set data.n_train=72 --set train.steps=500 --set map.tile=64
       --set 'grid.optimizer.lr_in={start: 1, stop: 100000, num: 24, spacing: log}'
       --set 'grid.optimizer.lr_out={start: 1, stop: 10000, num: 20, spacing: log}')
"$DYNSWEEP" run "$S" -o "$T/ex.h5" -q "${small[@]}"
"$DYNSWEEP" run "$S" -o "$T/es.h5" -q "${small[@]}" --set map.early_stop=true
DYNSWEEP_TILE_NOSTOP=1 "$DYNSWEEP" run "$S" -o "$T/ns.h5" -q "${small[@]}"
# the study's measure from a loss series: two pixels trained one at a time by
# the ordinary worker, every step's loss recorded (a non-finite loss ends
# that run: the rest is NaN, as under GD it stays)
pix() { # NAME LR_IN LR_OUT
  cat >"$T/$1.yaml" <<EOF
name: px-$1
seed: 2024
model: {type: tanh, gain: 1.4142135623730951, param: meanfield, init: ntk, width: 8, depth: 2, bias: false}
data: {kind: iid_gaussian, d_in: 8, d_out: 1, n_train: 72, n_test: 0}
loss: {type: mse, reduction: mean}
optimizer: {type: gd, lr: 1.0}
train: {steps: 500, diverge_above: 1e300}
record: {series: [loss], every: 1}
grid: {optimizer.lr_in: [$2], optimizer.lr_out: [$3]}
EOF
  "$DYNSWEEP" run "$T/$1.yaml" -o "$T/$1.h5" -q
}
# lr_in = 10^5, lr_out = 10^(4*6/19): above 10^6 L_0 from step 21 to 26, then
# down to v = 0.84 (the study: converged, -1.01e7; the old rule: +4.14)
pix back 100000 18.329807108324356
# lr_in = 10^5, lr_out = 10^4: non-finite from step 2 on
pix inf 100000 10000
"$PY" - "$T" "$DS_SRC/python" >"$T/py.txt" 2>&1 <<'EOF' || true
import sys, h5py, numpy as np
t, src = sys.argv[1], sys.argv[2]
sys.path.insert(0, src)
import dynsweep
from dynsweep import maps
ex, es, ns = (h5py.File(f"{t}/{n}.h5", "r")["map"] for n in ("ex", "es", "ns"))
def say(k, v): print(f"{k} {v}")
def series(name):
    L = dynsweep.open(f"{t}/{name}.h5").series("loss")["value"].to_numpy()[:500]
    return np.concatenate([L, np.full(500 - len(L), np.nan)])
for name, ij in (("back", (23, 6)), ("inf", (23, 19))):
    L = series(name)
    want = maps.convergence_measure(L)
    got = float(ex["measure"][ij])
    v = L / L[0]
    say(f"{name}_above", int(np.sum(~(v < 1e6))))
    say(f"{name}_want", want)
    say(f"{name}_got", got)
    say(f"{name}_rel", abs(got - want) / abs(want))
    say(f"{name}_outcome", int(ex["outcome"][ij]))
    say(f"{name}_peak", float(ex["peak_ratio"][ij]))
    say(f"{name}_final", float(ex["final_ratio"][ij]))
    say(f"{name}_early", float(es["measure"][ij]))
# map.early_stop flips only pixels that went above the cap and came back
me, mr = ex["measure"][...], es["measure"][...]
flip = np.sign(me) != np.sign(mr)
say("flips", int(flip.sum()))
say("flips_not_back", int(np.sum(flip & ~((me < 0) & (ex["peak_ratio"][...] >= 1e6)))))
below = ex["peak_ratio"][...] < 1e6
same = all(np.array_equal(ex[k][...][below], es[k][...][below], equal_nan=True)
           for k in ("outcome", "step", "measure", "final_ratio", "peak_ratio"))
say("below_cap_same", int(same))
# the stop at a non-finite loss changes no record (DYNSWEEP_TILE_NOSTOP=1 trains on)
say("nostop_same", int(all(np.array_equal(ex[k][...], ns[k][...], equal_nan=True)
                           for k in ("outcome", "step", "measure", "final_ratio", "peak_ratio"))))
say("nonfinite_pixels", int(np.sum((ex["final_ratio"][...] >= 1e6) & (me > 0))))
EOF
cat "$T/py.txt"
val() { awk -v k="$1" '$1 == k {print $2}' "$T/py.txt"; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }
check "the pixel that comes back went above 10^6 L_0 ($(val back_above) steps)" lt 0 "$(val back_above)"
check "it is stored with the study's measure: $(val back_got) vs $(val back_want) from its series (rel $(val back_rel))" lt "$(val back_rel)" 1e-6
check "its outcome is not diverged (code $(val back_outcome)), its peak ratio the cap ($(val back_peak))" \
  bash -c "[ '$(val back_outcome)' != 1 ] && [ '$(val back_peak)' = 1000000.0 ]"
check "map.early_stop scores it diverged ($(val back_early))" lt 0 "$(val back_early)"
check "the non-finite pixel: $(val inf_got) vs the study's (non-finite -> cap) $(val inf_want) (rel $(val inf_rel))" lt "$(val inf_rel)" 1e-6
check "the non-finite pixel is diverged, its final ratio the cap ($(val inf_outcome), $(val inf_final))" \
  bash -c "[ '$(val inf_outcome)' = 1 ] && [ '$(val inf_final)' = 1000000.0 ]"
check "map.early_stop flips $(val flips) pixels, every one a pixel that came back from the cap ($(val flips_not_back) others)" \
  bash -c "[ '$(val flips)' -ge 1 ] && [ '$(val flips_not_back)' = 0 ]"
check "pixels that never reach the cap: the same records with and without map.early_stop" test "$(val below_cap_same)" = 1
check "stopping at a non-finite loss changes no record ($(val nonfinite_pixels) pixels end at the cap; DYNSWEEP_TILE_NOSTOP=1 bitwise equal)" \
  bash -c "[ '$(val nostop_same)' = 1 ] && [ '$(val nonfinite_pixels)' -ge 1 ]"
# the key: refused when not a bool, and part of the sweep's meaning
rc=$(code "$DYNSWEEP" plan "$S" --set map.early_stop=maybe)
check "map.early_stop=maybe: exit 2 naming the key (got $rc)" bash -c "[ $rc = 2 ] && grep -q 'map.early_stop' '$T/err'"
rc=$(code "$DYNSWEEP" run "$S" -o "$T/ex.h5" -q "${small[@]}" --set map.early_stop=true)
check "a store made without map.early_stop is not continued with it (exit $rc)" test "$rc" != 0
# the store says which rule made it; a store from before (tests/data/
# map_before_24.h5: this map at 20000 steps in tiles of 16, drained after 96
# pixels by the build before issue 24) is continued with a warning
check "the store records its measure (map_measure study)" \
  bash -c "h5dump -a map_measure '$T/ex.h5' | grep -q '\"study\"'"
cp "$DS_SRC/tests/data/map_before_24.h5" "$T/old.h5"
old=("${small[@]}" --set train.steps=20000 --set map.tile=16)
rc=$(code timeout -s USR1 3 "$DYNSWEEP" run "$S" -o "$T/old.h5" "${old[@]}")
check "an older map store continued: warned that its 96 trained pixels stopped at 10^6 L_0 (exit $rc)" \
  grep -q 'old.h5: made before the map measure followed the study (issue 24): its 96 trained pixels' "$T/err"
report
