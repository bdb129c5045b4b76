#!/usr/bin/env bash
# issue 13: map sweeps (map:, grid.refine; src/sched/maps.c). The study's
# tanh map (sweeps/examples/tanh_map.yaml) at reduced size:
#  - plan prints pixels, tiles, rank 0's memory and the disk bound (80 columns);
#  - a dense map is bitwise the same on 1 and 3 ranks;
#  - a refined map (9 x 9 coarse, 2 levels -> 33 x 33) has no hole, trains
#    fewer pixels and agrees with the dense map on >= 99.5% of pixels, its
#    trained pixels bitwise;
#  - raising grid.refine.levels extends the store (old map kept, only new
#    pixels trained), bitwise the map made at the higher level directly;
#  - kill -9 mid-run, then resume: bitwise the uninterrupted map; a drain
#    signal ends the run drained (exit 3), the next run completes it;
#  - bad map settings: file:line:col errors.
. "$(dirname "$0")/lib.sh"
sweep=$DS_SRC/sweeps/examples/tanh_map.yaml
# ax N: the two axes with N log-spaced values each, as --set arguments in AX
ax() { AX=(--set "grid.optimizer.lr_in={start: 1, stop: 100000, num: $1, spacing: log}"
           --set "grid.optimizer.lr_out={start: 1, stop: 10000, num: $1, spacing: log}"); }
mapcmp() { # mapcmp A B [refined]: prints "agree FRACTION trained N holes N same_trained 0|1"
  PYTHONPATH="$DS_SRC/python" "$PY" - "$@" <<'EOF'
import sys, numpy as np, dynsweep
a = dynsweep.open(sys.argv[1]).map(); b = dynsweep.open(sys.argv[2]).map()
c = a["computed"]
same = all(np.array_equal(a[k][c], b[k][c], equal_nan=True)
           for k in ("outcome", "step", "measure", "final_ratio", "peak_ratio"))
print("agree %.6f trained %d holes %d same_trained %d"
      % ((a["outcome"] == b["outcome"]).mean(), c.sum(), (a["outcome"] < 0).sum(), same))
EOF
}
S=(--set train.steps=60 --set map.tile=64)

# ---- plan ----
ax 33
"$DYNSWEEP" plan "$sweep" "${S[@]}" "${AX[@]}" > "$T/plan.txt"
check "plan: 1089 pixels in tiles of 64" grep -q "^map: 1089 pixels .* tiles of 64 points" "$T/plan.txt"
check "plan: rank 0 memory and disk bound" bash -c "grep -q '^memory: rank 0 needs' '$T/plan.txt' && grep -q '^disk: the store takes at most' '$T/plan.txt'"
check "plan: every line after the header (it names the file) fits 80 columns" bash -c "! awk 'NR > 1 && length > 80' '$T/plan.txt' | grep -q ."
# the time: a tile of the sweep's net measured on this host, faster than the
# one-at-a-time model; a net tiles do not cover keeps the model
tile_s=$(sed -n 's/^time: \([0-9.e+-]*\) s per point in tiles.*/\1/p' "$T/plan.txt")
one_s=$(sed -n 's/^  measured here; \([0-9.e+-]*\) s one at a time.*/\1/p' "$T/plan.txt")
check "plan: the time per point measured in tiles ($tile_s s) is below one at a time ($one_s s)" \
  awk -v a="$tile_s" -v b="$one_s" 'BEGIN { exit !(a > 0 && b > 0 && a < b) }'
"$DYNSWEEP" submit "$sweep" -o "$T/sub.h5" --ntasks 4 --dry-run "${S[@]}" "${AX[@]}" > "$T/sub.txt"
px_s=$(sed -n 's/^map: \([0-9.e+-]*\) s a pixel, measured in tiles.*/\1/p' "$T/sub.txt")
core_s=$(sed -n 's/^  for \([0-9.e+-]*\) core-seconds of work.*/\1/p' "$T/sub.txt")
check "submit --dry-run: the map's 1089 pixels at the tile rate ($px_s s a pixel, $core_s core-s)" \
  awk -v p="$px_s" -v c="$core_s" 'BEGIN { exit !(p > 0 && c > 0 && c > 0.98 * 1089 * p && c < 1.02 * 1089 * p) }'
"$DYNSWEEP" plan "$sweep" "${S[@]}" "${AX[@]}" --set model.depth=3 > "$T/plan3.txt"
check "plan: a depth-3 net (no tiles) is priced one at a time" \
  grep -q "^time: [0-9.e+-]* s per point one at a time" "$T/plan3.txt"
