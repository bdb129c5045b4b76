#!/usr/bin/env bash
# issue 13: the study's tanh map (sweeps/examples/tanh_map.yaml: tanh(sqrt 2 z),
# mean field, lr_in x lr_out) at 6 x 6 under mpirun -n 2 and -n 3 gives
# bitwise identical trajectories (the SLEEF tanh is the same function on every
# rank), and the window holds both outcomes (the map has a boundary).
. "$(dirname "$0")/lib.sh"
sweep=$DS_SRC/sweeps/examples/tanh_map.yaml
win=(--set 'grid.optimizer.lr_in={start: 10, stop: 100000, num: 6, spacing: log}'
     --set 'grid.optimizer.lr_out={start: 10, stop: 10000, num: 6, spacing: log}'
     --set train.steps=300)
for n in 2 3; do
  drun $n "$sweep" -o "$T/n$n.h5" --quiet "${win[@]}"
  check "run -n $n exits 0" test -s "$T/n$n.h5"
  "$DYNSWEEP" ls "$T/n$n.h5" | awk '{ $(NF-1)=""; $NF=""; print }' > "$T/ls$n.txt"
done
npts=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/' "$T/ls2.txt" | wc -l)
check "36 points listed (got $npts)" test "$npts" -eq 36
conv=$(grep -c ' converged \| catapult ' "$T/ls2.txt" || true)
div=$(grep -c ' diverged ' "$T/ls2.txt" || true)
check "both outcomes in the window ($conv converged/catapult, $div diverged)" \
  test "$conv" -ge 3 -a "$div" -ge 3
check "every point's series n2 vs n3 (bitwise)" same_points "$T/n2.h5" "$T/n3.h5"
check "summary n2 vs n3 (timings excluded)" cmp -s "$T/ls2.txt" "$T/ls3.txt"
ranks=$("$DYNSWEEP" ls "$T/n3.h5" | awk '$NF ~ /^[0-9]+$/ {print $NF}' | sort -u | tr '\n' ' ')
check "-n 3 used ranks 1 and 2 (saw: $ranks)" test "$ranks" = "1 2 "
# the comparison sees a different gain (it can fail)
drun 1 "$sweep" -o "$T/g.h5" --quiet "${win[@]}" --set model.gain=1.5
check "store_diff detects another gain" bash -c "! '$PY' '$DS_SRC/tests/store_diff.py' '$T/n2.h5' '$T/g.h5' >/dev/null 2>&1"
# the portable (non-FMA) SLEEF kernel: same outcomes, losses within 1e-9 relative
DYNSWEEP_TANH=portable drun 1 "$sweep" -o "$T/p.h5" --quiet "${win[@]}"
"$DYNSWEEP" ls "$T/p.h5" | awk '{ $(NF-1)=""; $NF=""; print }' > "$T/lsp.txt"
check "DYNSWEEP_TANH=portable: the same outcome at every point" \
  bash -c "diff <(awk '{print \$1, \$6}' '$T/ls2.txt') <(awk '{print \$1, \$6}' '$T/lsp.txt')"
# the non-FMA family: avx (portable here) and sse2 give the same bits
DYNSWEEP_TANH=sse2 drun 1 "$sweep" -o "$T/s.h5" --quiet "${win[@]}"
check "DYNSWEEP_TANH=portable and =sse2: every point's series bitwise equal" same_points "$T/p.h5" "$T/s.h5"
report
