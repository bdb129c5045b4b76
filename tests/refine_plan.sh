#!/usr/bin/env bash
# issue 13: sizing a deeper refinement from the levels run so far. A refined
# map (the study's tanh map, 9 x 9 coarse, 2 levels, 100 steps): `dynsweep
# status` lists the pixels trained at each level (checked against the store's
# computed mask read with h5py, levels recomputed independently) and their
# growth; `dynsweep plan --from STORE` with 4 levels extrapolates levels 3-4
# at the last growth, and the same store extended to 4 levels trains a number
# of pixels within 2x of that estimate (printed beside the smooth-boundary
# rule's). Bad --from stores are refused with exit 2 and what differs: a dense
# map, another window, more levels than the sweep, one level only, no store.
. "$(dirname "$0")/lib.sh"
[ "$HAVE_H5PY" = 1 ] || { echo "skip: python3-h5py / python3-numpy are not installed"; report; exit 0; }
sweep=$DS_SRC/sweeps/repro/fractal_tanh.yaml
win=(--set train.steps=100 --set 'grid.optimizer.lr_in={start: 1000, stop: 1e5, num: 9, spacing: log}'
     --set 'grid.optimizer.lr_out={start: 10, stop: 1000, num: 9, spacing: log}')
drun 3 "$sweep" -o "$T/r.h5" --quiet "${win[@]}" --set 'grid.refine={levels: 2}'
"$DYNSWEEP" status "$T/r.h5" >"$T/st.txt"
cat "$T/st.txt"
read -r l0 l1 l2 < <(sed -n 's/^levels:  trained \([0-9]*\) coarse | \([0-9]*\) \([0-9]*\)$/\1 \2 \3/p' "$T/st.txt")
ref=$(PYTHONPATH="$DS_SRC/python" "$PY" -c "
import dynsweep, numpy as np
m = dynsweep.open('$T/r.h5').map(); c = m['computed']; n = c.shape[0]
def lvl(i):
    return 0 if i == 0 else 2 - min((i & -i).bit_length() - 1, 2)
L = np.array([[max(lvl(i), lvl(j)) for j in range(n)] for i in range(n)])
print(*[int((c & (L == k)).sum()) for k in range(3)])")
check "status: trained per level ($l0 | $l1 $l2) equal the store's computed mask ($ref)" \
  test "$l0 $l1 $l2" = "$ref" -a "$l0" = 81
check "status: the growth a level" grep -qE '^         growth a level [0-9]+\.[0-9]{2}x$' "$T/st.txt"

# plan --from: levels 3-4 at the last growth
"$DYNSWEEP" plan "$sweep" "${win[@]}" --set 'grid.refine={levels: 4}' --from "$T/r.h5" >"$T/plan.txt"
cat "$T/plan.txt"
est=$(sed -n 's/^  so about \([0-9]*\) trained.*/\1/p' "$T/plan.txt")
smooth=$(sed -n 's/.*with a smooth boundary about \([0-9]*\) trained.*/\1/p' "$T/plan.txt")
check "plan --from: the levels so far, as status says" grep -q "^    $l1 $l2 (growth " "$T/plan.txt"
check "plan --from: levels 3..4 extrapolated" grep -qE '^  at [0-9.]+x a level, levels 3\.\.4 about [0-9]+ [0-9]+$' "$T/plan.txt"
# the same map refined to 4 levels: an extension of the store (nothing retrained)
drun 3 "$sweep" -o "$T/r.h5" --quiet "${win[@]}" --set 'grid.refine={levels: 4}'
got=$(sed -n 's/^ *\([0-9]*\) trained (.*/\1/p' < <("$DYNSWEEP" status "$T/r.h5"))
"$DYNSWEEP" status "$T/r.h5" | grep '^levels\|growth'
check "extended to 4 levels: $got trained, within 2x of plan --from's $est (smooth rule: $smooth)" \
  awk -v g="$got" -v e="$est" 'BEGIN { exit !(g > 0 && e > 0 && e <= 2 * g && g <= 2 * e) }'
check "... and closer than the smooth-boundary rule" \
  awk -v g="$got" -v e="$est" -v s="$smooth" 'BEGIN { d1 = e - g; d2 = s - g; exit !(d1 * d1 < d2 * d2) }'

# refused: what differs, exit 2
rc=$(code "$DYNSWEEP" plan "$sweep" "${win[@]}" --set 'grid.refine={levels: 3}' --from "$T/r.h5")
check "--from a store with more levels than the sweep: exit 2 ($rc)" test "$rc" = 2
check "... says so" grep -q "refined over 4 levels there, more than the sweep's 3" "$T/err"
drun 2 "$sweep" -o "$T/d.h5" --quiet --set train.steps=20 --set 'grid.optimizer.lr_in=[1, 10]' \
  --set 'grid.optimizer.lr_out=[1, 10]'
rc=$(code "$DYNSWEEP" plan "$sweep" "${win[@]}" --set 'grid.refine={levels: 4}' --from "$T/d.h5")
check "--from a dense map: exit 2 ($rc)" test "$rc" = 2
check "... says so" grep -q 'a dense map (no grid.refine): nothing to extrapolate from' "$T/err"
rc=$(code "$DYNSWEEP" plan "$sweep" --set train.steps=100 \
  --set 'grid.optimizer.lr_in={start: 1000, stop: 1e6, num: 9, spacing: log}' \
  --set 'grid.optimizer.lr_out={start: 10, stop: 1000, num: 9, spacing: log}' \
  --set 'grid.refine={levels: 4}' --from "$T/r.h5")
check "--from another window: exit 2 ($rc)" test "$rc" = 2
check "... names the axis and the values" \
  grep -q "axis optimizer.lr_in's coarse-grid value 2 is 1778.2794100389.* there, 2371.37.* in the sweep" "$T/err"
drun 3 "$sweep" -o "$T/one.h5" --quiet "${win[@]}" --set 'grid.refine={levels: 1}'
rc=$(code "$DYNSWEEP" plan "$sweep" "${win[@]}" --set 'grid.refine={levels: 4}' --from "$T/one.h5")
check "--from one level: exit 2 ($rc)" test "$rc" = 2
check "... needs two" grep -q '1 complete level of refinement there; the growth a level needs two' "$T/err"
rc=$(code "$DYNSWEEP" plan "$sweep" "${win[@]}" --set 'grid.refine={levels: 4}' --from "$T/none.h5")
check "--from a missing store: exit != 0 ($rc), names it" \
  bash -c "test '$rc' != 0 && grep -q '$T/none.h5' '$T/err'"
report