ax 4097
"$DYNSWEEP" plan "$sweep" "${S[@]}" "${AX[@]}" > "$T/big.txt" 2>&1 || true
check "plan: a 4097 x 4097 map is not refused (16785409 pixels)" grep -q "^map: 16785409 pixels" "$T/big.txt"
ax 1001
rc=$(code "$DYNSWEEP" plan "$sweep" --set train.steps=60 "${AX[@]}")
check "a 1001 x 1001 grid of rows is refused, naming map: (exit $rc)" \
  bash -c "[ $rc = 2 ] && grep -q 'map sweep (map: true)' '$T/err'"

# ---- dense: 1 rank vs 3 ranks ----
ax 33
drun 1 "$sweep" -o "$T/d1.h5" --quiet "${S[@]}" "${AX[@]}"
ax 33
drun 3 "$sweep" -o "$T/d3.h5" --quiet "${S[@]}" "${AX[@]}"
r=$(mapcmp "$T/d1.h5" "$T/d3.h5")
check "dense 33 x 33: -n 1 and -n 3 bitwise equal ($r)" test "$r" = "agree 1.000000 trained 1089 holes 0 same_trained 1"
"$DYNSWEEP" status "$T/d3.h5" > "$T/st.txt"
check "status: 1089 of 1089 known, both outcomes" \
  bash -c "grep -q '1089 of 1089 known' '$T/st.txt' && ! grep -q ' 0 converged' '$T/st.txt' && ! grep -q ' 0 diverged' '$T/st.txt'"
check "verify: the map store is intact" "$DYNSWEEP" verify "$T/d3.h5"

# ---- refined: 9 x 9, 2 levels = 33 x 33 ----
ax 9
drun 2 "$sweep" -o "$T/r.h5" --quiet "${S[@]}" "${AX[@]}" --set 'grid.refine={levels: 2}'
r=$(mapcmp "$T/r.h5" "$T/d1.h5")
read -r _ agree _ trained _ holes _ same <<<"$r"
check "refined: no hole ($r)" test "$holes" = 0
check "refined: trained pixels bitwise as the dense map's" test "$same" = 1
check "refined: trained $trained of 1089 pixels (< 60%)" test "$trained" -lt 653
check "refined: agrees with the dense map on >= 99.5% of pixels ($agree)" \
  awk -v a="$agree" 'BEGIN { exit !(a >= 0.995) }'
"$DYNSWEEP" status "$T/r.h5" > "$T/st.txt"
inf=$(PYTHONPATH="$DS_SRC/python" "$PY" -c "import sys, dynsweep; m = dynsweep.open(sys.argv[1]).map(); print(int(m['inferred'].sum()))" "$T/r.h5")
check "status of the refined map: all 1089 known, $trained trained and the $inf inferred pixels python fills" \
  bash -c "grep -q '1089 of 1089 known' '$T/st.txt' && grep -q ' $trained trained (.*), $inf inferred (refinement), 0 not known yet' '$T/st.txt'"
ax 9
drun 3 "$sweep" -o "$T/r3.h5" --quiet "${S[@]}" "${AX[@]}" --set 'grid.refine={levels: 2}'
r=$(mapcmp "$T/r3.h5" "$T/r.h5")
check "refined: -n 3 trains the same pixels, bitwise ($r)" test "$r" = "agree 1.000000 trained $trained holes 0 same_trained 1"

# ---- raising the level extends the store: only the new pixels are trained ----
ax 9
drun 3 "$sweep" -o "$T/r.h5" "${S[@]}" "${AX[@]}" --set 'grid.refine={levels: 3}' > "$T/ext.log" 2>&1
drun 3 "$sweep" -o "$T/l3.h5" --quiet "${S[@]}" "${AX[@]}" --set 'grid.refine={levels: 3}'
r=$(mapcmp "$T/r.h5" "$T/l3.h5")
read -r _ _ _ t3 _ _ _ _ <<<"$r"
new=$(sed -n 's/.*finished: \([0-9]*\) pixels trained.*/\1/p' "$T/ext.log")
check "levels 2 -> 3: the old map is kept as r.h5.levels2" test -s "$T/r.h5.levels2"
check "levels 2 -> 3: bitwise the map made at 3 levels directly ($r)" test "$r" = "agree 1.000000 trained $t3 holes 0 same_trained 1"
check "levels 2 -> 3: trained only the $new new pixels (3 levels: $t3, 2 levels: $trained)" \
  test "$new" -eq $((t3 - trained))

# ---- kill -9 mid-run, resume ----
K=(--set train.steps=1000 --set map.tile=4)
ax 17
drun 2 "$sweep" -o "$T/k0.h5" --quiet "${K[@]}" "${AX[@]}"
ax 17
# wait_px STORE: until 40 pixels are published (or the run ended); done_px
wait_px() {
  done_px=0
  for i in $(seq 1 1200); do
    done_px=$("$DYNSWEEP" status "$1" 2>/dev/null | sed -n 's/^map: .*; \([0-9]*\) of 289 known.*/\1/p' || true)
    [ "${done_px:-0}" -ge 40 ] && break
    bg_running || break
    sleep 0.05
  done
}
start_bg "$T/k.log" -n 2 "$DYNSWEEP" run "$sweep" -o "$T/k.h5" --quiet "${K[@]}" "${AX[@]}"
wait_px "$T/k.h5"
kill_session "$SID"
wait_bg
check "killed mid-run with $done_px of 289 pixels published" test "${done_px:-0}" -ge 40 -a "${done_px:-0}" -lt 289
ax 17
drun 2 "$sweep" -o "$T/k.h5" --quiet "${K[@]}" "${AX[@]}"
r=$(mapcmp "$T/k.h5" "$T/k0.h5")
check "resumed after kill -9: bitwise the uninterrupted map ($r)" test "$r" = "agree 1.000000 trained 289 holes 0 same_trained 1"

# ---- drain ----
ax 17
start_bg "$T/dr.log" -n 2 "$DYNSWEEP" run "$sweep" -o "$T/dr.h5" --quiet "${K[@]}" "${AX[@]}"
wait_px "$T/dr.h5"
kill -TERM -- "-$SID" # mpirun's process group (mpirun itself then exits 1)
wait_bg
st=$("$DYNSWEEP" status "$T/dr.h5" --state)
check "drain signal: the store drained (state $st), the ranks exited 3, not on the signal" \
  bash -c "[ '$st' = drained ] && ! grep -q 'exited on signal' '$T/dr.log'"
ax 17
drun 2 "$sweep" -o "$T/dr.h5" --quiet "${K[@]}" "${AX[@]}"
r=$(mapcmp "$T/dr.h5" "$T/k0.h5")
check "drained, resumed: bitwise the uninterrupted map ($r)" test "$r" = "agree 1.000000 trained 289 holes 0 same_trained 1"

# ---- bad map settings ----
bad_set() { # bad_set WHAT PATTERN --set ...
  local what=$1 pat=$2; shift 2
  rc=$(code "$DYNSWEEP" plan "$sweep" "$@")
  check "$what: exit 2 and '$pat' (got $rc: $(head -c 200 "$T/err"))" bash -c "[ $rc = 2 ] && grep -q -- '$pat' '$T/err'"
}
bad_set "refine a list axis" "must be a range of real values" --set map.tile=8 --set 'grid.optimizer.lr_in=[1, 10, 100]' --set 'grid.refine={levels: 2}'
bad_set "refine 17 levels" "grid.refine.levels: expected an integer in 0..16" --set 'grid.refine={levels: 17}'
bad_set "map with replicas" "a map sweep has one point per pixel" --set map.tile=8 --set grid.replicas=2
bad_set "map.tile 0" "map.tile: expected an integer in 1..1048576" --set map.tile=0
bad_set "unknown key under map" "unknown key .tiles. in map (did you mean .tile.?)" --set map.tiles=8
rc=$(code "$DYNSWEEP" run "$sweep" -o "$T/d1.h5" --quiet --set train.steps=60)
check "a row sweep on a map store: exit 2, names both (got $rc)" \
  bash -c "[ $rc = 2 ] && grep -q 'is a map store, but .* is not a map sweep' '$T/err'"
rc=$(code "$DYNSWEEP" ls "$T/d1.h5")
check "ls on a map store: exit 2, says use dynsweep map (got $rc)" bash -c "[ $rc = 2 ] && grep -q 'map store' '$T/err'"
# ---- issue 14: a map store records each rank's node (SLURMD_NODENAME) ----
mpirun --oversubscribe -n 1 -x SLURMD_NODENAME=na "$DYNSWEEP" run "$DS_SRC/sweeps/repro/003_catapult_map.yaml" \
  -o "$T/nodes.h5" -q --set 'grid.width=[16]' --set 'grid.lr={start: 0.5, stop: 6, num: 5}' : \
  -n 2 -x SLURMD_NODENAME=nb "$DYNSWEEP" run "$DS_SRC/sweeps/repro/003_catapult_map.yaml" \
  -o "$T/nodes.h5" -q --set 'grid.width=[16]' --set 'grid.lr={start: 0.5, stop: 6, num: 5}' 2>"$T/nodes.err" || true
rn=$(h5dump -a rank_nodes "$T/nodes.h5" 2>/dev/null | sed -n 's/.*(0): "\(.*\)".*/\1/p')
check "map store: rank_nodes is na,nb,nb ($rn)" test "$rn" = na,nb,nb
report
